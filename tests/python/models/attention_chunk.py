"""Test model: attention written out by hand: one fused q/k/v projection split with chunk, heads by
view/transpose, scores masked with a causal buffer (masked_fill), softmax, output projection."""

import math

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, d_model: int, n_heads: int, max_len: int) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model, bias=False)
        self.register_buffer("mask", torch.tril(torch.ones(max_len, max_len, dtype=torch.bool)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        dh = d // self.n_heads
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (z.view(b, t, self.n_heads, dh).transpose(1, 2) for z in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(dh)
        scores = scores.masked_fill(~self.mask[:t, :t], float("-inf"))
        a = torch.softmax(scores, dim=-1) @ v
        return self.out(a.transpose(1, 2).reshape(b, t, d))


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 6, 12)]


def get_init_inputs() -> list[int]:
    return [12, 3, 8]
