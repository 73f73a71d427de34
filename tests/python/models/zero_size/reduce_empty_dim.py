"""Zero-size test model: sum and mean over a dimension of size 0 ([4, 0] to [4]): zeros and
NaNs, as PyTorch gives."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x.sum(dim=1), x.mean(dim=1)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(4, 0)]


def get_init_inputs() -> list[int]:
    return []
