"""Fidelity pattern: batch norm in training mode (issue 29): x [8, 4, 32, 32] f32 (128 KiB,
larger than a 64 KiB on-chip capacity), statistics over (N, H, W) per channel, an affine
weight and bias [4]."""

import torch
from torch import nn

N, C, HW = 8, 4, 32


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(C))
        self.bias = nn.Parameter(torch.randn(C))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.batch_norm(x, None, None, self.weight, self.bias, training=True)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(N, C, HW, HW)]


def get_init_inputs() -> list:
    return []
