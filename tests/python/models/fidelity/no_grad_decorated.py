"""Fidelity pattern: a two-layer MLP, relu(x @ w1) @ w2, computed by a function decorated with
`@torch.no_grad()` (as kernel benchmark references and inference code are written). torch.export
wraps the function's ops in one higher-order op (wrap_with_set_grad_enabled); each of the three
framework operations is still one operation of its own."""

import torch
from torch import nn


@torch.no_grad()
def mlp(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    return torch.relu(x @ w1) @ w2


class Model(nn.Module):
    def forward(self, x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
        return mlp(x, w1, w2)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(256, 512), torch.randn(512, 1024) / 32, torch.randn(1024, 256) / 32]


def get_init_inputs() -> list:
    return []
