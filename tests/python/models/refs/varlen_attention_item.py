"""Variable-length attention over packed sequences, its bounds read with .item(): cu_seqlens
[0, 3, 8] holds two sequences of 3 and 5 tokens in q, k and v ([8, 16]); each attends over its
own tokens."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, q, k, v, cu_seqlens):
        bounds = [cu_seqlens[b].item() for b in range(cu_seqlens.shape[0])]
        return torch.cat(
            [
                torch.softmax(q[s:e] @ k[s:e].transpose(0, 1), dim=-1) @ v[s:e]
                for s, e in zip(bounds, bounds[1:], strict=False)
            ]
        )


def get_inputs():
    q, k, v = torch.randn(3, 8, 16)
    return [q, k, v, torch.tensor([0, 3, 8])]


def get_init_inputs():
    return []
