"""Zero-size test model: nn.Linear over a batch of 0 rows."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, d_in: int, d_out: int) -> None:
        super().__init__()
        self.fc = nn.Linear(d_in, d_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(0, 16)]


def get_init_inputs() -> list[int]:
    return [16, 8]
