"""Plain tensor attributes read directly by the forward's arithmetic, one of them on a submodule
(`self.head.scale`): y = (x W^T + b) * scale + offset. B=4, I=12, O=8."""

import torch
from torch import nn


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(12, 8)
        self.scale = torch.rand(8) + 0.5  # a plain attribute of a submodule

    def forward(self, x):
        return self.lin(x) * self.scale


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = Head()
        self.offset = torch.randn(4, 8)
        self.unused = torch.zeros(3, dtype=torch.complex64)  # never read: not captured

    def forward(self, x):
        return self.head(x) + self.offset


def get_inputs():
    return [torch.randn(4, 12)]


def get_init_inputs():
    return []
