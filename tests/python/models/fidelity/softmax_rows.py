"""Fidelity pattern: softmax over the last dim of a [64, 128] f32 tensor (one `_softmax` op that
the lowering writes as several kernels: row max, exponentials, row sum, normalisation)."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(64, 128)]


def get_init_inputs() -> list:
    return []
