"""Dropout in training mode feeding a softmax (the module is left in training mode)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(32, 16)
        self.drop = nn.Dropout(0.25)

    def forward(self, x):
        return torch.softmax(self.drop(self.lin(x)), dim=-1)


def get_inputs():
    return [torch.randn(4, 32)]


def get_init_inputs():
    return []
