# %% [markdown]
# # 问题二复现
#
# 第二个问题的脚本，按原帖原样在构建网站时运行。它用一个 1-128-128-1 的 ReLU MLP 和 Adam（学习率 1e-4）拟合 [-π, π] 上 10,000 个点的 sin(x)：一次批大小为 512、训练 20 轮，一次用全批量（10,000）训练 400 轮，并画出两者的拟合曲线。全批量只训练 20 轮时，拟合效果差得多；训练 400 轮后，两者看起来差不多。唯一的改动：在原有注释旁附上英文译文，并让 `plt.show()` 直接在页面中出图。
#
# 下面的输出有两点值得注意。只有全批量那次运行有打印：循环只在 `(epoch + 1) % 50 == 0` 时打印，而 20 轮里永远不会满足这个条件。另外，打印出的损失是一轮内各个批次的损失的平均值——对全批量来说，就是这一轮唯一一次更新*之前*的损失。
#
# 本笔记本的运行时间大部分花在全批量那次运行上，而这部分时间又大多不是花在计算上：每轮，`DataLoader` 都要把 10,000 行逐行取出，再重新堆叠起来（见 [DataLoader 的开销](../../loader-overhead/)）。
#
# 批大小为 512 的 20 轮（每轮 19 个 512 的批次和 1 个 272 的批次）恰好是 400 个优化器更新步，与全批量训练 400 轮一样多，这在很大程度上解释了两次的拟合曲线为什么看起来差不多；此外，两个模型的初始权重也不同。[更新步数](../../update-steps/)一页给出了步数的计数，并实测了走完这些步后两者的损失仍相差多少。这里的数字来自[运行环境](../../environment/)页面所列的机器。
#
# 下载本笔记本：[question_steps.py](question_steps.py)——`# %%` 格式的脚本，可以直接用 `python` 运行，也可以借助 jupytext 在 Jupyter 中打开——或者已执行、包含这里所示输出的 [question_steps.ipynb](question_steps.ipynb)。

# %%
import torch
import torch.nn as nn
import numpy as np
import matplotlib.pyplot as plt

# 固定随机种子 (fix the random seeds)
torch.manual_seed(42)
np.random.seed(42)

# 生成数据 (generate the data)
X = torch.linspace(-np.pi, np.pi, 10**4).unsqueeze(1)
y = torch.sin(X)

# 定义模型 (define the model)
class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.fc1 = nn.Linear(1, 128)
        self.fc2 = nn.Linear(128, 128)
        self.fc3 = nn.Linear(128, 1)

    def forward(self, x):
        x = torch.relu(self.fc1(x))
        x = torch.relu(self.fc2(x))
        x = self.fc3(x)
        return x

def train_model(batch_size, epochs):
    model = Net()
    criterion = nn.MSELoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)

    # 关闭洗牌，固定数据顺序 (no shuffling: a fixed data order)
    dataloader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(X, y),
        batch_size=batch_size,
        shuffle=False
    )

    for epoch in range(epochs):
        total_loss = 0.0
        for batch_X, batch_y in dataloader:
            optimizer.zero_grad()
            outputs = model(batch_X)
            loss = criterion(outputs, batch_y)
            loss.backward()
            optimizer.step()
            total_loss += loss.item()
        if (epoch+1) % 50 == 0:
            print(f"Batch Size {batch_size}, Epoch {epoch+1}, Loss: {total_loss/len(dataloader):.6f}")
    return model

# %%
# 训练不同批量的模型 (train one model per batch size)
model_512 = train_model(512, 20)
model_full = train_model(10000, 400)

# %% alt="蓝色是 10,000 个点上的 sin(x)，另有两个模型的拟合曲线：橙色为批大小 512、训练 20 轮，绿色为全批量（10,000）、训练 400 轮，两者都经过了 400 个优化器更新步。"
# 绘图对比 (plot to compare)
plt.figure(figsize=(12, 6))
plt.plot(X.numpy(), y.numpy(), label='True sin(x)', color='blue')
plt.plot(X.numpy(), model_512(X).detach().numpy(), label='Batch Size 512 (20 Epochs)', color='orange', alpha=0.7)
plt.plot(X.numpy(), model_full(X).detach().numpy(), label='Batch Size 10000 (400 Epochs)', color='green', alpha=0.7)
plt.legend()
plt.xlabel('x')
plt.ylabel('y')
plt.title('Sin(x) Approximation with Different Batch Sizes')
plt.show()
