"""Fidelity pattern: KL divergence, kl_div(log(p), q, reduction="batchmean") over [64, 128] f32
probabilities: torch.log, then `aten.kl_div` (decomposed by export into xlogy, sub, sum), then
the batch-mean division."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        return nn.functional.kl_div(torch.log(p), q, reduction="batchmean")


def get_inputs() -> list[torch.Tensor]:
    return [
        torch.softmax(torch.randn(64, 128), dim=-1),
        torch.softmax(torch.randn(64, 128), dim=-1),
    ]


def get_init_inputs() -> list:
    return []
