"""An integer sort (a mixture of experts sorting its tokens' expert ids): the per-op check must
compare a well-defined result, so its keys are drawn distinct (equal keys' order is
unspecified in PyTorch)."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, expert_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.sort(expert_ids.view(-1))


def get_inputs() -> list[torch.Tensor]:
    return [torch.randint(0, 4, (16, 2))]


def get_init_inputs() -> list:
    return []
