"""Fidelity pattern: InstanceNorm2d (no affine) over [2, 4, 16, 16] f32: export writes it as a
view to [1, 8, 16, 16], a batch norm without running statistics, and a view back."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.InstanceNorm2d(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 4, 16, 16)]


def get_init_inputs() -> list:
    return []
