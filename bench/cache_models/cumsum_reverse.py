"""Cache-groups model: reverse cumsum through flip (issue 12)."""

import torch
from torch import nn

R, C = 1024, 512


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x.flip(1), dim=1).flip(1)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(R, C)]


def get_init_inputs() -> list:
    return []
