"""A cache row written in place through another name for the cache, then the whole updated
cache read: ``s = cache; s[:, 3] = k; s.sum()`` (cache [4, 64] f32, k [4])."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, cache, k):
        s = cache
        s[:, 3] = k
        return s.sum()


def get_inputs():
    return [torch.randn(4, 64), torch.randn(4)]


def get_init_inputs():
    return []
