"""A 4-D tensor times a matrix over its last dim, by einsum (a: 16 x 256 x 512 x 256 f32,
2 GiB: verified per op, at reduced sizes; tests/python/test_per_op_shrink.py)."""

import torch
from torch import nn

BATCH, ROWS, COLS, INNER, OUT = 16, 256, 512, 256, 768


class Model(nn.Module):
    def forward(self, a: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
        return torch.einsum("bijl,lk->bijk", a, m)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(BATCH, ROWS, COLS, INNER), torch.randn(INNER, OUT)]


def get_init_inputs() -> list[int]:
    return []
