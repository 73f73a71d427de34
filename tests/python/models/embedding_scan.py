"""Test model: an embedding lookup, a linear layer, a running sum over the sequence (cumsum) and
the index of the largest feature per position (argmax)."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, vocab: int, d: int, d_out: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.proj = nn.Linear(d, d_out)

    def forward(self, ids: torch.Tensor) -> tuple:
        h = self.proj(self.embed(ids))
        return torch.cumsum(h, dim=1), torch.argmax(h, dim=-1)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randint(0, 10, (2, 5))]


def get_init_inputs() -> list[int]:
    return [10, 8, 4]
