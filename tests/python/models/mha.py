"""Test model: nn.MultiheadAttention (batch first) as self-attention; returns the output and the
attention weights averaged over heads."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)

    def forward(self, x: torch.Tensor) -> tuple:
        return self.attn(x, x, x)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 8, 16)]


def get_init_inputs() -> list[int]:
    return [16, 2]
