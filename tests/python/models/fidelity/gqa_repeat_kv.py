"""Fidelity pattern: attention scores with grouped-query heads (issue 29). The keys of 2 heads
are repeated for 4 query heads each with `expand` + `reshape` (the `repeat_kv` idiom of Llama-style
attention) and fed to a matmul: q [1, 8, 64, 32] @ k_rep^T -> scores [1, 8, 64, 64], f32.

A real kernel reads each key head once and serves the 4 query heads that share it from on-chip
memory: the repeat is a re-read of the same bytes, not new DRAM traffic."""

import torch
from torch import nn

B, H, HKV, T, D = 1, 8, 2, 64, 32


class Model(nn.Module):
    def forward(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        n_rep = H // HKV
        k_rep = k[:, :, None].expand(B, HKV, n_rep, T, D).reshape(B, HKV * n_rep, T, D)
        return q @ k_rep.transpose(-1, -2)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(B, H, T, D), torch.randn(B, HKV, T, D)]


def get_init_inputs() -> list:
    return []
