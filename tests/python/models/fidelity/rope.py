"""Fidelity pattern: rotary position embedding applied to queries (issue 29): q [1, 8, 64, 32]
f32, cos and sin tables [64, 32] broadcast over the batch and the heads;
`q * cos + rotate_half(q) * sin`, rotate_half(q) = cat(-q[..., 16:], q[..., :16])."""

import torch
from torch import nn

B, H, T, D = 1, 8, 64, 32


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    return torch.cat((-x[..., D // 2 :], x[..., : D // 2]), dim=-1)


class Model(nn.Module):
    def forward(self, q: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        return q * cos + rotate_half(q) * sin


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(B, H, T, D), torch.randn(T, D), torch.randn(T, D)]


def get_init_inputs() -> list:
    return []
