"""One row broadcast into two rows of a state written in place by ``index_put_``
(``cache[idx] = v``), then the whole updated state read: ``cache[idx] = v; cache.sum()``
(cache [8, 16] f32, v [16], idx [1, 5])."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, cache, v, idx):
        cache[idx] = v
        return cache.sum()


def get_inputs():
    return [torch.randn(8, 16), torch.randn(16), torch.tensor([1, 5])]


def get_init_inputs():
    return []
