"""Test model: a grouped, strided 2-d transposed convolution with output_padding, and a 1-d
transposed convolution without bias."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up2d = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)
        self.up1d = nn.ConvTranspose1d(3, 2, 4, stride=2, bias=False)

    def forward(self, x: torch.Tensor, s: torch.Tensor) -> tuple:
        return self.up2d(x), self.up1d(s)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(1, 4, 5, 5), torch.randn(2, 3, 7)]


def get_init_inputs() -> list[int]:
    return []
