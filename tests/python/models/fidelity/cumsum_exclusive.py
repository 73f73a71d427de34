"""Fidelity pattern: an exclusive prefix sum over rows (issue 29): x [16, 64] f32, each row 256 B;
out[i, 0] = 0, out[i, j] = x[i, 0] + ... + x[i, j - 1], written as the concat of a zero column,
a cumsum, and a slice that drops the last column."""

import torch
from torch import nn

R, L = 16, 64


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        zero = torch.zeros_like(x[:, :1])
        return torch.cumsum(torch.cat((zero, x), dim=1), dim=1)[:, :-1]


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(R, L)]


def get_init_inputs() -> list:
    return []
