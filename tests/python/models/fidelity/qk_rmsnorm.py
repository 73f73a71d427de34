"""Fidelity pattern: a multi-head RMSNorm of queries (issue 29): q [1, 64, 8, 32] f32 normalised
over its head dim (32) with one weight vector [32] shared by every head and token."""

import torch
from torch import nn

B, T, H, D = 1, 64, 8, 32


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(D))

    def forward(self, q: torch.Tensor) -> torch.Tensor:
        rms = torch.rsqrt(q.pow(2).mean(-1, keepdim=True) + 1e-6)
        return q * rms * self.weight


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(B, T, H, D)]


def get_init_inputs() -> list:
    return []
