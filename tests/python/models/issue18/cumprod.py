"""Issue 18: an inclusive cumprod along the last dim of a 128 x 4000 fp32 tensor."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumprod(x, dim=1)


def get_inputs() -> list[torch.Tensor]:
    return [torch.rand(128, 4000) + 0.5]


def get_init_inputs() -> list:
    return []
