"""A get_loss that returns no scalar (tests/python/test_training.py)."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


def get_inputs():
    return [torch.randn(4, 8)]


def get_init_inputs():
    return []


def get_loss(output, x):
    return output * 2.0
