"""Minimal-bytes pattern (issue 29): decode attention scores over a paged KV cache. The cache
holds 64 pages of 16 tokens x 2 heads x 8 dims (f32); each of the 2 sequences names 4 pages in
its block table, so only 8 pages are read, not the whole cache."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(
        self, q: torch.Tensor, k_cache: torch.Tensor, block_table: torch.Tensor
    ) -> torch.Tensor:
        pages = k_cache[block_table]  # [2, 4, 16, 2, 8]
        k = pages.reshape(2, 64, 2, 8)
        return torch.einsum("bhd,bthd->bht", q, k)


def get_inputs() -> list[torch.Tensor]:
    table = torch.tensor([[3, 17, 42, 8], [5, 60, 1, 33]])
    return [torch.randn(2, 2, 8), torch.randn(64, 16, 2, 8), table]


def get_init_inputs() -> list:
    return []
