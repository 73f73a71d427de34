"""A small CNN (tests/python/test_training.py): Conv2d 3 -> 8 (3x3, padding 1) on 2 x 3 x 8 x 8,
ReLU, 2x2 max pool, Linear 128 -> 10; loss: the sum of the outputs."""

import torch
from torch import nn
from torch.nn import functional as nnf


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.fc = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = nnf.max_pool2d(torch.relu(self.conv(x)), 2)
        return self.fc(y.flatten(1))


def get_inputs():
    return [torch.randn(2, 3, 8, 8)]


def get_init_inputs():
    return []
