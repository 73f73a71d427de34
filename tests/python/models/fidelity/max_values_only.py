"""Minimal-bytes pattern (issue 29): torch.max over dim 1 of a [64, 128] f32 tensor, of which
only the values are used: the indices are computed and discarded (dead code)."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.max(x, dim=1).values


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(64, 128)]


def get_init_inputs() -> list:
    return []
