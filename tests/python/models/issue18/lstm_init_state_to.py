"""Issue 18: an LSTM whose initial states are plain tensors made in __init__ and reassigned in
forward (``self.h0 = self.h0.to(x.device)``), as the older problem set's LSTMs do."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(input_size=16, hidden_size=32, batch_first=True)
        self.h0 = torch.randn(1, 4, 32)
        self.c0 = torch.randn(1, 4, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.h0 = self.h0.to(x.device)
        self.c0 = self.c0.to(x.device)
        out, _ = self.lstm(x, (self.h0, self.c0))
        return out


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(4, 10, 16)]


def get_init_inputs() -> list:
    return []
