"""Top-1 dispatch with boolean masks: each expert takes ``x[mask]`` when ``mask.any()``, and its
output is written back with ``out[mask] = ...``. 16 tokens of width 32, 4 linear experts."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, hidden: int, experts: int) -> None:
        super().__init__()
        self.router = nn.Linear(hidden, experts)
        self.experts = nn.ModuleList([nn.Linear(hidden, hidden) for _ in range(experts)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        choice = self.router(x).argmax(-1)
        out = torch.zeros_like(x)
        for i, expert in enumerate(self.experts):
            mask = choice == i
            if mask.any():
                out[mask] = expert(x[mask])
        return out


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(16, 32)]


def get_init_inputs() -> list[int]:
    return [32, 4]
