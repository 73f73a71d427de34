"""One decode step of multi-head latent attention (DeepSeek style), written the naive way, for
SOLAR's algorithm study (examples/studies/algorithm/README.md): the keys and values are
up-projected from the cached latent c_kv (rank 512) for every cached token, then
softmax(q k^T / sqrt(D)) v. Batch 4, 16 heads of 128, 4,096 cached tokens, one new token, bf16."""

import math

import torch
from torch import nn

B, H, D, R, T, S = 4, 16, 128, 512, 4096, 1  # batch, heads, head size, rank, cached, new
DTYPE = torch.bfloat16


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w_uk = nn.Parameter(torch.randn(H, R, D, dtype=DTYPE) / math.sqrt(R))
        self.w_uv = nn.Parameter(torch.randn(H, R, D, dtype=DTYPE) / math.sqrt(R))

    def forward(self, q: torch.Tensor, c_kv: torch.Tensor) -> torch.Tensor:
        k = torch.einsum("btr,hrd->bhtd", c_kv, self.w_uk)  # [B, H, T, D] from the latent
        v = torch.einsum("btr,hrd->bhtd", c_kv, self.w_uv)
        p = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(D), dim=-1)
        return p @ v  # [B, H, S, D]


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(B, H, S, D, dtype=DTYPE), torch.randn(B, T, R, dtype=DTYPE)]


def get_init_inputs() -> list:
    return []
