"""A projection of the last dimension through torch.einsum with an ellipsis, over x f32[2, 0, 8]
(a middle dimension of 0): the lowering reads x through a view of a base whose row-major
strides are 0 past the empty dimension (the fuzz harness's reproducer: a SIGFPE in the lift)."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(5, 8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.einsum("b...d,hd->b...h", x, self.w)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 0, 8)]


def get_init_inputs() -> list:
    return []
