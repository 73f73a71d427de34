"""Issue 18: a GRU whose output is updated in place (``out.add_(x)``, a residual over the
sequence: the input and hidden widths are the same), its initial state a plain tensor made in
__init__."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gru = nn.GRU(input_size=16, hidden_size=16, batch_first=True)
        self.h0 = torch.randn(1, 4, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.gru(x, self.h0)
        out.add_(x)
        return out


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(4, 10, 16)]


def get_init_inputs() -> list:
    return []
