# %% [markdown]
# # Question 1, reproduced
#
# The first question's script, unchanged except that `plt.show()` draws inline. It trains the same
# 1-10-1 MLP twice on the same data — once on the tensors directly, once through a full-batch
# `DataLoader` — and asks why the losses and the times differ. This notebook ran when the site was built;
# the numbers below are from that machine (see [Environment](../../environment/)).
#
# The answers, measured: [Seeding order](../../seeding-order/) explains the different losses,
# [DataLoader overhead](../../loader-overhead/) the different times. The times printed below are one run of
# each loop's 2000 epochs, one after the other, with two models whose initial weights differ; the ratios on the other pages come
# from the same loops timed in alternation, round by round, from equal weights, with a 95% interval. Expect the
# two to differ: they are different runs on a machine that is not always equally busy. The two printed times
# also clock different code: the direct loop builds a new `nn.MSELoss()` in each of its 2000 epochs, where
# `train_model` builds one; and the loader's time includes the final `loss.item()` and its `print` (inside
# `train_model`), the direct loop's does not — on the CPU one scalar read. Moved to a GPU, the direct time could
# stop before the last queued kernels had finished, since nothing in that loop waits for them, while `item()`
# inside `train_model` does. The ratios on the other pages time one shared epoch function for every loader,
# synchronising the device after every timed epoch.
#
# Download this notebook: [question_seeding.py](question_seeding.py) — a percent-format script; run it with
# `python`, or open it in Jupyter with jupytext — or [question_seeding.ipynb](question_seeding.ipynb), executed,
# with the outputs shown here.

# %% alt="Two side-by-side panels, Direct Training and Training with DataLoader: each plots the 1,000 noisy points of the question's data and, in red, the trained model's predictions. The losses printed above tell the two runs apart."
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
