"""Issue 18: a GRU whose initial state is a plain tensor made in __init__ and moved in forward
(``self.h0 = self.h0.to(x.device)``), as the older problem set's GRUs do; returns h_n."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gru = nn.GRU(input_size=16, hidden_size=32, num_layers=2)
        self.h0 = torch.randn(2, 4, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.h0 = self.h0.to(x.device)
        _, h_n = self.gru(x, self.h0)
        return h_n


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(10, 4, 16)]


def get_init_inputs() -> list:
    return []
