"""Fidelity pattern: a grouped-query decode step that appends its key and value to a cache the
way HF's DynamicCache does (`torch.cat` of the past and the new row), then `repeat_kv` and
`scaled_dot_product_attention` (issue 29): q [1, 8, 1, 32], past k, v [1, 2, 255, 32] f32, the
new k, v [1, 2, 1, 32]. The concatenated cache is a materialised copy in the cache-aware
fidelity (docs/fidelities.md, "Streaming chains"): the laws hold, the bound is above fused."""

import torch
from torch import nn
from torch.nn import functional

B, H, HKV, T, D = 1, 8, 2, 256, 32


def repeat_kv(x: torch.Tensor) -> torch.Tensor:
    n_rep = H // HKV
    return x[:, :, None].expand(B, HKV, n_rep, T, D).reshape(B, HKV * n_rep, T, D)


class Model(nn.Module):
    def forward(self, q, past_k, past_v, k, v):
        keys = torch.cat([past_k, k], dim=2)
        values = torch.cat([past_v, v], dim=2)
        return functional.scaled_dot_product_attention(q, repeat_kv(keys), repeat_kv(values))


def get_inputs() -> list[torch.Tensor]:
    past = (B, HKV, T - 1, D)
    new = (B, HKV, 1, D)
    return [
        torch.randn(B, H, 1, D),
        torch.randn(past),
        torch.randn(past),
        torch.randn(new),
        torch.randn(new),
    ]


def get_init_inputs() -> list:
    return []
