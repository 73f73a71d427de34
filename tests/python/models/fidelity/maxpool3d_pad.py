"""Fidelity pattern: MaxPool3d, kernel 3, stride 2, padding 1, over [1, 2, 8, 8, 8] f32."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.pool = nn.MaxPool3d(kernel_size=3, stride=2, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(1, 2, 8, 8, 8)]


def get_init_inputs() -> list:
    return []
