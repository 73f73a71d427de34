"""A decode step's KV-cache write in place, the caches returned (as vLLM-style references do):
the new token's keys and values go into position `pos` of caches laid out [batch, heads,
positions, head_dim] (`key_cache[:, :, pos] = k`), and the step returns the updated caches."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, key_cache, value_cache, k, v):
        pos = 7
        key_cache[:, :, pos] = k
        value_cache[:, :, pos] = v
        return key_cache, value_cache


def get_inputs():
    return [
        torch.zeros(2, 4, 32, 8),
        torch.zeros(2, 4, 32, 8),
        torch.randn(2, 4, 8),
        torch.randn(2, 4, 8),
    ]


def get_init_inputs():
    return []
