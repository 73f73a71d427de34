"""Fidelity pattern: hardsigmoid over a [64, 128] f32 tensor. torch.export decomposes it into four
ATen ops (add, clamp, clamp, div); eager runs one kernel."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.hardsigmoid(x)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(64, 128) * 4]


def get_init_inputs() -> list:
    return []
