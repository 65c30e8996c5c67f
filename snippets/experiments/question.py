"""The first question's setup, shared by the seeding and the loader pages: data, model, training loops."""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class SimpleLinearModel(nn.Module):
    """The question's 1-10-1 ReLU MLP, layer for layer."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(1, 10)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(10, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.relu(self.fc1(x)))


def make_data(n_samples: int = 1000, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """``x`` on [-10, 10] and ``y = x² + 10·noise``, drawn as the question draws them (global RNG, seeded)."""
    if n_samples < 1:
        raise ValueError(f"n_samples must be >= 1, got {n_samples}")
    torch.manual_seed(seed)
    x = torch.linspace(-10, 10, n_samples).unsqueeze(1)
    y = x**2 + torch.randn_like(x) * 10
    return x, y


def train_direct(model: nn.Module, x: torch.Tensor, y: torch.Tensor, epochs: int, lr: float = 0.01) -> list[float]:
    """The question's direct loop: one Adam step on the whole tensors per epoch. Returns every epoch's loss."""
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    criterion = nn.MSELoss()
    losses = []
    for _ in range(epochs):
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def train_loader(model: nn.Module, loader, epochs: int, lr: float = 0.01) -> list[float]:
    """The question's loader loop: one Adam step per batch. Returns the last batch's loss of every epoch."""
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    criterion = nn.MSELoss()
    losses = []
    for _ in range(epochs):
        for x_batch, y_batch in loader:
            optimizer.zero_grad()
            loss = criterion(model(x_batch), y_batch)
            loss.backward()
            optimizer.step()
        losses.append(loss.item())
    return losses


def full_batch_loader(x: torch.Tensor, y: torch.Tensor) -> DataLoader:
    dataset = TensorDataset(x, y)
    return DataLoader(dataset, batch_size=len(dataset), shuffle=False)
