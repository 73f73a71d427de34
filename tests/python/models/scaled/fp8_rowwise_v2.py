"""An fp8 GEMM through torch.nn.functional.scaled_mm (aten._scaled_mm_v2) with RowWise scales on
both operands: M = 32, N = 48, K = 64, e4m3 operands, f32 scales [32, 1] and [1, 48], a bf16
result. PyTorch's CPU kernel runs it."""

import torch
from torch import nn
from torch.nn import functional
from torch.nn.functional import ScalingType


class Model(nn.Module):
    def forward(self, a, b, sa, sb):
        return functional.scaled_mm(
            a, b.t(), sa, ScalingType.RowWise, sb, ScalingType.RowWise, output_dtype=torch.bfloat16
        )


def get_inputs():
    a = torch.randn(32, 64).to(torch.float8_e4m3fn)
    b = torch.randn(48, 64).to(torch.float8_e4m3fn)
    return [a, b, torch.rand(32, 1) + 0.5, torch.rand(1, 48) + 0.5]


def get_init_inputs():
    return []
