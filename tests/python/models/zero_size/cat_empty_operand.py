"""Zero-size test model: a concatenation with an empty operand ([2, 3] and [0, 3] along 0)."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
        return torch.cat([x, e], dim=0) * 2


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 3), torch.randn(0, 3)]


def get_init_inputs() -> list[int]:
    return []
