"""Test model: torch.matmul with broadcast batch dimensions (a matrix on the right, and a batch
dim of size 1 on the left against a batch of matrices on the right)."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, k: int, n: int) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(k, n))

    def forward(self, a: torch.Tensor, p: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        x = torch.matmul(a, self.w)  # (2, 3, 4, 5) @ (5, 6): the weight broadcast over (2, 3)
        y = torch.matmul(p, c)  # (2, 1, 4, 5) @ (3, 5, 6): both sides broadcast to (2, 3)
        return x + y


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 3, 4, 5), torch.randn(2, 1, 4, 5), torch.randn(3, 5, 6)]


def get_init_inputs() -> list[int]:
    return [5, 6]
