"""Zero-size test model: a matmul whose contracted dimension is 0, [4, 0] @ [0, 5]: a [4, 5]
tensor of zeros."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(4, 0), torch.randn(0, 5)]


def get_init_inputs() -> list[int]:
    return []
