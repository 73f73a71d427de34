"""Test model: torch.addmm and torch.baddbmm with beta and alpha other than 1, and a broadcast
`self` operand."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(
        self,
        bias: torch.Tensor,
        m1: torch.Tensor,
        m2: torch.Tensor,
        acc: torch.Tensor,
        x: torch.Tensor,
        y: torch.Tensor,
    ) -> torch.Tensor:
        a = torch.addmm(bias, m1, m2, beta=0.5, alpha=2.0)  # bias (6,) broadcast to (4, 6)
        b = torch.baddbmm(acc, x, y, beta=1.5, alpha=0.5)  # (3, 4, 6)
        return a + b


def get_inputs() -> list[torch.Tensor]:
    return [
        torch.randn(6),
        torch.randn(4, 5),
        torch.randn(5, 6),
        torch.randn(3, 4, 6),
        torch.randn(3, 4, 7),
        torch.randn(3, 7, 6),
    ]


def get_init_inputs() -> list[int]:
    return []
