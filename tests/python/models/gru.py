"""Test model: a one-layer GRU (batch first) followed by a linear head on every step."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, d_in: int, d_hidden: int, d_out: int) -> None:
        super().__init__()
        self.gru = nn.GRU(d_in, d_hidden, batch_first=True)
        self.head = nn.Linear(d_hidden, d_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.gru(x)
        return self.head(out)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 3, 4)]


def get_init_inputs() -> list[int]:
    return [4, 6, 2]
