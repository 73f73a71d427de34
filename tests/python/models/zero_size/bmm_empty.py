"""Zero-size test model: two batched matmuls, one over a batch of 0 and one whose contracted
dimension is 0 ([2, 3, 0] @ [2, 0, 4]: a [2, 3, 4] tensor of zeros)."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(
        self, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, d: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.bmm(a, b), torch.bmm(c, d)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(0, 3, 5), torch.randn(0, 5, 4), torch.randn(2, 3, 0), torch.randn(2, 0, 4)]


def get_init_inputs() -> list[int]:
    return []
