"""Cache-groups model: group norm (issue 12)."""

import torch
from torch import nn

N, C, H, W = 16, 64, 32, 32


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.GroupNorm(8, C)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(N, C, H, W)]


def get_init_inputs() -> list:
    return []
