"""Cache-groups model: triplet-margin loss over embeddings (issue 12)."""

import torch
from torch import nn

R, C = 1024, 4096


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.loss = nn.TripletMarginLoss(margin=1.0)

    def forward(self, a: torch.Tensor, p: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
        return self.loss(a, p, n)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(R, C), torch.randn(R, C), torch.randn(R, C)]


def get_init_inputs() -> list:
    return []
