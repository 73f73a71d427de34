"""Test model (issue 18): the tanh approximation of GELU over a 2000 x 2000 fp32 tensor
(16 MB in, 16 MB out: it fits in the 48 MB L2 of the L40S and the L4)."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.gelu(x, approximate="tanh")


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2000, 2000)]


def get_init_inputs() -> list:
    return []
