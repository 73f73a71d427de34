"""PyTorch twin of jax_models/twin_cnn.py."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1, groups=4)
        self.fc = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.conv2(torch.relu(self.conv1(x))))
        return self.fc(x.mean(dim=(2, 3)))


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 3, 16, 16)]


def get_init_inputs() -> list:
    return []
