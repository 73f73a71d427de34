"""``solar bench`` over a generated 250-problem suite, with a new Python per problem
(``--isolation process``) and with the warm parent that forks per problem (``--isolation fork``),
in the same run; prints each run's wall time and their ratio (bench/README.md, "Suite time").

    export PYTHONPATH=$(scripts/dev-python.sh build/dev)       # or devbuild.sh's PYTHONPATH
    python3 bench/suite_bench.py OUT/ [--jobs 2] [--only level1,level3] [--limit N]
                                      [--problems level1/72,level2/100]
                                      [--isolations process,fork] [--hw H100-SXM]
                                      [--baseline OTHER_BUILD/pkg]
    python3 bench/suite_bench.py OUT/ --generate-only          # just the model files

The suite (``OUT/suite/level{1,2,3}/*.py``, each with ``Model``, ``get_inputs`` and
``get_init_inputs``) is written here from templates of this file, in the style of KernelBench:
100 single operations (level 1: matmuls, activations, normalisations, pooling, reductions,
convolutions and transposed convolutions in 1-3 D, scans, losses, attention), 100 fused chains
(level 2: a GEMM or a convolution followed by elementwise operations, normalisations and
pooling) and 50 small networks (level 3: MLPs, LeNet, VGG-style and ResNet blocks, fire and
inception modules, a SqueezeNet, MobileNet blocks, attention and transformer blocks, RNNs). The
shapes of four problems are those of KernelBench's slowest ones under SOLAR (issue 29):
level1/72 (ConvTranspose3d 32->32, kernel 3x5x7, stride 2, groups 4, input 8x32x12x24x48),
level2/90 (Conv3d 8->64, kernel 3, then leaky relu, add, clamp, GELU; input 128x8x16x64x64),
level3/18 (SqueezeNet 1.0, 64 images of 512x512) and level3/6 (an inception module, 480 channels,
10 images of 224x224). ``--limit N`` keeps the first N files of each level (sorted by name).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"


def problem(init: str, forward: str, inputs: str, init_inputs: str = "[]", extra: str = "") -> str:
    """A model file: ``Model.__init__`` body ``init`` (may be empty), ``forward(self, *xs)``
    body ``forward``, ``get_inputs`` returning ``inputs``."""
    init_body = init or "pass"
    text = HEADER + extra
    text += "class Model(nn.Module):\n"
    text += "    def __init__(self, *args):\n        super().__init__()\n"
    text += "".join(f"        {line}\n" for line in init_body.splitlines())
    text += "\n    def forward(self, *xs):\n"
    text += "".join(f"        {line}\n" for line in forward.splitlines())
    text += f"\n\ndef get_inputs():\n    return {inputs}\n"
    text += f"\n\ndef get_init_inputs():\n    return {init_inputs}\n"
    return text


def rand(*shape: int) -> str:
    return f"torch.rand({', '.join(map(str, shape))})"


def level1() -> dict[str, str]:
    p: dict[str, str] = {}

    def add(name: str, text: str) -> None:
        p[f"{len(p) + 1}_{name}.py"] = text

    def one(name: str, expr: str, inputs: str) -> None:
        """A problem of one expression: ``forward`` returns ``expr`` of ``xs``."""
        add(name, problem("", f"return {expr}", inputs))

    for m, k, n in ((2048, 2048, 2048), (1024, 4096, 2048), (4096, 256, 4096), (8192, 64, 8192)):
        one(f"matmul_{m}x{k}x{n}", "xs[0] @ xs[1]", f"[{rand(m, k)}, {rand(k, n)}]")
    for b, m, k, n in ((128, 128, 256, 512), (16, 512, 1024, 256)):
        one(f"bmm_{b}", "torch.bmm(xs[0], xs[1])", f"[{rand(b, m, k)}, {rand(b, k, n)}]")
    for name, expr, inputs in (
        ("matvec", "xs[0] @ xs[1]", f"[{rand(2048, 65536)}, {rand(65536, 1)}]"),
        ("matmul_tA", "xs[0].T @ xs[1]", f"[{rand(4096, 1024)}, {rand(4096, 2048)}]"),
        ("matmul_tB", "xs[0] @ xs[1].T", f"[{rand(1024, 4096)}, {rand(2048, 4096)}]"),
        ("matmul_3d", "torch.matmul(xs[0], xs[1])", f"[{rand(16, 1024, 2048)}, {rand(2048, 768)}]"),
    ):
        one(name, expr, inputs)
    add(
        "matmul_4d",
        problem(
            "",
            'return torch.einsum("bijl,lk->bijk", xs[0], xs[1])',
            f"[{rand(8, 64, 128, 256)}, {rand(256, 384)}]",
        ),
    )
    one("diag_matmul", "torch.diag(xs[0]) @ xs[1]", f"[{rand(4096)}, {rand(4096, 4096)}]")
    one("scalar_mul", "xs[0] * 3.5", f"[{rand(16384, 4096)}]")
    acts = (
        "torch.relu(x)",
        "F.leaky_relu(x, 0.01)",
        "torch.sigmoid(x)",
        "torch.tanh(x)",
        "F.gelu(x)",
        "F.silu(x)",
        "torch.selu(x)",
        "F.elu(x, 1.0)",
        "F.hardtanh(x, -1.0, 1.0)",
        "F.softplus(x)",
        "F.softsign(x)",
        "F.hardsigmoid(x)",
        "F.hardswish(x)",
        "F.mish(x)",
        "torch.softmax(x, dim=1)",
        "torch.log_softmax(x, dim=1)",
        "0.5 * x * (1.0 + torch.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))",
    )
    for i, act in enumerate(acts):
        add(f"act_{i}", problem("", f"x = xs[0]\nreturn {act}", f"[{rand(4096, 16384)}]"))
    norms = (
        ("batchnorm", "self.n = nn.BatchNorm2d(64)", rand(16, 64, 256, 256)),
        ("instancenorm", "self.n = nn.InstanceNorm2d(64)", rand(16, 64, 256, 256)),
        ("groupnorm", "self.n = nn.GroupNorm(8, 64)", rand(16, 64, 256, 256)),
        ("layernorm", "self.n = nn.LayerNorm([64, 256, 256])", rand(16, 64, 256, 256)),
    )
    for name, init, x in norms:
        add(name, problem(init, "return self.n(xs[0])", f"[{x}]"))
    add(
        "rmsnorm",
        problem(
            "",
            "x = xs[0]\nreturn x / torch.sqrt(torch.mean(x * x, dim=1, keepdim=True) + 1e-5)",
            f"[{rand(16, 64, 256, 256)}]",
        ),
    )
    add(
        "frobenius",
        problem("", "x = xs[0]\nreturn x / torch.norm(x, p='fro')", f"[{rand(16, 64, 256, 256)}]"),
    )
    add(
        "l1norm",
        problem(
            "",
            "x = xs[0]\nreturn x / torch.sum(torch.abs(x), dim=1, keepdim=True)",
            f"[{rand(32768, 1024)}]",
        ),
    )
    add(
        "l2norm",
        problem(
            "",
            "x = xs[0]\nreturn x / torch.norm(x, p=2, dim=1, keepdim=True)",
            f"[{rand(32768, 1024)}]",
        ),
    )
    pools = (
        ("maxpool1d", "nn.MaxPool1d(4, 2, 2)", rand(64, 192, 65536 // 8)),
        ("maxpool2d", "nn.MaxPool2d(4, 2, 1)", rand(32, 64, 256, 256)),
        ("maxpool3d", "nn.MaxPool3d(3, 2, 1)", rand(16, 32, 64, 64, 64)),
        ("avgpool1d", "nn.AvgPool1d(8, 1, 4)", rand(64, 128, 8192)),
        ("avgpool2d", "nn.AvgPool2d(11)", rand(16, 64, 512, 512)),
        ("avgpool3d", "nn.AvgPool3d(3, 2, 1)", rand(16, 32, 64, 64, 64)),
    )
    for name, mod, x in pools:
        add(name, problem(f"self.p = {mod}", "return self.p(xs[0])", f"[{x}]"))
    for name, op in (
        ("sum", "torch.sum(x, dim=1, keepdim=True)"),
        ("mean", "torch.mean(x, dim=1)"),
        ("max", "torch.max(x, dim=1)[0]"),
        ("min", "torch.min(x, dim=2)[0]"),
        ("argmax", "torch.argmax(x, dim=1)"),
        ("argmin", "torch.argmin(x, dim=2)"),
        ("prod", "torch.prod(x, dim=2)"),
    ):
        add(f"reduce_{name}", problem("", f"x = xs[0]\nreturn {op}", f"[{rand(128, 4096, 4095)}]"))
    convs = (
        ("conv2d_sq", "nn.Conv2d(3, 64, 3, bias=False)", rand(16, 3, 256, 256)),
        ("conv2d_asym", "nn.Conv2d(64, 128, (5, 7), bias=False)", rand(8, 64, 128, 256)),
        ("conv2d_strided", "nn.Conv2d(32, 64, 3, stride=2, padding=1)", rand(16, 32, 256, 256)),
        ("conv2d_dilated", "nn.Conv2d(32, 64, 3, padding=2, dilation=2)", rand(8, 32, 128, 128)),
        ("conv2d_depthwise", "nn.Conv2d(64, 64, 3, padding=1, groups=64)", rand(16, 64, 256, 256)),
        ("conv2d_pointwise", "nn.Conv2d(64, 128, 1)", rand(16, 64, 256, 256)),
        ("conv2d_grouped", "nn.Conv2d(64, 128, 3, groups=8, padding=1)", rand(16, 64, 128, 128)),
        ("conv1d", "nn.Conv1d(64, 128, 3)", rand(32, 64, 65536 // 4)),
        (
            "conv1d_dilated_strided",
            "nn.Conv1d(64, 128, 3, stride=3, dilation=4)",
            rand(32, 64, 65536 // 4),
        ),
        ("conv3d_sq", "nn.Conv3d(3, 64, 3)", rand(16, 3, 64, 64, 64)),
        ("conv3d_asym", "nn.Conv3d(3, 64, (3, 5, 7))", rand(16, 3, 64, 64, 64)),
        ("conv3d_grouped", "nn.Conv3d(32, 64, 3, groups=4, padding=1)", rand(8, 32, 32, 64, 64)),
        ("convT1d", "nn.ConvTranspose1d(64, 32, 5, stride=2)", rand(32, 64, 8192)),
        (
            "convT1d_dilated",
            "nn.ConvTranspose1d(32, 64, 5, stride=1, padding=2, dilation=3)",
            rand(32, 32, 8192),
        ),
        ("convT2d_sq", "nn.ConvTranspose2d(64, 64, 3)", rand(8, 64, 256, 256)),
        (
            "convT2d_strided",
            "nn.ConvTranspose2d(64, 32, (3, 5), stride=2, padding=(1, 2), output_padding=1)",
            rand(8, 64, 128, 128),
        ),
        (
            "convT2d_grouped",
            "nn.ConvTranspose2d(32, 64, 3, stride=2, groups=4, padding=1, dilation=2)",
            rand(8, 32, 128, 128),
        ),
        ("convT3d_sq", "nn.ConvTranspose3d(32, 16, 3)", rand(8, 32, 16, 32, 32)),
        ("convT3d_asym", "nn.ConvTranspose3d(32, 16, (3, 5, 7))", rand(8, 32, 16, 32, 64)),
        (
            "convT3d_strided_dilated",
            "nn.ConvTranspose3d(32, 16, 3, stride=2, padding=1, dilation=2)",
            rand(8, 32, 16, 32, 32),
        ),
        # KernelBench level1/72's shapes (issue 29: its slowest problem)
        (
            "convT3d_strided_padded_grouped",
            "nn.ConvTranspose3d(32, 32, (3, 5, 7), stride=(2, 2, 2), padding=(1, 2, 3), "
            "output_padding=(1, 1, 1), groups=4, bias=False)",
            rand(8, 32, 12, 24, 48),
        ),
    )
    for name, mod, x in convs:
        add(name, problem(f"self.c = {mod}", "return self.c(xs[0])", f"[{x}]"))
    for name, expr, inputs in (
        ("cumsum", "torch.cumsum(xs[0], dim=1)", f"[{rand(32768, 4096)}]"),
        ("cumprod", "torch.cumprod(xs[0], dim=1)", f"[{rand(32768, 4096)}]"),
        ("cumsum_reverse", "torch.cumsum(xs[0].flip(1), dim=1).flip(1)", f"[{rand(32768, 4096)}]"),
    ):
        one(name, expr, inputs)
    add(
        "cumsum_exclusive",
        problem(
            "",
            "x = xs[0]\nz = torch.zeros_like(x[:, :1])\nreturn torch.cumsum(torch.cat([z, x], dim=1), dim=1)[:, :-1]",
            f"[{rand(32768, 4096)}]",
        ),
    )
    add(
        "masked_cumsum",
        problem(
            "",
            "return torch.cumsum(xs[0] * xs[1], dim=1)",
            f"[{rand(32768, 4096)}, torch.randint(0, 2, (32768, 4096)).bool()]",
        ),
    )
    losses = (
        ("mse", "torch.mean((xs[0] - xs[1]) ** 2)", f"[{rand(32768, 4096)}, {rand(32768, 4096)}]"),
        ("huber", "F.smooth_l1_loss(xs[0], xs[1])", f"[{rand(32768, 4096)}, {rand(32768, 4096)}]"),
        (
            "kl",
            "F.kl_div(torch.log(xs[0]), xs[1], reduction='batchmean')",
            f"[{rand(8192, 8192)}.softmax(-1), {rand(8192, 8192)}.softmax(-1)]",
        ),
        (
            "cross_entropy",
            "F.cross_entropy(xs[0], xs[1])",
            f"[{rand(32768, 4096)}, torch.randint(0, 4096, (32768,))]",
        ),
        (
            "hinge",
            "torch.mean(torch.clamp(1 - xs[0] * xs[1], min=0))",
            f"[{rand(32768, 4096)}, torch.randint(0, 2, (32768, 4096)).float() * 2 - 1]",
        ),
        (
            "cosine",
            "torch.mean(1 - F.cosine_similarity(xs[0], xs[1], dim=1))",
            f"[{rand(32768, 4096)}, {rand(32768, 4096)}]",
        ),
    )
    for name, expr, inputs in losses:
        add(f"loss_{name}", problem("", f"return {expr}", inputs))
    add(
        "sdpa",
        problem(
            "",
            "return F.scaled_dot_product_attention(xs[0], xs[1], xs[2])",
            f"[{rand(32, 32, 512, 64)}, {rand(32, 32, 512, 64)}, {rand(32, 32, 512, 64)}]",
        ),
    )
    # Shape variants up to 100 (the same operations at other sizes, as KernelBench's do).
    i = 0
    while len(p) < 100:
        s = 512 * (1 + i % 4)
        variant = (
            problem("", "return xs[0] @ xs[1]", f"[{rand(s, 2 * s)}, {rand(2 * s, s)}]"),
            problem(
                "", "return torch.relu(xs[0]) + xs[1]", f"[{rand(64, s * 8)}, {rand(64, s * 8)}]"
            ),
            problem(
                "self.c = nn.Conv2d(16, 32, 3, padding=1)",
                "return self.c(xs[0])",
                f"[{rand(8, 16, s // 4, s // 4)}]",
            ),
            problem("", "return torch.softmax(xs[0], dim=-1)", f"[{rand(256, s * 4)}]"),
            problem("self.n = nn.LayerNorm(1024)", "return self.n(xs[0])", f"[{rand(s, 1024)}]"),
        )[i % 5]
        add(f"variant_{i}", variant)
        i += 1
    return p


LEVEL2_HEADS = (
    ("gemm", "self.h = nn.Linear(1024, 2048)", "x = self.h(xs[0])", rand(1024, 1024), 2),
    ("conv2d", "self.h = nn.Conv2d(16, 64, 3)", "x = self.h(xs[0])", rand(64, 16, 128, 128), 4),
    ("conv3d", "self.h = nn.Conv3d(3, 16, 3)", "x = self.h(xs[0])", rand(16, 3, 32, 64, 64), 5),
    (
        "convT2d",
        "self.h = nn.ConvTranspose2d(32, 16, 3, stride=2, padding=1, output_padding=1)",
        "x = self.h(xs[0])",
        rand(32, 32, 64, 64),
        4,
    ),
    (
        "convT3d",
        "self.h = nn.ConvTranspose3d(16, 16, 3, stride=2, padding=1)",
        "x = self.h(xs[0])",
        rand(8, 16, 16, 32, 32),
        5,
    ),
    (
        "bmm",
        "self.w = nn.Parameter(torch.randn(128, 256, 512) * 0.05)",
        "x = torch.bmm(xs[0], self.w)",
        rand(128, 512, 256),
        3,
    ),
)
LEVEL2_TAILS = (
    "x = torch.relu(x)",
    "x = F.leaky_relu(x, 0.2)",
    "x = x * 0.5",
    "x = x + 1.0",
    "x = torch.clamp(x, -1.0, 1.0)",
    "x = F.gelu(x)",
    "x = torch.tanh(x)",
    "x = torch.sigmoid(x)",
    "x = x * torch.sigmoid(x)",
    "x = F.hardswish(x)",
    "x = F.mish(x)",
    "x = x - x.mean()",
    "x = torch.softmax(x, dim=1)",
    "x = torch.logsumexp(x, dim=1, keepdim=True)",
    "x = x / (x.std() + 1e-5)",
    "x = torch.max(x, dim=1, keepdim=True)[0]",
)
# Normalisations and pooling that fit a head's rank (2: gemm and bmm-like, 4: 2-D, 5: 3-D).
LEVEL2_SHAPED = {
    2: ("self.n = nn.BatchNorm1d(2048)", "x = self.n(x)"),
    3: ("self.n = nn.LayerNorm(512)", "x = self.n(x)"),
    4: ("self.n = nn.GroupNorm(8, C)", "x = F.max_pool2d(self.n(x), 2)"),
    5: ("self.n = nn.GroupNorm(8, C)", "x = F.avg_pool3d(self.n(x), 2)"),
}


def level2() -> dict[str, str]:
    p: dict[str, str] = {}
    for i in range(99):
        name, head_init, head, x, rank = LEVEL2_HEADS[i % len(LEVEL2_HEADS)]
        tails = [LEVEL2_TAILS[(i * 7 + j * 3) % len(LEVEL2_TAILS)] for j in range(2 + i % 3)]
        init = head_init
        if i % 4 == 0:  # a normalisation or a pooling in the chain
            channels = {"conv2d": 64, "conv3d": 16, "convT2d": 16, "convT3d": 16}.get(name, 0)
            n_init, n_fwd = LEVEL2_SHAPED[rank]
            init += "\n" + n_init.replace("C", str(channels))
            tails.insert(1, n_fwd)
        forward = "\n".join([head, *tails, "return x"])
        label = "_".join(
            re.sub(r"[^a-z0-9]+", "", t.split("=", 1)[1].split("(")[0].split(".")[-1]) or "op"
            for t in tails[:3]
        )
        p[f"{i + 1}_{name}_{label}.py"] = problem(init, forward, f"[{x}]")
    # KernelBench level2/90's shapes (issue 29: the slowest of its level)
    p["100_conv3d_leakyrelu_sum_clamp_gelu.py"] = problem(
        "self.conv = nn.Conv3d(8, 64, 3)\nself.bias = nn.Parameter(torch.randn(64, 1, 1, 1))",
        "x = F.leaky_relu(self.conv(xs[0]), 0.2)\nx = torch.clamp(x + self.bias, -1.0, 1.0)\n"
        "return F.gelu(x)",
        f"[{rand(128, 8, 16, 64, 64)}]",
    )
    return p


FIRE = """class Fire(nn.Module):
    def __init__(self, c, s, e1, e3):
        super().__init__()
        self.s = nn.Conv2d(c, s, 1)
        self.e1 = nn.Conv2d(s, e1, 1)
        self.e3 = nn.Conv2d(s, e3, 3, padding=1)

    def forward(self, x):
        x = torch.relu(self.s(x))
        return torch.cat([torch.relu(self.e1(x)), torch.relu(self.e3(x))], 1)


"""
INCEPTION = """class Inception(nn.Module):
    def __init__(self, c, o1, r3, o3, r5, o5, pp):
        super().__init__()
        self.b1 = nn.Conv2d(c, o1, 1)
        self.b3 = nn.Sequential(nn.Conv2d(c, r3, 1), nn.Conv2d(r3, o3, 3, padding=1))
        self.b5 = nn.Sequential(nn.Conv2d(c, r5, 1), nn.Conv2d(r5, o5, 5, padding=2))
        self.bp = nn.Sequential(nn.MaxPool2d(3, 1, 1), nn.Conv2d(c, pp, 1))

    def forward(self, x):
        return torch.cat([self.b1(x), self.b3(x), self.b5(x), self.bp(x)], 1)


"""
BASIC = """class Basic(nn.Module):
    def __init__(self, c, o, stride):
        super().__init__()
        self.c1 = nn.Conv2d(c, o, 3, stride, 1, bias=False)
        self.n1 = nn.BatchNorm2d(o)
        self.c2 = nn.Conv2d(o, o, 3, 1, 1, bias=False)
        self.n2 = nn.BatchNorm2d(o)
        self.down = nn.Sequential(nn.Conv2d(c, o, 1, stride, bias=False), nn.BatchNorm2d(o))

    def forward(self, x):
        y = torch.relu(self.n1(self.c1(x)))
        return torch.relu(self.n2(self.c2(y)) + self.down(x))


"""
MBCONV = """class MBConv(nn.Module):
    def __init__(self, c, o, expand, stride):
        super().__init__()
        h = c * expand
        self.body = nn.Sequential(
            nn.Conv2d(c, h, 1, bias=False), nn.BatchNorm2d(h), nn.ReLU6(),
            nn.Conv2d(h, h, 3, stride, 1, groups=h, bias=False), nn.BatchNorm2d(h), nn.ReLU6(),
            nn.Conv2d(h, o, 1, bias=False), nn.BatchNorm2d(o),
        )

    def forward(self, x):
        return self.body(x)


"""
BLOCK = """class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.n1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.n2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.heads = heads

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.n1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.n2(x))


"""


def level3() -> dict[str, str]:
    p: dict[str, str] = {}

    def add(name: str, text: str) -> None:
        p[f"{len(p) + 1}_{name}.py"] = text

    def block(name: str, module: str, x: str, extra: str) -> None:
        """A network of one block: ``self.b = MODULE``, ``forward`` = ``self.b(x)``."""
        add(name, problem(f"self.b = {module}", "return self.b(xs[0])", x, extra=extra))

    for name, widths, batch in (
        ("mlp", [1000, 400, 800, 500], 128),
        ("shallow_wide_mlp", [1000, 2000, 2000, 10], 128),
        ("deep_narrow_mlp", [1000] + [50] * 16 + [10], 128),
    ):
        layers = ", ".join(f"nn.Linear({a}, {b}), nn.ReLU()" for a, b in zip(widths, widths[1:]))
        add(
            name,
            problem(
                f"self.net = nn.Sequential({layers})",
                "return self.net(xs[0])",
                f"[{rand(batch, widths[0])}]",
            ),
        )
    add(
        "lenet5",
        problem(
            "self.c1 = nn.Conv2d(1, 6, 5)\nself.c2 = nn.Conv2d(6, 16, 5)\nself.f1 = nn.Linear(400, 120)\nself.f2 = nn.Linear(120, 84)\nself.f3 = nn.Linear(84, 10)",
            "x = F.max_pool2d(torch.relu(self.c1(xs[0])), 2)\nx = F.max_pool2d(torch.relu(self.c2(x)), 2)\nx = x.flatten(1)\nreturn self.f3(torch.relu(self.f2(torch.relu(self.f1(x)))))",
            f"[{rand(4096, 1, 32, 32)}]",
        ),
    )
    for i, (c, hw, batch) in enumerate(((64, 112, 8), (128, 56, 16), (256, 28, 32))):
        add(
            f"vgg_block_{i}",
            problem(
                f"self.b = nn.Sequential(nn.Conv2d({c}, {c}, 3, padding=1), nn.ReLU(), nn.Conv2d({c}, {c}, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))",
                "return self.b(xs[0])",
                f"[{rand(batch, c, hw, hw)}]",
            ),
        )
    for i, (c, o, stride, hw, batch) in enumerate(
        ((64, 64, 1, 56, 16), (64, 128, 2, 56, 16), (128, 256, 2, 28, 16), (256, 512, 2, 14, 16))
    ):
        block(
            f"resnet_basic_{i}", f"Basic({c}, {o}, {stride})", f"[{rand(batch, c, hw, hw)}]", BASIC
        )
    for i, (c, s, e1, e3, hw) in enumerate(
        (
            (96, 16, 64, 64, 112),
            (128, 32, 128, 128, 56),
            (256, 48, 192, 192, 28),
            (512, 64, 256, 256, 28),
        )
    ):
        block(f"fire_{i}", f"Fire({c}, {s}, {e1}, {e3})", f"[{rand(16, c, hw, hw)}]", FIRE)
    # KernelBench level3/18's shapes: SqueezeNet 1.0, 64 images of 512x512 (issue 29)
    add(
        "squeezenet",
        problem(
            "self.features = nn.Sequential(\n    nn.Conv2d(3, 96, 7, stride=2), nn.ReLU(), nn.MaxPool2d(3, 2, ceil_mode=True),\n"
            "    Fire(96, 16, 64, 64), Fire(128, 16, 64, 64), Fire(128, 32, 128, 128),\n    nn.MaxPool2d(3, 2, ceil_mode=True),\n"
            "    Fire(256, 32, 128, 128), Fire(256, 48, 192, 192), Fire(384, 48, 192, 192), Fire(384, 64, 256, 256),\n"
            "    nn.MaxPool2d(3, 2, ceil_mode=True), Fire(512, 64, 256, 256),\n)\n"
            "self.head = nn.Sequential(nn.Conv2d(512, 1000, 1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))",
            "return torch.flatten(self.head(self.features(xs[0])), 1)",
            f"[{rand(64, 3, 512, 512)}]",
            extra=FIRE,
        ),
    )
    # KernelBench level3/6's shapes: an inception module, 480 channels, 10 images of 224x224
    block(
        "inception_module",
        "Inception(480, 192, 96, 208, 16, 48, 64)",
        f"[{rand(10, 480, 224, 224)}]",
        INCEPTION,
    )
    for i, (c, hw) in enumerate(((192, 28), (256, 28), (512, 14))):
        block(
            f"inception_{i}",
            f"Inception({c}, 64, 96, 128, 16, 32, 32)",
            f"[{rand(16, c, hw, hw)}]",
            INCEPTION,
        )
    for i, (c, o, e, s, hw) in enumerate(
        (
            (16, 24, 6, 2, 112),
            (24, 32, 6, 2, 56),
            (32, 64, 6, 2, 28),
            (64, 96, 6, 1, 14),
            (96, 160, 6, 2, 14),
        )
    ):
        block(f"mbconv_{i}", f"MBConv({c}, {o}, {e}, {s})", f"[{rand(16, c, hw, hw)}]", MBCONV)
    for i, (d, heads, t, batch) in enumerate(
        ((768, 12, 512, 8), (512, 8, 1024, 4), (1024, 16, 256, 8))
    ):
        block(f"transformer_block_{i}", f"Block({d}, {heads})", f"[{rand(batch, t, d)}]", BLOCK)
        add(
            f"attention_{i}",
            problem(
                f"self.a = nn.MultiheadAttention({d}, {heads}, batch_first=True)",
                "return self.a(xs[0], xs[0], xs[0], need_weights=False)[0]",
                f"[{rand(batch, t, d)}]",
            ),
        )
    for i, (kind, layers, hidden) in enumerate(
        (("LSTM", 2, 256), ("GRU", 2, 256), ("RNN", 1, 512), ("LSTM", 1, 512))
    ):
        add(
            f"{kind.lower()}_{i}",
            problem(
                f"self.r = nn.{kind}(128, {hidden}, num_layers={layers}, batch_first=True)\nself.fc = nn.Linear({hidden}, 10)",
                "y = self.r(xs[0])[0]\nreturn self.fc(y[:, -1, :])",
                f"[{rand(10, 512, 128)}]",
            ),
        )
    add(
        "unet_like",
        problem(
            "self.d1 = nn.Conv2d(8, 32, 3, padding=1)\nself.d2 = nn.Conv2d(32, 64, 3, padding=1)\nself.u = nn.ConvTranspose2d(64, 32, 2, stride=2)\nself.o = nn.Conv2d(64, 8, 1)",
            "a = torch.relu(self.d1(xs[0]))\nb = torch.relu(self.d2(F.max_pool2d(a, 2)))\nreturn torch.softmax(self.o(torch.cat([self.u(b), a], 1)), dim=-1)",
            f"[{rand(8, 8, 128, 256)}]",
        ),
    )
    add(
        "mini_gpt",
        problem(
            "self.e = nn.Embedding(8192, 512)\nself.b1 = Block(512, 8)\nself.b2 = Block(512, 8)\nself.h = nn.Linear(512, 8192)",
            "return self.h(self.b2(self.b1(self.e(xs[0]))))",
            "[torch.randint(0, 8192, (4, 512))]",
            extra=BLOCK,
        ),
    )
    i = 0
    while len(p) < 50:  # more blocks at other sizes
        c = 32 * (1 + i % 4)
        block(f"variant_{i}", f"Basic({c}, {2 * c}, 2)", f"[{rand(8, c, 64, 64)}]", BASIC)
        i += 1
    return p


def generate(root: str) -> int:
    count = 0
    for level, files in (("level1", level1()), ("level2", level2()), ("level3", level3())):
        os.makedirs(os.path.join(root, level), exist_ok=True)
        for name, text in files.items():
            with open(os.path.join(root, level, name), "w") as f:
                f.write(text)
            count += 1
    return count


def subset(
    suite: str, dest: str, only: list[str] | None, limit: int | None, problems: list[str] = ()
) -> None:
    """Links the chosen files of ``suite`` into ``dest`` (the same levels); ``problems``:
    ``level/N`` names, only those."""
    for level in sorted(os.listdir(suite)):
        if only and level not in only:
            continue
        names = sorted(os.listdir(os.path.join(suite, level)), key=lambda n: int(n.split("_")[0]))
        if problems:
            names = [n for n in names if f"{level}/{n.split('_')[0]}" in problems]
        if not names:
            continue
        os.makedirs(os.path.join(dest, level), exist_ok=True)
        for name in names[:limit]:
            os.symlink(
                os.path.abspath(os.path.join(suite, level, name)), os.path.join(dest, level, name)
            )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="folder for the suite and the results")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--hw", default="H100-SXM")
    p.add_argument("--only", help="levels, comma-separated (default all)")
    p.add_argument("--limit", type=int, help="the first N problems of each level")
    p.add_argument("--isolations", default="process,fork")
    p.add_argument("--timeout-s", default="600")
    p.add_argument("--problems", help="level/N names, comma-separated (level1/72,level2/100)")
    p.add_argument("--generate-only", action="store_true")
    p.add_argument(
        "--baseline",
        metavar="PYTHONPATH",
        help="also run each isolation with this PYTHONPATH (a previous build's, e.g. "
        "/work/main/build/dev/pkg), first, and print the ratio baseline / this build",
    )
    args = p.parse_args()
    suite = os.path.join(args.out, "suite")
    print(f"generated {generate(suite)} model files in {suite}")
    if args.generate_only:
        return 0
    chosen = suite
    if args.only or args.limit or args.problems:
        chosen = os.path.join(args.out, "chosen")
        if not os.path.isdir(chosen):
            only = args.only.split(",") if args.only else None
            problems = [n for n in (args.problems or "").split(",") if n]
            subset(suite, chosen, only, args.limit, problems)
    walls = {}
    runs = [(i, "") for i in args.isolations.split(",")]
    if args.baseline:
        runs = [(i, b) for i, _ in runs for b in ("-baseline", "")]
    for isolation, which in runs:
        name = isolation + which
        results = os.path.join(args.out, f"results-{name}")
        env = dict(os.environ)
        if which:
            env["PYTHONPATH"] = args.baseline
        cmd = [
            sys.executable,
            "-m",
            "solar",
            "bench",
            chosen,
            "--hw",
            args.hw,
            "--out",
            results,
            "--jobs",
            str(args.jobs),
            "--isolation",
            isolation,
            "--timeout-s",
            args.timeout_s,
        ]
        print("$", f"PYTHONPATH={args.baseline} " * bool(which) + " ".join(cmd), flush=True)
        start = time.perf_counter()
        subprocess.run(cmd, check=True, env=env)
        walls[name] = time.perf_counter() - start
        *rows, totals = json.load(open(os.path.join(results, "stages.json")))
        times = sorted(r["total_s"] for r in rows)
        slowest = sorted(rows, key=lambda r: -r["total_s"])[:5]
        spread = f"median {times[len(times) // 2]:.1f} s, max {times[-1]:.1f} s" if times else ""
        print(
            f"{name}: {walls[name]:.1f} s wall ({totals['run']} problems run, "
            f"{totals['run'] - len(rows)} timed out or failed); {spread}; slowest: "
            + ", ".join(f"{r['path']} {r['total_s']:.1f} s" for r in slowest),
            flush=True,
        )
    if args.baseline:
        for isolation, _ in runs[::2]:
            base, new = walls[isolation + "-baseline"], walls[isolation]
            print(f"ratio {isolation}-baseline / {isolation}: {base / new:.2f}")
    elif len(walls) == 2:
        a, b = walls.values()
        print(f"ratio {' / '.join(walls)}: {a / b:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
