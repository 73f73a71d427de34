"""Fidelity pattern: torch.max over dim 1 of a [64, 128] f32 tensor: values and indices (one
`aten.max.dim`, lowered as two kernels: the max, then the index of its first occurrence)."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        values, indices = torch.max(x, dim=1)
        return values, indices


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(64, 128)]


def get_init_inputs() -> list:
    return []
