"""Test model: torch.nn.functional.conv2d on parameters: a strided grouped convolution with a bias,
then a pointwise convolution without one."""

import torch
from torch import nn
from torch.nn import functional


class Model(nn.Module):
    def __init__(self, c_in: int, c_mid: int, c_out: int, groups: int) -> None:
        super().__init__()
        self.groups = groups
        self.w1 = nn.Parameter(torch.randn(c_mid, c_in // groups, 3, 3) * 0.2)
        self.b1 = nn.Parameter(torch.randn(c_mid))
        self.w2 = nn.Parameter(torch.randn(c_out, c_mid, 1, 1) * 0.2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = functional.conv2d(x, self.w1, self.b1, stride=2, padding=1, groups=self.groups)
        return functional.conv2d(torch.tanh(h), self.w2)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 4, 9, 9)]


def get_init_inputs() -> list[int]:
    return [4, 6, 4, 2]
