"""A recurrent cell that keeps its state in a plain tensor attribute and reassigns it to a
computed tensor in forward: state' = tanh(W [x, state] + b); the output is a projection of the
new state, so the new state is a second graph output (the model's new attribute value).
B=2, I=8, H=16, O=4."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.state = torch.randn(2, 16)
        self.cell = nn.Linear(8 + 16, 16)
        self.out = nn.Linear(16, 4)

    def forward(self, x):
        self.state = torch.tanh(self.cell(torch.cat([x, self.state], dim=1)))
        return self.out(self.state)


def get_inputs():
    return [torch.randn(2, 8)]


def get_init_inputs():
    return []
