"""Fidelity pattern: the grouped-query decode step of gqa_decode_sdpa.py written with
`scaled_dot_product_attention(..., enable_gqa=True)` (issue 29): q [1, 8, 1, 32] over keys and
values of 2 heads, k, v [1, 2, 256, 32] f32, each key head shared by 4 query heads without a
repeated copy."""

import torch
from torch import nn
from torch.nn import functional

B, H, HKV, T, D = 1, 8, 2, 256, 32


class Model(nn.Module):
    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return functional.scaled_dot_product_attention(q, k, v, enable_gqa=True)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(B, H, 1, D), torch.randn(B, HKV, T, D), torch.randn(B, HKV, T, D)]


def get_init_inputs() -> list:
    return []
