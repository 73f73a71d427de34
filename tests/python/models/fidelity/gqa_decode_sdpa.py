"""Fidelity pattern: one grouped-query decode step (issue 29, the Llama-3-70B decode bound): one
query row per head, q [1, 8, 1, 32], over keys and values of 2 heads and 256 positions,
k, v [1, 2, 256, 32] f32, repeated for 4 query heads each with `expand` + `reshape` (HF's
`repeat_kv`) and fed to `scaled_dot_product_attention`.

A decode kernel (FlashDecoding, FlashInfer) reads each key/value row once and keeps the 4 query
heads of its group on chip: the repeat is a re-read of the same bytes, not new DRAM traffic."""

import torch
from torch import nn
from torch.nn import functional

B, H, HKV, T, D = 1, 8, 2, 256, 32


def repeat_kv(x: torch.Tensor) -> torch.Tensor:
    n_rep = H // HKV
    return x[:, :, None].expand(B, HKV, n_rep, T, D).reshape(B, HKV * n_rep, T, D)


class Model(nn.Module):
    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return functional.scaled_dot_product_attention(q, repeat_kv(k), repeat_kv(v))


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(B, H, 1, D), torch.randn(B, HKV, T, D), torch.randn(B, HKV, T, D)]


def get_init_inputs() -> list:
    return []
