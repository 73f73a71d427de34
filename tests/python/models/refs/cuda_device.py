"""A reference written for a GPU: its inputs are moved with .cuda(), it makes a tensor with
device="cuda" and moves one with .to("cuda"); SOLAR runs it on the CPU (issue 28)."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x):
        bias = torch.ones(4, 8, device="cuda")
        return x.cuda() + bias.to("cuda")


def get_inputs():
    return [torch.randn(4, 8).cuda()]


def get_init_inputs():
    return []
