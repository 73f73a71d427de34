"""An NVFP4 GEMM as Blackwell kernel-benchmark references write it: packed e2m1 operands (two
values a byte) with an e4m3 scale per 16 values in the swizzled 128 x 4 layout, a bf16 result.
M = 16, N = 32, K = 64. The CPU cannot run it: SOLAR verifies it against the op's definition
(decode, scale per block, multiply in f32)."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, a, b, scale_a, scale_b):
        return torch._scaled_mm(a, b.t(), scale_a, scale_b, out_dtype=torch.bfloat16)


def get_inputs():
    a = torch.randint(0, 256, (16, 32), dtype=torch.uint8).view(torch.float4_e2m1fn_x2)
    b = torch.randint(0, 256, (32, 32), dtype=torch.uint8).view(torch.float4_e2m1fn_x2)
    scale = torch.rand(128, 4).to(torch.float8_e4m3fn)
    return [a, b, scale, scale.clone()]


def get_init_inputs():
    return []
