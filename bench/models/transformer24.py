"""Bench model: a 24-layer pre-norm transformer written here: width 1024, 16 heads, causal
scaled-dot-product attention, SwiGLU feed-forward of 2816, over 512 tokens, batch 1."""

import torch
from torch import nn
from torch.nn import functional as F


class Layer(nn.Module):
    def __init__(self, d: int, heads: int, ff: int) -> None:
        super().__init__()
        self.heads = heads
        self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.o = nn.Linear(d, d)
        self.w1, self.w3 = nn.Linear(d, ff, bias=False), nn.Linear(d, ff, bias=False)
        self.w2 = nn.Linear(ff, d, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.n1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, t, d))
        h = self.n2(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class Model(nn.Module):
    def __init__(self, d: int, heads: int, ff: int, layers: int) -> None:
        super().__init__()
        self.layers = nn.Sequential(*[Layer(d, heads, ff) for _ in range(layers)])
        self.norm = nn.LayerNorm(d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.layers(x))


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(1, 512, 1024)]


def get_init_inputs() -> list[int]:
    return [1024, 16, 2816, 24]
