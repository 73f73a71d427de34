"""An MoE reference as kernel benchmarks write them: expert weights stacked in one tensor, the
tokens per expert counted with ``bincount(...).tolist()``, a Python loop over the counts that
skips empty experts, each expert's (token, slot) pairs from ``nonzero(as_tuple=True)``, and
``index_add_`` back. 16 tokens of width 32, 8 experts, top-2, a fused gate/up of 2 x 64."""

import torch
import torch.nn.functional as F  # noqa: N812 (as Hugging Face and vLLM write it)
from torch import nn


class Model(nn.Module):
    def __init__(self, hidden: int, inner: int, experts: int, top_k: int) -> None:
        super().__init__()
        self.router = nn.Linear(hidden, experts, bias=False)
        self.w_gate_up = nn.Parameter(torch.randn(experts, 2 * inner, hidden) * 0.05)
        self.w_down = nn.Parameter(torch.randn(experts, hidden, inner) * 0.05)
        self.num_experts, self.top_k = experts, top_k

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        probs = self.router(x).softmax(-1)
        top_p, top_i = probs.topk(self.top_k, dim=-1)
        out = torch.zeros_like(x)
        counts = torch.bincount(top_i.flatten(), minlength=self.num_experts).tolist()
        for e, count in enumerate(counts):
            if count == 0:
                continue
            token, slot = (top_i == e).nonzero(as_tuple=True)
            gate, up = (x[token] @ self.w_gate_up[e].t()).chunk(2, dim=-1)
            y = (F.silu(gate) * up) @ self.w_down[e].t()
            out.index_add_(0, token, y * top_p[token, slot].unsqueeze(-1))
        return out


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(16, 32)]


def get_init_inputs() -> list[int]:
    return [32, 64, 8, 2]
