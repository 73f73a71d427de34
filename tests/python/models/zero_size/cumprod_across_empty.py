"""Zero-size test model: a cumulative product along a dimension of 16 across an empty one
([0, 16] along dim 1)."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumprod(x, dim=1)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(0, 16)]


def get_init_inputs() -> list[int]:
    return []
