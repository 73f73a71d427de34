"""Fidelity pattern: a layer norm's backward with its parameter gradients (issue 29), written
out: x, g [256, 64] f32, weight [64]; per row, xhat = (x - mean) * rstd, gx = g * weight,
dx = rstd * (gx - mean(gx) - xhat * mean(gx * xhat)); dweight = sum over rows of g * xhat,
dbias = sum over rows of g."""

import torch
from torch import nn

N, D = 256, 64


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(D))

    def forward(self, x: torch.Tensor, g: torch.Tensor) -> tuple[torch.Tensor, ...]:
        mean = x.mean(-1, keepdim=True)
        rstd = torch.rsqrt(x.var(-1, unbiased=False, keepdim=True) + 1e-5)
        xhat = (x - mean) * rstd
        gx = g * self.weight
        dx = rstd * (gx - gx.mean(-1, keepdim=True) - xhat * (gx * xhat).mean(-1, keepdim=True))
        return dx, (g * xhat).sum(0), g.sum(0)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(N, D), torch.randn(N, D)]


def get_init_inputs() -> list:
    return []
