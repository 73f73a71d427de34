"""GroupNorm(8 groups, 64 channels) over a 112 x 64 x 512 x 512 input: 1,879,048,192 elements,
7.5 GB in float32, captured with FakeTensors and verified per op at reduced size
(tests/python/test_per_op_shrink.py)."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, groups: int, channels: int) -> None:
        super().__init__()
        self.norm = nn.GroupNorm(groups, channels)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(112, 64, 512, 512)]


def get_init_inputs():
    return [8, 64]
