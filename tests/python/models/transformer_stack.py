"""Test model: a stack of pre-norm decoder blocks: separate q/k/v projections without bias,
causal scaled-dot-product attention, an output projection, and a SwiGLU feed-forward
(silu(x W1) * (x W3)) W2; a final layer norm. The test builds 2 small layers;
bench/frontend_bench.py builds 24 layers of width 1024 and a 2-billion-parameter one."""

import torch
from torch import nn
from torch.nn import functional


class Block(nn.Module):
    def __init__(self, d_model: int, n_heads: int, d_ff: int) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.ln1 = nn.LayerNorm(d_model)
        self.q = nn.Linear(d_model, d_model, bias=False)
        self.k = nn.Linear(d_model, d_model, bias=False)
        self.v = nn.Linear(d_model, d_model, bias=False)
        self.o = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        h = self.ln1(x)
        q, k, v = (p(h).view(b, t, self.n_heads, -1).transpose(1, 2) for p in (self.q, self.k,
                                                                               self.v))  # fmt: skip
        a = functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, t, d))
        h = self.ln2(x)
        return x + self.w2(functional.silu(self.w1(h)) * self.w3(h))


class Model(nn.Module):
    def __init__(self, d_model: int, n_heads: int, d_ff: int, n_layers: int) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(Block(d_model, n_heads, d_ff) for _ in range(n_layers))
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return self.norm(x)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 8, 16)]


def get_init_inputs() -> list[int]:
    return [16, 4, 32, 2]
