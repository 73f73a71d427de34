"""An NVFP4 linear layer as FlashInfer-style references write one: activations and weight
quantised offline to packed e2m1 pairs, e4m3 block scales (one per 16 values along K) handed over
flattened in cuBLAS's swizzled layout, a global scale applied to the bf16 product, then a bias.
M = 200 rows (one whole tile of 128 rows and a partial one), N = 40, K = 80 (5 blocks of 16: a
partial group of 4)."""

import torch
from torch import nn

M, N, K = 200, 40, 80


def swizzled_scales(rows: int, k: int) -> int:
    """Scales in the swizzled layout: rows padded to 128, blocks of 16 padded to 4."""
    return (rows + 127) // 128 * 128 * ((k // 16 + 3) // 4 * 4)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(N).to(torch.bfloat16))

    def forward(self, x_fp4, w_fp4, x_scale, w_scale, alpha):
        out = torch._scaled_mm(
            x_fp4, w_fp4.T, scale_a=x_scale, scale_b=w_scale, out_dtype=torch.bfloat16
        )
        return out * alpha + self.bias


def get_inputs():
    g = torch.Generator().manual_seed(1)
    x = torch.randint(0, 256, (M, K // 2), dtype=torch.uint8, generator=g)
    w = torch.randint(0, 256, (N, K // 2), dtype=torch.uint8, generator=g)
    x_scale = torch.rand(swizzled_scales(M, K), generator=g) + 0.5
    w_scale = torch.rand(swizzled_scales(N, K), generator=g) + 0.5
    return [
        x.view(torch.float4_e2m1fn_x2),
        w.view(torch.float4_e2m1fn_x2),
        x_scale.to(torch.float8_e4m3fn),
        w_scale.to(torch.float8_e4m3fn),
        torch.tensor(0.25),
    ]


def get_init_inputs():
    return []
