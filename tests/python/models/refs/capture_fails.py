"""A program no capture takes: a value of the data decides a branch, and the branch raises on
these inputs (SOLAR must name the line, in one line)."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return torch.nonexistent_op(x)
        return x


def get_inputs():
    return [torch.ones(4)]


def get_init_inputs():
    return []
