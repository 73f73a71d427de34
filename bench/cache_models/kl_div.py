"""Cache-groups model: KL divergence, kl_div(log(p), q, reduction='batchmean') (issue 12)."""

import torch
from torch import nn

R, C = 1024, 4096


class Model(nn.Module):
    def forward(self, p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.kl_div(torch.log(p), q, reduction="batchmean")


def get_inputs() -> list[torch.Tensor]:
    return [torch.rand(R, C).softmax(-1), torch.rand(R, C).softmax(-1)]


def get_init_inputs() -> list:
    return []
