"""Bench model: a ResNet-50-class CNN written here (no torchvision): 7x7/2 stem, 3x3/2 max pool,
bottleneck blocks [3, 4, 6, 3] of widths 64-512 (expansion 4, projection shortcuts), global average
pool, 1000 classes; batch norm in training mode; one 224x224 image."""

import torch
from torch import nn


def conv_bn(c_in: int, c_out: int, k: int, stride: int = 1) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, k, stride, k // 2, bias=False), nn.BatchNorm2d(c_out)
    )


class Block(nn.Module):
    def __init__(self, c_in: int, width: int, stride: int) -> None:
        super().__init__()
        self.a = conv_bn(c_in, width, 1)
        self.b = conv_bn(width, width, 3, stride)
        self.c = conv_bn(width, 4 * width, 1)
        self.proj = (
            conv_bn(c_in, 4 * width, 1, stride) if stride != 1 or c_in != 4 * width else None
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.c(torch.relu(self.b(torch.relu(self.a(x)))))
        return torch.relu(y + (x if self.proj is None else self.proj(x)))


class Model(nn.Module):
    def __init__(self, classes: int) -> None:
        super().__init__()
        self.stem = conv_bn(3, 64, 7, 2)
        self.pool = nn.MaxPool2d(3, 2, 1)
        blocks, c_in = [], 64
        for stage, (width, n) in enumerate(zip([64, 128, 256, 512], [3, 4, 6, 3])):
            for i in range(n):
                blocks.append(Block(c_in, width, 2 if stage > 0 and i == 0 else 1))
                c_in = 4 * width
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(c_in, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.blocks(self.pool(torch.relu(self.stem(x))))
        return self.fc(x.mean(dim=(2, 3)))


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(1, 3, 224, 224)]


def get_init_inputs() -> list[int]:
    return [1000]
