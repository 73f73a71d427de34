"""Test model: causal scaled-dot-product attention on given queries, keys and values."""

import torch
from torch import nn
from torch.nn import functional


class Model(nn.Module):
    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return functional.scaled_dot_product_attention(q, k, v, is_causal=True)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 2, 8, 4), torch.randn(2, 2, 8, 4), torch.randn(2, 2, 8, 4)]


def get_init_inputs() -> list[int]:
    return []
