"""Zero-size test model: softmax and layer_norm over a batch of 0 rows."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.softmax(x, dim=-1), self.norm(x)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(0, 8)]


def get_init_inputs() -> list[int]:
    return [8]
