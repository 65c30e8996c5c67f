# %% [markdown]
# # Question 2, reproduced
#
# The second question's script, as posted, run when the site was built. It fits sin(x) on 10,000 points in
# [-π, π] with a 1-128-128-1 ReLU MLP and Adam (lr 1e-4): once with batch 512 for 20 epochs, once with the full
# batch (10,000) for 400 epochs, and plots both fits. With 20 full-batch epochs the full-batch fit was far
# worse; with 400 the two look alike. The only edits: English translations beside the original comments, and
# `plt.show()` draws inline.
#
# Two things to notice in the output below. Only the full-batch run prints: the loop prints when
# `(epoch + 1) % 50 == 0`, which never happens in 20 epochs. And the printed loss is the mean of the per-batch
# losses over an epoch — for the full batch that is the loss *before* the epoch's single step.
#
# Most of this notebook's running time is the full-batch run, and most of that is not arithmetic: every epoch
# the `DataLoader` fetches the 10,000 rows one by one and stacks them again (see
# [DataLoader overhead](../../loader-overhead/)).
#
# 20 epochs of batch 512 (19 batches of 512 and one of 272 each) are exactly 400 optimizer steps, as many as
# 400 full-batch epochs, which is largely why the two fits look alike; the two models also start from different
# weights. [Update-step counts](../../update-steps/) counts the steps and measures how far apart the losses still
# are after them. The numbers here are from the machine named on [Environment](../../environment/).
#
# Download this notebook: [question_steps.py](question_steps.py) — a percent-format script; run it with
# `python`, or open it in Jupyter with jupytext — or [question_steps.ipynb](question_steps.ipynb), executed, with
# the outputs shown here.

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

# %% alt="sin(x) on 10,000 points in blue, with the fits of the two models: batch size 512 for 20 epochs in orange and the full batch of 10,000 for 400 epochs in green, both after 400 optimizer steps."
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
