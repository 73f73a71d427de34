"""A vLLM-style MoE reference: the (token, expert) pairs sorted by expert, the counts per
expert read to the host with ``.cpu().numpy()``, one GEMM pair per expert over its run of the
sorted tokens, and ``scatter_add_`` back weighted by the router. The router's logits are an
input. 16 tokens of width 32, 8 experts, top-2, a fused gate/up of 2 x 64."""

import torch
import torch.nn.functional as F  # noqa: N812 (as Hugging Face and vLLM write it)
from torch import nn


class Model(nn.Module):
    def __init__(self, hidden: int, inner: int, experts: int, top_k: int) -> None:
        super().__init__()
        self.w13 = nn.Parameter(torch.randn(experts, 2 * inner, hidden) * 0.05)
        self.w2 = nn.Parameter(torch.randn(experts, hidden, inner) * 0.05)
        self.num_experts, self.top_k, self.inner = experts, top_k, inner

    def forward(self, x: torch.Tensor, router_logits: torch.Tensor) -> torch.Tensor:
        tokens, hidden = x.shape
        weights, ids = torch.topk(torch.softmax(router_logits.float(), -1), self.top_k, -1)
        flat = ids.reshape(-1)
        order = flat.argsort()
        source = order // self.top_k
        counts = torch.bincount(flat, minlength=self.num_experts).cpu().numpy()
        start, outs = 0, []
        for e in range(self.num_experts):
            n = int(counts[e])
            if n == 0:
                continue
            h = x[source[start : start + n]] @ self.w13[e].t()
            act = F.silu(h[:, : self.inner]) * h[:, self.inner :]
            outs.append(act @ self.w2[e].t())
            start += n
        y = torch.cat(outs, 0) * weights.reshape(-1)[order].unsqueeze(-1)
        out = torch.zeros(tokens, hidden, dtype=x.dtype)
        out.scatter_add_(0, source.unsqueeze(-1).expand(-1, hidden), y)
        return out


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(16, 32), torch.randn(16, 8)]


def get_init_inputs() -> list[int]:
    return [32, 64, 8, 2]
