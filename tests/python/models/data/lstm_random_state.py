"""An LSTM whose initial states are drawn in forward (torch.randn), as benchmark RNNs do."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 16, num_layers=2, batch_first=True)

    def forward(self, x):
        h0 = torch.randn(2, x.shape[0], 16)
        c0 = torch.randn(2, x.shape[0], 16)
        y, _ = self.lstm(x, (h0, c0))
        return y[:, -1, :]


def get_inputs():
    return [torch.randn(2, 5, 8)]


def get_init_inputs():
    return []
