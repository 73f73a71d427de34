"""Test model: torch.einsum with an ellipsis: a batched matmul over leading dims, and a projection
of the last dim that keeps every dim in between."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, d: int, h: int) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(h, d))

    def forward(self, a: torch.Tensor, b: torch.Tensor, x: torch.Tensor) -> tuple:
        prod = torch.einsum("...ij,...jk->...ik", a, b)  # (2, 3, 4, 6)
        proj = torch.einsum("b...d,hd->b...h", x, self.w)  # (2, 3, 4, 5)
        return prod, proj


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 3, 4, 5), torch.randn(2, 3, 5, 6), torch.randn(2, 3, 4, 8)]


def get_init_inputs() -> list[int]:
    return [8, 5]
