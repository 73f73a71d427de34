"""topk, sort (descending), argsort and histc of one tensor x [4, 8]."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        values, indices = torch.topk(x, 3, dim=-1)
        ordered, order = torch.sort(x, dim=0, descending=True)
        ranks = torch.argsort(x, dim=-1)
        counts = torch.histc(x, bins=5, min=-1.0, max=1.0)
        return values, indices, ordered, order, ranks, counts


def get_inputs():
    return [torch.randn(4, 8)]


def get_init_inputs():
    return []
