"""3-D average pool, transposed 3-D conv, clamp, softmax over each channel's voxels, scale (the
output f32[32, 64, 32, 64, 64] is 1 GiB: verified per op; tests/python/test_per_op_shrink.py)."""

import torch
from torch import nn

N, C_IN, C_OUT, D, H, W = 32, 32, 64, 32, 64, 64


class Model(nn.Module):
    def __init__(self, c_in: int, c_out: int) -> None:
        super().__init__()
        self.pool = nn.AvgPool3d(2)
        self.up = nn.ConvTranspose3d(c_in, c_out, 3, stride=2, padding=1, output_padding=1)
        self.scale = nn.Parameter(torch.full((1, c_out, 1, 1, 1), 2.0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.clamp(self.up(self.pool(x)), 0.0, 1.0)
        n, c = y.shape[:2]
        p = torch.softmax(y.reshape(n, c, -1), dim=-1).reshape(y.shape)
        return p * self.scale


def get_inputs() -> list[torch.Tensor]:
    return [torch.rand(N, C_IN, D, H, W)]


def get_init_inputs() -> list[int]:
    return [C_IN, C_OUT]
