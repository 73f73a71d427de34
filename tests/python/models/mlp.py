"""Test model: a two-layer MLP, y = fc2(relu(fc1(x)))."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, d_in: int, d_hidden: int, d_out: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.fc2 = nn.Linear(d_hidden, d_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.fc1(x))
        return self.fc2(h)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(4, 16)]


def get_init_inputs() -> list[int]:
    return [16, 32, 8]
