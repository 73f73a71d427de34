"""PyTorch twin of jax_models/twin_mlp.py."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(nn.functional.gelu(self.fc1(x), approximate="tanh"))


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(8, 16)]


def get_init_inputs() -> list:
    return []
