"""Test model: a pointwise convolution, group norm, average pool and adaptive average pool."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, c_in: int, c: int, groups: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(c_in, c, 1, bias=False)
        self.norm = nn.GroupNorm(groups, c)
        self.avg = nn.AvgPool2d(2)
        self.gap = nn.AdaptiveAvgPool2d(1)

    def forward(self, x: torch.Tensor) -> tuple:
        h = self.avg(torch.relu(self.norm(self.conv(x))))
        return h, self.gap(h).flatten(1)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 4, 6, 6)]


def get_init_inputs() -> list[int]:
    return [4, 8, 4]
