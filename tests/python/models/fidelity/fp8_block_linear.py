"""Fidelity pattern: a block-scaled fp8 projection as reference programs write it (issue 29):
x fp8 e4m3 [64, 256] with one f32 scale per 1 x 128 block ([64, 2]), w fp8 [192, 256] with one
scale per 64 x 128 block ([3, 2]), both dequantised to f32 and multiplied: y [64, 192] f32."""

import torch
from torch import nn

T, K, N, BK, BN = 64, 256, 192, 128, 64


class Model(nn.Module):
    def forward(
        self, x: torch.Tensor, sx: torch.Tensor, w: torch.Tensor, sw: torch.Tensor
    ) -> torch.Tensor:
        xd = (x.to(torch.float32).view(T, K // BK, BK) * sx[:, :, None]).reshape(T, K)
        wd = w.to(torch.float32).view(N // BN, BN, K // BK, BK) * sw[:, None, :, None]
        return xd @ wd.reshape(N, K).t()


def get_inputs() -> list[torch.Tensor]:
    x = torch.randn(T, K).to(torch.float8_e4m3fn)
    w = torch.randn(N, K).to(torch.float8_e4m3fn)
    return [x, torch.rand(T, K // BK), w, torch.rand(N // BN, K // BK)]


def get_init_inputs() -> list:
    return []
