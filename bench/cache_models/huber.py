"""Cache-groups model: Huber and smooth-L1 losses, mean reduction (issue 12)."""

import torch
from torch import nn

R, C = 1024, 4096


class Model(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.smooth_l1_loss(x, y) + torch.nn.functional.huber_loss(x, y)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(R, C), torch.randn(R, C)]


def get_init_inputs() -> list:
    return []
