"""Variable-length attention over packed sequences, its bounds read with .item() as
FlashInfer-style references do: cu_seqlens [0, 3, 8] holds two sequences of 3 and 5 tokens in q,
k and v ([8, 16]); each attends over its own tokens."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, q, k, v, cu_seqlens):
        outs = []
        for b in range(cu_seqlens.shape[0] - 1):
            s, e = cu_seqlens[b].item(), cu_seqlens[b + 1].item()
            scores = q[s:e] @ k[s:e].transpose(0, 1)
            outs.append(torch.softmax(scores, dim=-1) @ v[s:e])
        return torch.cat(outs)


def get_inputs():
    return [torch.randn(8, 16), torch.randn(8, 16), torch.randn(8, 16), torch.tensor([0, 3, 8])]


def get_init_inputs():
    return []
