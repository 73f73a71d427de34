"""Zero-size test model: an embedding, a gather and an index_select, each with 0 indices."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, rows: int, width: int) -> None:
        super().__init__()
        self.emb = nn.Embedding(rows, width)

    def forward(
        self, ids: torch.Tensor, x: torch.Tensor, gidx: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return self.emb(ids), torch.gather(x, 1, gidx), x.index_select(0, ids)


def get_inputs() -> list[torch.Tensor]:
    return [
        torch.zeros(0, dtype=torch.long),
        torch.randn(4, 6),
        torch.zeros(4, 0, dtype=torch.long),
    ]


def get_init_inputs() -> list[int]:
    return [10, 4]
