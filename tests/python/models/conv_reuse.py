"""Test model: one convolution module called twice, and modules declared in another order than
they are called (declared proj, shared, stem; called stem, shared, shared, proj)."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, c_in: int, c: int, c_out: int) -> None:
        super().__init__()
        self.proj = nn.Conv2d(c, c_out, kernel_size=1)
        self.shared = nn.Conv2d(c, c, kernel_size=3, padding=1)
        self.stem = nn.Conv2d(c_in, c, kernel_size=3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.stem(x))
        x = torch.relu(self.shared(x))
        x = torch.relu(self.shared(x))
        return self.proj(x)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(1, 3, 8, 8)]


def get_init_inputs() -> list[int]:
    return [3, 8, 4]
