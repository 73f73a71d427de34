"""Test model: a two-layer Elman RNN (ReLU, batch first) with an explicit initial hidden state;
returns the last layer's outputs and the final hidden state of both layers."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, d_in: int, d_hidden: int) -> None:
        super().__init__()
        self.rnn = nn.RNN(d_in, d_hidden, num_layers=2, nonlinearity="relu", batch_first=True)

    def forward(self, x: torch.Tensor, h0: torch.Tensor) -> tuple:
        return self.rnn(x, h0)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 3, 4), torch.randn(2, 2, 6)]  # x (B, T, I), h0 (layers, B, H)


def get_init_inputs() -> list[int]:
    return [4, 6]
