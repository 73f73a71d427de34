"""An EfficientNet-B2-style network whose squeeze step sits in line: each MBConv stage is
1x1 expand conv, BatchNorm, ReLU, depthwise 3x3 conv (strided), BatchNorm, ReLU, adaptive
average pool to 1x1, 1x1 squeeze conv, ReLU, 1x1 excite conv, sigmoid, 1x1 project conv,
BatchNorm. From the first stage's pool on, every activation is 1x1, so each training-mode
BatchNorm normalises the batch's 2 values per channel: it maps a, b to about
+-(a - b) / sqrt((a - b)^2 + 4e-5), and where |a - b| is near sqrt(4e-5) ~ 6.3e-3 it amplifies
a rounding of a or b by up to 1 / sqrt(1e-5) ~ 316. Chained over the stages, PyTorch's own
float32 result is far from its float64 one (tests/python/test_verify_conditioning.py)."""

import torch
from torch import nn

BATCH = 2
SIDE = 16
WIDTHS = [16, 48, 72, 96, 144, 192]  # the stem, then each stage's output channels
HEAD = 256
CLASSES = 10


def _stage(c_in: int, c_out: int, stride: int, expand: int) -> nn.Sequential:
    mid = c_in * expand
    layers: list[nn.Module] = []
    if expand != 1:
        layers += [nn.Conv2d(c_in, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.ReLU()]
    layers += [
        nn.Conv2d(mid, mid, 3, stride=stride, padding=1, groups=mid, bias=False),
        nn.BatchNorm2d(mid),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Conv2d(mid, mid // 4, 1, bias=False),
        nn.ReLU(),
        nn.Conv2d(mid // 4, mid, 1, bias=False),
        nn.Sigmoid(),
        nn.Conv2d(mid, c_out, 1, bias=False),
        nn.BatchNorm2d(c_out),
    ]
    return nn.Sequential(*layers)


class Model(nn.Module):
    def __init__(self, widths: list[int], head: int, classes: int) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, widths[0], 3, stride=2, padding=1, bias=False),
            nn.BatchNorm2d(widths[0]),
            nn.ReLU(),
        )
        plan = [(1, 3), (2, 6), (2, 6), (2, 6), (1, 6)]  # (stride, expansion) per stage
        self.stages = nn.Sequential(
            *(_stage(widths[k], widths[k + 1], s, e) for k, (s, e) in enumerate(plan))
        )
        self.head = nn.Sequential(
            nn.Conv2d(widths[-1], head, 1, bias=False), nn.BatchNorm2d(head), nn.ReLU()
        )
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(head, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.head(self.stages(self.stem(x)))
        return self.fc(torch.flatten(self.pool(y), 1))


def get_inputs() -> list[torch.Tensor]:
    return [torch.rand(BATCH, 3, SIDE, SIDE)]


def get_init_inputs() -> list:
    return [WIDTHS, HEAD, CLASSES]
