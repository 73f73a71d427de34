"""An fp8 GEMM with row-wise scales and a bias, as fp8 linear layers run it: e4m3 operands, a
scale per row of the first (scale_a [M, 1]) and per column of the result (scale_b [1, N]), a
bf16 bias and result. M = 32, N = 48, K = 64."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(
            (torch.randn(48, 64) * 4).to(torch.float8_e4m3fn), requires_grad=False
        )
        self.weight_scale = nn.Parameter(torch.rand(1, 48) + 0.5, requires_grad=False)
        self.bias = nn.Parameter(torch.randn(48).to(torch.bfloat16), requires_grad=False)

    def forward(self, x, x_scale):
        return torch._scaled_mm(
            x,
            self.weight.t(),
            scale_a=x_scale,
            scale_b=self.weight_scale,
            bias=self.bias,
            out_dtype=torch.bfloat16,
        )


def get_inputs():
    return [(torch.randn(32, 64) * 4).to(torch.float8_e4m3fn), torch.rand(32, 1) + 0.5]


def get_init_inputs():
    return []
