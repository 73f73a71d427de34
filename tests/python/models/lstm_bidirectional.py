"""Test model: a two-layer bidirectional LSTM (batch first); returns the outputs and the final
hidden and cell states."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, d_in: int, d_hidden: int) -> None:
        super().__init__()
        self.lstm = nn.LSTM(d_in, d_hidden, num_layers=2, bidirectional=True, batch_first=True)

    def forward(self, x: torch.Tensor) -> tuple:
        out, (h, c) = self.lstm(x)
        return out, h, c


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 3, 4)]


def get_init_inputs() -> list[int]:
    return [4, 5]
