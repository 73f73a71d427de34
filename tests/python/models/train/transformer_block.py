"""A pre-norm transformer block (tests/python/test_training.py): width 32, 4 heads of 8, causal
attention through nnf.scaled_dot_product_attention, a GELU MLP of width 128; batch 2 x 8 tokens."""

import torch
from torch import nn
from torch.nn import functional as nnf


class Model(nn.Module):
    def __init__(self, d: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        a = nnf.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(nnf.gelu(self.fc1(self.ln2(x))))


def get_inputs():
    return [torch.randn(2, 8, 32)]


def get_init_inputs():
    return []


def get_loss(output, x):
    return 0.5 * (output * output).sum()
