"""Test model: a ResNet-style CNN of bottleneck blocks (1x1 reduce, 3x3 with the stage's stride,
1x1 expand by 4, batch norm after each, projection shortcut when the shape changes), a stem
convolution and max pool, global average pool and a linear classifier. Batch norm is in training
mode (batch statistics). The test builds a small one; bench/frontend_bench.py builds ResNet-50's
shape (blocks [3, 4, 6, 3], widths [64, 128, 256, 512], 7x7 stride-2 stem, 224x224)."""

import torch
from torch import nn

EXPANSION = 4


class Bottleneck(nn.Module):
    def __init__(self, c_in: int, width: int, stride: int) -> None:
        super().__init__()
        c_out = width * EXPANSION
        self.conv1 = nn.Conv2d(c_in, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, c_out, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(c_out)
        self.shortcut = None
        if stride != 1 or c_in != c_out:
            self.shortcut = nn.Sequential(
                nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False), nn.BatchNorm2d(c_out)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.bn1(self.conv1(x)))
        h = torch.relu(self.bn2(self.conv2(h)))
        h = self.bn3(self.conv3(h))
        return torch.relu(h + (x if self.shortcut is None else self.shortcut(x)))


class Model(nn.Module):
    def __init__(
        self,
        stem: int,
        widths: list[int],
        blocks: list[int],
        num_classes: int,
        stem_kernel: int = 3,
        stem_stride: int = 1,
    ) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, stem, stem_kernel, stride=stem_stride, padding=stem_kernel // 2,
                              bias=False)  # fmt: skip
        self.bn = nn.BatchNorm2d(stem)
        self.pool = nn.MaxPool2d(3, stride=2, padding=1)
        layers = []
        c_in = stem
        for i, (width, n) in enumerate(zip(widths, blocks, strict=True)):
            for j in range(n):
                layers.append(Bottleneck(c_in, width, 2 if i > 0 and j == 0 else 1))
                c_in = width * EXPANSION
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(c_in, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(torch.relu(self.bn(self.stem(x))))
        x = self.layers(x)
        return self.fc(x.mean(dim=(2, 3)))


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 3, 16, 16)]


def get_init_inputs() -> list:
    return [8, [4, 8], [1, 1], 10]
