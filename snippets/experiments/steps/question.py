"""The second question's setup: a 1-128-128-1 ReLU MLP fitting sin(x) on 10 000 points in [-π, π] with Adam
(lr 1e-4), batch 512 for 20 epochs against the full batch (10 000) for 20 and for 400 epochs, after one
``torch.manual_seed(42)``.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

N_SAMPLES = 10_000
LR = 1e-4
SEED = 42  # the question's seed


class Net(nn.Module):
    """The question's 1-128-128-1 ReLU MLP, layer for layer (same construction order, so same weights)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(1, 128)
        self.fc2 = nn.Linear(128, 128)
        self.fc3 = nn.Linear(128, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.fc1(x))
        x = torch.relu(self.fc2(x))
        return self.fc3(x)


def make_data(n_samples: int = N_SAMPLES, device: torch.device | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``x`` evenly spaced on [-π, π] (sorted, as the question builds it) and ``y = sin(x)``; no randomness."""
    if n_samples < 1:
        raise ValueError(f"n_samples must be >= 1, got {n_samples}")
    x = torch.linspace(-math.pi, math.pi, n_samples).unsqueeze(1)
    return x.to(device or "cpu"), torch.sin(x).to(device or "cpu")


def initial_states(seed: int = SEED, epochs_between: int = 20, batch_size: int = 512,
                   n_samples: int = N_SAMPLES) -> tuple[dict, dict]:
    """The question's two starting points: ``Net()`` after ``manual_seed(seed)``, and the second ``Net()``.

    Between the two constructions the question trains the first model; of that, only ``iter(dataloader)``
    draws from the global stream (one int64 per epoch, even unshuffled), so those draws are replayed here
    without the training. The global RNG state is restored afterwards.
    """
    dataset = TensorDataset(torch.zeros(n_samples, 1))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        first = Net().state_dict()
        loader = DataLoader(dataset, batch_size=batch_size, shuffle=False)
        for _ in range(epochs_between):
            iter(loader)
        second = Net().state_dict()
    return first, second
