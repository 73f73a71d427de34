"""Minimal-bytes pattern (issue 29): a Mamba-2-style discretisation whose output is an expanded
view of a smaller tensor: dA = exp(dt * A) over [B, L, H] = [2, 8, 4], returned expanded to
[B, L, H, P, N] = [2, 8, 4, 16, 8] (a stride-0 view, as PyTorch returns it)."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.A = nn.Parameter(-torch.rand(4))

    def forward(self, dt: torch.Tensor) -> torch.Tensor:
        da = torch.exp(dt * self.A)
        return da[..., None, None].expand(2, 8, 4, 16, 8)


def get_inputs() -> list[torch.Tensor]:
    return [torch.rand(2, 8, 4)]


def get_init_inputs() -> list:
    return []
