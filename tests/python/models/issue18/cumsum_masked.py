"""Issue 18: a masked cumsum (cumsum of x * mask, mask a bool input) along the last dim of a
128 x 4000 fp32 tensor."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x * mask, dim=1)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(128, 4000), torch.rand(128, 4000) > 0.5]


def get_init_inputs() -> list:
    return []
