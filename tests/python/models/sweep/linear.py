"""Sweep test model (tests/python/test_sweep.py): one nn.Linear, N tokens of width 32."""

import torch
from torch import nn

N = 8  # tokens: solar analyze --size N=...


class Model(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.fc = nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(N, 32)]


def get_init_inputs() -> list[int]:
    return [32]
