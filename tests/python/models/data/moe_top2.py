"""A mixture-of-experts layer with top-2 routing, written as routed computation (each token's
two experts only): T = 16 tokens, hidden H = 32, expert width F = 64, E = 4 experts.

Routing: softmax of the gate, top-2 experts per token, weights renormalised. The 32 routed
(token, expert) slots are sorted by expert; each slot's expert matrices are gathered and one
batched product per layer does every slot's own product; the outputs are weighted and added back
to their tokens."""

import torch
import torch.nn as nn

T, H, F, E, K = 16, 32, 64, 4, 2


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = nn.Parameter(torch.randn(E, H) * 0.2)
        self.w1 = nn.Parameter(torch.randn(E, H, F) * 0.2)
        self.w2 = nn.Parameter(torch.randn(E, F, H) * 0.2)

    def forward(self, x):
        probs = torch.softmax(x @ self.gate.t(), dim=-1)  # [T, E]
        weights, experts = torch.topk(probs, K, dim=-1)  # [T, K]
        weights = weights / weights.sum(dim=-1, keepdim=True)
        flat = experts.reshape(-1)  # [T * K]: slot s is token s // K
        order = torch.argsort(flat, stable=True)
        token = order // K
        expert = flat[order]
        xs = x.index_select(0, token)  # [T * K, H]
        h = torch.bmm(xs.unsqueeze(1), self.w1.index_select(0, expert)).squeeze(1)
        h = torch.nn.functional.gelu(h)
        o = torch.bmm(h.unsqueeze(1), self.w2.index_select(0, expert)).squeeze(1)
        o = o * weights.reshape(-1)[order].unsqueeze(1)
        return torch.zeros(T, H).index_add(0, token, o)


def get_inputs():
    return [torch.randn(T, H)]


def get_init_inputs():
    return []
