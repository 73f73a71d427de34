"""Sweep test model (tests/python/test_sweep.py): an elementwise relu(a + b) of N x 64."""

import torch
from torch import nn

N = 16


class Model(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.relu(a + b)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(N, 64), torch.randn(N, 64)]


def get_init_inputs() -> list[int]:
    return []
