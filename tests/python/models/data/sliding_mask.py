"""A sliding-window causal mask built with bitwise ops (as Mistral's), applied to scores, plus
integer shifts and xor."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, scores, ids):
        t = scores.shape[-1]
        q = torch.arange(t).view(-1, 1)
        k = torch.arange(t).view(1, -1)
        causal = k <= q
        window = (q - k) < 3
        mask = causal & window
        masked = scores.masked_fill(~mask, float("-inf")).softmax(-1)
        mixed = ((ids << 2) ^ (ids >> 1)) | (ids & 3)
        return masked, mixed


def get_inputs():
    return [torch.randn(2, 8, 8), torch.randint(0, 100, (2, 8), dtype=torch.int32)]


def get_init_inputs():
    return []
