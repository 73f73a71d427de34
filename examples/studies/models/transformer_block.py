"""A GPT-style decoder block at a size people train and serve (examples/studies/): batch 8,
1,024 tokens, width 1,024, 16 heads of 64, a 4x GELU MLP, causal attention, bf16, inference."""

import torch
from torch import nn
from torch.nn import functional

BATCH, TOKENS, WIDTH, HEADS = 8, 1024, 1024, 16
DTYPE = torch.bfloat16


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(WIDTH, dtype=DTYPE)
        self.qkv = nn.Linear(WIDTH, 3 * WIDTH, dtype=DTYPE)
        self.out = nn.Linear(WIDTH, WIDTH, dtype=DTYPE)
        self.norm2 = nn.LayerNorm(WIDTH, dtype=DTYPE)
        self.up = nn.Linear(WIDTH, 4 * WIDTH, dtype=DTYPE)
        self.down = nn.Linear(4 * WIDTH, WIDTH, dtype=DTYPE)
        self.eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(WIDTH, dim=-1)
        q, k, v = (z.reshape(b, t, HEADS, -1).transpose(1, 2) for z in (q, k, v))
        a = functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.out(a.transpose(1, 2).reshape(b, t, WIDTH))
        return x + self.down(functional.gelu(self.up(self.norm2(x))))


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(BATCH, TOKENS, WIDTH, dtype=DTYPE)]


def get_init_inputs() -> list:
    return []
