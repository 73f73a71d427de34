"""Zero-size test model: an elementwise chain over a batch of 0 rows, y = relu(x * 2 + b)."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.b = nn.Parameter(torch.randn(width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x * 2 + self.b)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(0, 8)]


def get_init_inputs() -> list[int]:
    return [8]
