"""Test model: a one-layer LSTM (batch first) over a short sequence; returns every hidden state."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, d_in: int, d_hidden: int) -> None:
        super().__init__()
        self.lstm = nn.LSTM(d_in, d_hidden, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(x)
        return out


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 3, 4)]


def get_init_inputs() -> list[int]:
    return [4, 8]
