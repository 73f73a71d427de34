"""Packed fp4 weights (issue 27, item 4): a reference NVFP4-style GEMM as quantised kernels'
reference programs write it. The weight is torch.float4_e2m1fn_x2 (two e2m1 values a byte,
N x K / 2 bytes), unpacked after ``.view(torch.uint8)`` by a mask and a shift, decoded by a
16-entry table, times one scale per block of 16 along K, then multiplied with bf16
activations."""

import torch
from torch import nn

M, K, N, BLOCK = 4, 512, 256, 16

# The 16 e2m1 values, by code (sign bit 3, exponent bits 2-1, mantissa bit 0).
E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        packed = torch.randint(0, 256, (N, K // 2), dtype=torch.uint8, generator=g)
        self.register_buffer("w", packed.view(torch.float4_e2m1fn_x2))
        self.register_buffer("table", torch.tensor(E2M1, dtype=torch.bfloat16))
        scale = torch.rand(N, K // BLOCK, generator=g) + 0.5
        self.register_buffer("scale", scale.to(torch.bfloat16))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b = self.w.view(torch.uint8)
        codes = torch.stack([b & 15, b >> 4], -1).reshape(N, K).long()
        w = self.table[codes].reshape(N, K // BLOCK, BLOCK) * self.scale[:, :, None]
        return x @ w.reshape(N, K).t()


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(M, K).to(torch.bfloat16)]


def get_init_inputs() -> list:
    return []
