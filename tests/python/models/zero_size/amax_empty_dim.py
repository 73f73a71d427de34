"""Zero-size test model: amax over a dimension of size 0, which PyTorch itself refuses."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.amax(dim=1)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(4, 0)]


def get_init_inputs() -> list[int]:
    return []
