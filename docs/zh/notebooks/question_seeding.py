# %% [markdown]
# # 问题一复现
#
# 第一个问题的脚本，除了让 `plt.show()` 直接在页面中出图之外，没有任何改动。它在同一份数据上把同一个 1-10-1 MLP 训练两次——一次直接在张量上训练，一次经过全批量的 `DataLoader`——然后问：为什么两次的损失和耗时都不一样？本笔记本在构建网站时运行，下面的数字来自那台机器（见[运行环境](../../environment/)）。
#
# 实测得到的答案：[随机种子的设置时机](../../seeding-order/)解释了损失为什么不同，[DataLoader 的开销](../../loader-overhead/)解释了耗时为什么不同。下面打印的时间，是两个循环各跑一次 2000 轮、先后进行、用初始权重不同的两个模型得到的；其他页面上的比值则来自同样的循环，从相同的权重出发，逐组交替计时，并给出 95% 区间。两者对不上是正常的：它们是不同的运行，而机器也不是时时都同样繁忙。另外，打印的两个时间所涵盖的代码也不一样：直接训练的循环在 2000 轮里每轮都新建一个 `nn.MSELoss()`，`train_model` 只建一个；DataLoader 那次的计时还包含最后的 `loss.item()` 和那行 `print`（在 `train_model` 里面），直接训练那次则不包含——在 CPU 上这只是读一个标量。换到 GPU 上，直接训练的计时可能在最后几个排队的核函数执行完之前就已结束，因为那个循环里没有任何操作等待它们，而 `train_model` 里的 `item()` 会等。其他页面上的比值用同一个单轮训练函数为每种加载器计时，每计时一轮都同步一次设备。
#
# 下载本笔记本：[question_seeding.py](question_seeding.py)——`# %%` 格式的脚本，可以直接用 `python` 运行，也可以借助 jupytext 在 Jupyter 中打开——或者已执行、包含这里所示输出的 [question_seeding.ipynb](question_seeding.ipynb)。

# %% alt="左右两个并排的子图，标题分别为 Direct Training 和 Training with DataLoader：每个子图都画出问题数据中 1,000 个带噪声的点，并用红色画出训练后模型的预测。两次运行要靠上面打印的损失才能区分。"
import torch
from torch.utils.data import DataLoader, TensorDataset
import torch.nn as nn
import torch.optim as optim
import numpy as np
import matplotlib.pyplot as plt
import time

# Set the random seed for reproducibility
torch.manual_seed(0)

# Generate synthetic data
x = torch.linspace(-10, 10, 1000).unsqueeze(1)  # x data tensor
y = x**2 + torch.randn_like(x) * 10  # y data with noise

class SimpleLinearModel(nn.Module):
    def __init__(self):
        super(SimpleLinearModel, self).__init__()
        self.fc1 = nn.Linear(1, 10)  # First linear layer
        self.relu = nn.ReLU()        # ReLU activation
        self.fc2 = nn.Linear(10, 1)  # Second linear layer to map back to output

    def forward(self, x):
        x = self.relu(self.fc1(x))
        x = self.fc2(x)
        return x

def train_model(model, loader, optimizer, epochs=2000):
    criterion = nn.MSELoss()
    for epoch in range(epochs):
        for x_batch, y_batch in loader:
            optimizer.zero_grad()
            output = model(x_batch)
            loss = criterion(output, y_batch)
            loss.backward()
            optimizer.step()
    print("Loader: Loss is {}".format(loss.item()))
    return model

# Model instances
model_direct = SimpleLinearModel()
model_loader = SimpleLinearModel()

# Optimizers
optimizer_direct = optim.Adam(model_direct.parameters(), lr=0.01)
optimizer_loader = optim.Adam(model_loader.parameters(), lr=0.01)

# DataLoader
dataset = TensorDataset(x, y)
full_batch_loader = DataLoader(dataset, batch_size=len(dataset), shuffle=False)

# Train directly using the full dataset
model_direct.train()
time_start = time.time()
for epoch in range(2000):
    optimizer_direct.zero_grad()
    outputs = model_direct(x)
    loss = nn.MSELoss()(outputs, y)
    loss.backward()
    optimizer_direct.step()

print("Direct: Time is {}".format(time.time() - time_start))
print("Direct: loss is {}".format(loss.item()))

# Train using the DataLoader
model_loader.train()
time_start = time.time()
model_loader = train_model(model_loader, full_batch_loader, optimizer_loader)
print("Loader: Time is {}".format(time.time() - time_start))

# Evaluate and compare
model_direct.eval()
model_loader.eval()
with torch.no_grad():
    direct_preds = model_direct(x)
    loader_preds = model_loader(x)

plt.figure(figsize=(10, 5))
plt.subplot(1, 2, 1)
plt.scatter(x.numpy(), y.numpy(), s=1)
plt.plot(x.numpy(), direct_preds.numpy(), color='r')
plt.title('Direct Training')
plt.subplot(1, 2, 2)
plt.scatter(x.numpy(), y.numpy(), s=1)
plt.plot(x.numpy(), loader_preds.numpy(), color='r')
plt.title('Training with DataLoader')
plt.show()
