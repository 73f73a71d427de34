"""A GRU whose initial state is a plain tensor attribute moved to the input's device in forward
and kept there (`self.h0 = self.h0.to(x.device)`). B=3, T=4, I=6, H=10."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(6, 10, batch_first=True)
        self.h0 = torch.randn(1, 3, 10)

    def forward(self, x):
        self.h0 = self.h0.to(x.device)
        out, h = self.gru(x, self.h0)
        return out, h


def get_inputs():
    return [torch.randn(3, 4, 6)]


def get_init_inputs():
    return []
