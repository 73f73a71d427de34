"""A size decided by a value of the data: .item() of the largest count picks how many rows of
x are scaled (5 of 16 with these inputs)."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x, counts):
        k = int(counts.max().item())
        return x[:k] * 2.0


def get_inputs():
    return [torch.randn(16, 8), torch.tensor([3, 5])]


def get_init_inputs():
    return []
