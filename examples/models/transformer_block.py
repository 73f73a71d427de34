"""A pre-norm transformer block: causal multi-head self-attention and a GELU MLP.

Benchmark-file convention (docs/capture.md): ``Model(*get_init_inputs())`` is called on
``get_inputs()``. Try it with ``solar analyze examples/models/transformer_block.py``.
"""

import torch
from torch import nn
from torch.nn import functional

BATCH, SEQ, WIDTH, HEADS = 2, 16, 64, 4


class Attention(nn.Module):
    """Causal self-attention with separate query, key and value projections."""

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(width, width, bias=False)
        self.key = nn.Linear(width, width, bias=False)
        self.value = nn.Linear(width, width, bias=False)
        self.out = nn.Linear(width, width)

    def split_heads(self, z: torch.Tensor) -> torch.Tensor:
        # (batch, seq, width) -> (batch, heads, seq, width / heads)
        return z.unflatten(-1, (self.heads, -1)).permute(0, 2, 1, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = (self.split_heads(p(x)) for p in (self.query, self.key, self.value))
        mixed = functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(mixed.permute(0, 2, 1, 3).flatten(2))


class Model(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.attention_norm = nn.LayerNorm(width)
        self.attention = Attention(width, heads)
        self.mlp_norm = nn.LayerNorm(width)
        self.mlp = nn.Sequential(
            nn.Linear(width, 4 * width), nn.GELU(approximate="tanh"), nn.Linear(4 * width, width)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.attention_norm(x))
        return x + self.mlp(self.mlp_norm(x))


def get_inputs():
    return [torch.randn(BATCH, SEQ, WIDTH)]


def get_init_inputs():
    return [WIDTH, HEADS]
