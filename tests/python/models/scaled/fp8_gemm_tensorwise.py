"""An fp8 GEMM as kernel-benchmark references write it: e4m3 operands with one scale each
(per tensor), the second operand stored [N, K] and transposed, a bf16 result:
torch._scaled_mm(a, b.t(), scale_a, scale_b, out_dtype=torch.bfloat16). M = 32, N = 48, K = 64."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, a, b, scale_a, scale_b):
        return torch._scaled_mm(
            a, b.t(), scale_a=scale_a, scale_b=scale_b, out_dtype=torch.bfloat16
        )


def get_inputs():
    a = (torch.randn(32, 64) * 4).to(torch.float8_e4m3fn)
    b = (torch.randn(48, 64) * 4).to(torch.float8_e4m3fn)
    return [a, b, torch.tensor(0.25), torch.tensor(0.5)]


def get_init_inputs():
    return []
