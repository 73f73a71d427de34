"""Issue 18: a reverse cumsum (flip, cumsum, flip) along the last dim of a 128 x 4000 fp32
tensor."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x.flip(1), dim=1).flip(1)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(128, 4000)]


def get_init_inputs() -> list:
    return []
