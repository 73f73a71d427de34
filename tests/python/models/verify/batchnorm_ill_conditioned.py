"""A training-mode BatchNorm over a batch of 2 whose per-channel values sit near 1000 and differ by
about 0.01: the batch variance (about 2.5e-5) is tiny next to the mean, so float32 cancellation
dominates PyTorch's float32 result (tests/python/test_verify_conditioning.py)."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.bn = nn.BatchNorm1d(channels)

    def forward(self, x):
        return self.bn(x)


def get_inputs():
    return [1000.0 + 0.01 * torch.randn(2, 8)]


def get_init_inputs():
    return [8]
