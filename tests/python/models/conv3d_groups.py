"""Test model: a grouped 3-d convolution then a depthwise, dilated 3-d convolution."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, c_in: int, c_out: int) -> None:
        super().__init__()
        self.grouped = nn.Conv3d(c_in, c_out, kernel_size=3, padding=1, groups=2)
        self.depthwise = nn.Conv3d(
            c_out, c_out, kernel_size=3, padding=(1, 2, 2), dilation=(1, 2, 2), groups=c_out,
            bias=False,
        )  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.depthwise(torch.relu(self.grouped(x)))


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(1, 4, 4, 6, 6)]


def get_init_inputs() -> list[int]:
    return [4, 8]
