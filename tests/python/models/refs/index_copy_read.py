"""Two columns of a state written in place by ``index_copy_``, then the whole updated state
read: ``cache.index_copy_(1, idx, k); cache.sum()`` (cache [4, 64] f32, k [4, 2], idx [3, 7])."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, cache, k, idx):
        cache.index_copy_(1, idx, k)
        return cache.sum()


def get_inputs():
    return [torch.randn(4, 64), torch.randn(4, 2), torch.tensor([3, 7])]


def get_init_inputs():
    return []
