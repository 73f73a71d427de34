"""A boolean sliding-window mask combined with a padding mask, turned into an additive bias over
the heads by filling a zeros tensor of the full [B, H, L, L] shape, as kernel-benchmark
references write it."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, num_heads: int, window: int) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.window = window

    def forward(self, attention_mask: torch.Tensor) -> torch.Tensor:
        batch, length = attention_mask.shape
        rows = torch.arange(length).unsqueeze(1)
        cols = torch.arange(length).unsqueeze(0)
        allowed = (cols <= rows) & (cols > rows - self.window)
        keep = allowed.view(1, 1, length, length) & attention_mask.bool().view(batch, 1, 1, length)
        bias = torch.zeros(batch, self.num_heads, length, length)
        return bias.masked_fill(~keep, float("-inf"))


def get_inputs():
    return [torch.tensor([[0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1]], dtype=torch.int64)]


def get_init_inputs():
    return [4, 3]
