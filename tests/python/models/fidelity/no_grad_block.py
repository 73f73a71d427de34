"""Fidelity pattern: relu(x @ w1) @ w2 with the first layer in a `with torch.no_grad():` block,
which torch.export wraps in one higher-order op (wrap_with_set_grad_enabled); each of the three
framework operations is still one operation of its own."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            h = torch.relu(x @ w1)
        return h @ w2


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(256, 512), torch.randn(512, 1024) / 32, torch.randn(1024, 256) / 32]


def get_init_inputs() -> list:
    return []
