"""Zero-size test model: a cumulative sum along a dimension of size 0 (issue 44's reproducer)."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x, dim=1)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(16, 0)]


def get_init_inputs() -> list[int]:
    return []
