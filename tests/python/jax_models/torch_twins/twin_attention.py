"""PyTorch twin of jax_models/twin_attention.py."""

import torch
from torch import nn
from torch.nn import functional

HEADS = 2


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.qkv = nn.Linear(16, 48)
        self.proj = nn.Linear(16, 16)
        self.up = nn.Linear(16, 64)
        self.down = nn.Linear(64, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (z.view(b, t, HEADS, d // HEADS).transpose(1, 2) for z in (q, k, v))
        a = functional.scaled_dot_product_attention(q, k, v)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.down(functional.gelu(self.up(x)))


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 8, 16)]


def get_init_inputs() -> list:
    return []
