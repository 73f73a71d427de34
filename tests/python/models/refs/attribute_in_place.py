"""A state kept as a plain tensor attribute and overwritten in place, never rebound:
``self.state.copy_(fc(x))``; the forward returns twice the state."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.state = torch.zeros(4, 16)
        self.fc = nn.Linear(16, 16)

    def forward(self, x):
        self.state.copy_(self.fc(x))
        return self.state * 2


def get_inputs():
    return [torch.randn(4, 16)]


def get_init_inputs():
    return []
