"""Fidelity pattern: an embedding's backward (issue 29): the gradient of the table [512, 64] f32
is zero except for the rows the 256 token ids [256] gathered, which accumulate the rows of
dy [256, 64]: zeros, then index_add of dy at the ids."""

import torch
from torch import nn

V, N, D = 512, 256, 64


class Model(nn.Module):
    def forward(self, ids: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
        return torch.zeros(V, D).index_add(0, ids, dy)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randint(0, V, (N,)), torch.randn(N, D)]


def get_init_inputs() -> list:
    return []
