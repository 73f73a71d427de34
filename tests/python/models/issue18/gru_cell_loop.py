"""Issue 18: a hand-written GRU (nn.GRUCell over the time steps) whose hidden state is updated in
place: ``h.add_(...)`` with the cell's step, h = h + (cell(x_t, h) - h)."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cell = nn.GRUCell(input_size=16, hidden_size=32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.zeros(x.shape[0], 32)
        for t in range(x.shape[1]):
            step = self.cell(x[:, t], h)
            h = h.clone()
            h.add_(step - h)
        return h


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(4, 6, 16)]


def get_init_inputs() -> list:
    return []
