"""Test model: nn.Bilinear, y[n, o] = x1[n, :] A[o] x2[n, :] + b[o]."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, d1: int, d2: int, d_out: int) -> None:
        super().__init__()
        self.bilinear = nn.Bilinear(d1, d2, d_out)

    def forward(self, x1: torch.Tensor, x2: torch.Tensor) -> torch.Tensor:
        return self.bilinear(x1, x2)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(6, 5), torch.randn(6, 4)]


def get_init_inputs() -> list[int]:
    return [5, 4, 3]
