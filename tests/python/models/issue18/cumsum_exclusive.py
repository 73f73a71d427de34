"""Issue 18: an exclusive cumsum (a zero column prepended, the last dropped, then cumsum) along
the last dim of a 128 x 4000 fp32 tensor."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shifted = torch.cat((torch.zeros_like(x[:, :1]), x[:, :-1]), dim=1)
        return torch.cumsum(shifted, dim=1)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(128, 4000)]


def get_init_inputs() -> list:
    return []
