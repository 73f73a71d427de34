"""An NVFP4 GEMM through torch.nn.functional.scaled_mm (aten._scaled_mm_v2), as newer references
write it: packed e2m1 operands, NVFP4's two-level recipe on both (BlockWise1x16 e4m3 scales in
the swizzled layout, then a TensorWise f32 global scale), a bf16 result. M = 48, N = 24, K = 96
(6 blocks of 16: a group of 4 and 2 more). The CPU cannot run it: verified against its
definition."""

import torch
from torch import nn
from torch.nn import functional
from torch.nn.functional import ScalingType, SwizzleType

M, N, K = 48, 24, 96
RECIPE = [ScalingType.BlockWise1x16, ScalingType.TensorWise]
SWIZZLE = [SwizzleType.SWIZZLE_32_4_4]


def swizzled_scales(rows: int, k: int) -> int:
    return (rows + 127) // 128 * 128 * ((k // 16 + 3) // 4 * 4)


class Model(nn.Module):
    def forward(self, x, w, x_scale, w_scale, x_global, w_global):
        return functional.scaled_mm(
            x,
            w.t(),
            [x_scale, x_global],
            RECIPE,
            [w_scale, w_global],
            RECIPE,
            swizzle_a=SWIZZLE,
            swizzle_b=SWIZZLE,
            output_dtype=torch.bfloat16,
        )


def get_inputs():
    g = torch.Generator().manual_seed(2)
    x = torch.randint(0, 256, (M, K // 2), dtype=torch.uint8, generator=g)
    w = torch.randint(0, 256, (N, K // 2), dtype=torch.uint8, generator=g)
    x_scale = torch.rand(swizzled_scales(M, K), generator=g) + 0.5
    w_scale = torch.rand(swizzled_scales(N, K), generator=g) + 0.5
    return [
        x.view(torch.float4_e2m1fn_x2),
        w.view(torch.float4_e2m1fn_x2),
        x_scale.to(torch.float8_e4m3fn),
        w_scale.to(torch.float8_e4m3fn),
        torch.tensor(0.5),
        torch.tensor(0.25),
    ]


def get_init_inputs():
    return []
