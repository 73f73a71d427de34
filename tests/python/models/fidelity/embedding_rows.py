"""Minimal-bytes pattern (issue 29): an embedding lookup reads only the rows its 16 indices
name, not the [1000, 64] table."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(1000, 64)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.emb(ids)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randint(0, 1000, (2, 8))]


def get_init_inputs() -> list:
    return []
