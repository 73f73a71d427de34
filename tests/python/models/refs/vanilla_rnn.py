"""The shape of KernelBench level3/33_VanillaRNN (written here, not copied): an RNN cell whose
hidden state is a plain tensor attribute, updated in forward: cat of the input and the hidden
state, the i2h Linear, tanh (the new hidden state), and the h2o Linear."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.hidden = torch.randn((4, hidden_size))
        self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
        self.h2o = nn.Linear(hidden_size, output_size)
        self.tanh = nn.Tanh()

    def forward(self, x):
        self.hidden = self.hidden.to(x.device)
        combined = torch.cat((x, self.hidden), dim=1)
        self.hidden = self.tanh(self.i2h(combined))
        return self.h2o(self.hidden)


def get_inputs():
    return [torch.randn(4, 12)]


def get_init_inputs():
    return [12, 20, 6]
