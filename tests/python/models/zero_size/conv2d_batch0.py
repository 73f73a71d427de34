"""Zero-size test model: a 3x3 convolution over a batch of 0 images."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, c_in: int, c_out: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(0, 3, 8, 8)]


def get_init_inputs() -> list[int]:
    return [3, 4]
