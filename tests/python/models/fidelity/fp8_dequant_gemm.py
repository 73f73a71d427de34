"""Origin precision (issue 29): a reference fp8 GEMM as quantised kernels' reference programs
write it: e4m3 operands dequantised to f32 with per-block scales (a: one scale per 1 x 128
block of a row, b: one per 128 x 128 block) and multiplied in f32."""

import torch
from torch import nn

M, K, N, BLOCK = 256, 512, 256, 128


class Model(nn.Module):
    def forward(
        self, a: torch.Tensor, sa: torch.Tensor, b: torch.Tensor, sb: torch.Tensor
    ) -> torch.Tensor:
        a32 = a.to(torch.float32).reshape(M, K // BLOCK, BLOCK) * sa[:, :, None]
        b32 = b.to(torch.float32).reshape(N // BLOCK, BLOCK, K // BLOCK, BLOCK)
        b32 = b32 * sb[:, None, :, None]
        return a32.reshape(M, K) @ b32.reshape(N, K).t()


def get_inputs() -> list[torch.Tensor]:
    a = torch.randn(M, K).to(torch.float8_e4m3fn)
    b = torch.randn(N, K).to(torch.float8_e4m3fn)
    return [a, torch.rand(M, K // BLOCK), b, torch.rand(N // BLOCK, K // BLOCK)]


def get_init_inputs() -> list:
    return []
