"""Test model: an MLP over a flattened input with several activations (tanh-approximated GELU,
SiLU, hardswish, leaky ReLU) and a log-softmax head."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, d_in: int, d_hidden: int, n_classes: int) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Flatten(),
            nn.Linear(d_in, d_hidden),
            nn.GELU(approximate="tanh"),
            nn.Linear(d_hidden, d_hidden),
            nn.SiLU(),
            nn.Hardswish(),
            nn.LeakyReLU(0.1),
            nn.Linear(d_hidden, n_classes),
            nn.LogSoftmax(dim=-1),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(4, 2, 3, 4)]


def get_init_inputs() -> list[int]:
    return [24, 32, 10]
