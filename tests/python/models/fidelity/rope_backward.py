"""Fidelity pattern: the backward of a rotary position embedding (issue 29), written out: for
out = q * cos + rotate_half(q) * sin, the gradient of q is g * cos + rotate_half^T(g * sin), with
rotate_half^T(u) = cat(u[..., 16:], -u[..., :16]). g [1, 8, 64, 32] f32, cos and sin [64, 32]."""

import torch
from torch import nn

B, H, T, D = 1, 8, 64, 32


class Model(nn.Module):
    def forward(self, g: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        gs = g * sin
        return g * cos + torch.cat((gs[..., D // 2 :], -gs[..., : D // 2]), dim=-1)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(B, H, T, D), torch.randn(T, D), torch.randn(T, D)]


def get_init_inputs() -> list:
    return []
