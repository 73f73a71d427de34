"""A two-layer MLP trained with a squared error against 1 (tests/python/test_training.py): Linear
64 -> 32, ReLU, Linear 32 -> 8, batch 16."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(64, 32)
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


def get_inputs():
    return [torch.randn(16, 64)]


def get_init_inputs():
    return []


def get_loss(output, x):
    return ((output - 1.0) ** 2).sum()
