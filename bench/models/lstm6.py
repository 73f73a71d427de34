"""Bench model (issue: large recurrent graphs): a 6-layer LSTM (batch first, batch 10, input 128,
hidden 256) over 512 steps, then a linear head on the last step. About 3,000 LSTM cells."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, d_in: int, d_hidden: int, layers: int, d_out: int) -> None:
        super().__init__()
        self.rnn = nn.LSTM(d_in, d_hidden, num_layers=layers, batch_first=True)
        self.head = nn.Linear(d_hidden, d_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.rnn(x)
        return self.head(out[:, -1, :])


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(10, 512, 128)]


def get_init_inputs() -> list[int]:
    return [128, 256, 6, 10]
