"""An MoE block written as Hugging Face's sparse MoE blocks are: a softmax router, top-2, a
one-hot expert mask, the experts hit found with ``nonzero``, each expert's tokens with
``torch.where``, and ``index_add_`` back. 16 tokens of width 32, 8 SwiGLU experts of width 64."""

import torch
import torch.nn.functional as F  # noqa: N812 (as Hugging Face and vLLM write it)
from torch import nn


class Expert(nn.Module):
    def __init__(self, hidden: int, inner: int) -> None:
        super().__init__()
        self.w1 = nn.Linear(hidden, inner, bias=False)
        self.w3 = nn.Linear(hidden, inner, bias=False)
        self.w2 = nn.Linear(inner, hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Model(nn.Module):
    def __init__(self, hidden: int, inner: int, experts: int, top_k: int) -> None:
        super().__init__()
        self.gate = nn.Linear(hidden, experts, bias=False)
        self.experts = nn.ModuleList([Expert(hidden, inner) for _ in range(experts)])
        self.num_experts, self.top_k = experts, top_k

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        batch, seq, hidden = hidden_states.shape
        hidden_states = hidden_states.view(-1, hidden)
        router_logits = self.gate(hidden_states)
        weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        weights, selected = torch.topk(weights, self.top_k, dim=-1)
        weights /= weights.sum(dim=-1, keepdim=True)
        weights = weights.to(hidden_states.dtype)
        final = torch.zeros((batch * seq, hidden), dtype=hidden_states.dtype)
        expert_mask = F.one_hot(selected, num_classes=self.num_experts).permute(2, 1, 0)
        expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
        for expert_idx in expert_hit:
            layer = self.experts[expert_idx]
            idx, top_x = torch.where(expert_mask[expert_idx].squeeze(0))
            state = hidden_states[None, top_x].reshape(-1, hidden)
            out = layer(state) * weights[top_x, idx, None]
            final.index_add_(0, top_x, out.to(hidden_states.dtype))
        return final.reshape(batch, seq, hidden)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 8, 32)]


def get_init_inputs() -> list[int]:
    return [32, 64, 8, 2]
