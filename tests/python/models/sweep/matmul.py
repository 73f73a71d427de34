"""Sweep test model (tests/python/test_sweep.py): a matrix product, (N x 24) @ (24 x 16)."""

import torch
from torch import nn

N = 12


class Model(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(N, 24), torch.randn(24, 16)]


def get_init_inputs() -> list[int]:
    return []
