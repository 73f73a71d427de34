"""Cache-groups model: cross-entropy over class logits, mean over the batch (issue 12)."""

import torch
from torch import nn

R, C = 1024, 4096


class Model(nn.Module):
    def forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.cross_entropy(x, target)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(R, C), torch.randint(0, C, (R,))]


def get_init_inputs() -> list:
    return []
