"""A two-layer LSTM whose initial state is two plain tensor attributes (not buffers), set in
__init__ and reassigned in forward (`self.h0 = self.h0.to(x.device)`, a no-op on the CPU that
returns the same tensor) before being passed to the LSTM. B=4, T=5, I=8, H=16."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.h0 = torch.randn(2, 4, 16)  # (layers, batch, hidden): a plain attribute
        self.c0 = torch.randn(2, 4, 16)
        self.lstm = nn.LSTM(8, 16, num_layers=2, batch_first=True)
        self.fc = nn.Linear(16, 4)

    def forward(self, x):
        self.h0 = self.h0.to(x.device)
        self.c0 = self.c0.to(x.device)
        out, _ = self.lstm(x, (self.h0, self.c0))
        return self.fc(out[:, -1, :])


def get_inputs():
    return [torch.randn(4, 5, 8)]


def get_init_inputs():
    return []
