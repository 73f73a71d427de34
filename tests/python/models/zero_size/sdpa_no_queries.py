"""Zero-size test model: scaled dot-product attention with 0 queries."""

import torch
from torch import nn
from torch.nn import functional


class Model(nn.Module):
    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return functional.scaled_dot_product_attention(q, k, v)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(1, 2, 0, 8), torch.randn(1, 2, 5, 8), torch.randn(1, 2, 5, 8)]


def get_init_inputs() -> list[int]:
    return []
