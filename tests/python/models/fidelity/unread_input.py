"""Minimal-bytes pattern (issue 29): an input the program never reads costs nothing (`mask` is
passed and ignored, as reference programs often do)."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return x * 2.0


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(64, 128), torch.randn(64, 128)]


def get_init_inputs() -> list:
    return []
