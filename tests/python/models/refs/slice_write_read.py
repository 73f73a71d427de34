"""Rows 2 and 3 of a state written in place through a slice (``cache[2:4] = v``, a
``slice_scatter``), then the whole updated state read (cache [8, 16] f32, v [2, 16])."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, cache, v):
        cache[2:4] = v
        return cache.sum()


def get_inputs():
    return [torch.randn(8, 16), torch.randn(2, 16)]


def get_init_inputs():
    return []
