"""Test model (issue 18): MaxPool2d over a 16 x 32 x 128 x 128 fp32 tensor, kernel 2, stride 2,
padding 1. Its working set (33.6 MB in, 8.7 MB out) fits in the L40S's 48 MB L2: a benchmark
loop that does not flush serves it from L2."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size=2, stride=2, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(16, 32, 128, 128)]


def get_init_inputs() -> list:
    return []
