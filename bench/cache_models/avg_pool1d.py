"""Cache-groups model: 1-D average pooling, kernel 4, stride 2, padding 1 (issue 12)."""

import torch
from torch import nn

N, C, L = 16, 64, 4096


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.pool = nn.AvgPool1d(4, stride=2, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(N, C, L)]


def get_init_inputs() -> list:
    return []
