"""Benchmark of the PyTorch frontend (issue 4): capture + lower + verify + analyse of a
ResNet-50-sized CNN and a 24-layer transformer through solar's Python API, next to
torch.utils.flop_counter.FlopCounterMode on the same model in the same run, and capture of a
2-billion-parameter transformer built with FakeTensors (no memory for its weights).

    export PYTHONPATH=$(scripts/dev-python.sh build-bench-py)
    python3 bench/frontend_bench.py [--only resnet50,transformer24,capture2b]
                                    [--verify-mode auto|per_op|whole_program] [--hw H100-SXM]

The models are the test models tests/python/models/resnet.py and transformer_stack.py at full
size. See bench/README.md for what is timed and the results.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import resource
import sys
import time
from pathlib import Path

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from solar import _core, stages
from solar import torch as solar_torch
from solar._modelfile import import_model_file
from solar.torch.capture import capture

MODELS = Path(__file__).resolve().parent.parent / "tests" / "python" / "models"

# ResNet-50's shape: 7x7 stride-2 stem (64 channels), bottleneck blocks [3, 4, 6, 3] of widths
# [64, 128, 256, 512] (expansion 4), 1000 classes, one 224x224 image.
RESNET50 = dict(stem=64, widths=[64, 128, 256, 512], blocks=[3, 4, 6, 3], num_classes=1000,
                stem_kernel=7, stem_stride=2)  # fmt: skip
RESNET50_INPUT = (1, 3, 224, 224)
# Convolution and fc MACs of that network by hand (N = 1):
#   stem 7x7/2, 3->64, 112x112 out: 112*112*64*3*49                          =   118,013,952
#   stage 1, 56x56: block 1: 1x1 64->64 12,845,056 + 3x3 64->64 115,605,504
#     + 1x1 64->256 51,380,224 + shortcut 64->256 51,380,224 = 231,211,008; blocks 2-3:
#     1x1 256->64 51,380,224 + 115,605,504 + 51,380,224 = 218,365,952 each  =   667,942,912
#   stage 2, 28x28: block 1: 1x1 256->128 on 56x56 102,760,448 + 3x3/2 128->128
#     28*28*128*128*9 = 115,605,504 + 1x1 128->512 51,380,224 + shortcut 256->512/2
#     102,760,448 = 372,506,624; blocks 2-4: 218,365,952 each (same pattern) = 1,027,604,480
#   stage 3, 14x14: 372,506,624 + 5 * 218,365,952                            = 1,464,336,384
#   stage 4, 7x7:   372,506,624 + 2 * 218,365,952                            =   809,238,528
#   fc 2048->1000                                                            =     2,048,000
#   total                                                                    = 4,089,184,256
RESNET50_CONV_FC_MACS = 4_089_184_256
# Elements of every batch norm's input (SOLAR counts 1 MAC each for the variance): stem
# 64*112*112 = 802,816; stage 1 (3136 positions): 2,007,040 + 2 * 1,204,224 = 4,415,488;
# stage 2: 1,304,576 + 3 * 602,112 = 3,110,912; stage 3: 652,288 + 5 * 301,056 = 2,157,568;
# stage 4: 326,144 + 2 * 150,528 = 627,200; total
RESNET50_NORM_MACS = 11_113_984

# 24 pre-norm layers, width 1024, 16 heads, SwiGLU feed-forward of 2816 (about 8/3 x 1024,
# rounded to a multiple of 256), causal attention over 512 tokens, batch 1.
TRANSFORMER24 = dict(d_model=1024, n_heads=16, d_ff=2816, n_layers=24)
TRANSFORMER24_INPUT = (1, 512, 1024)
# Matmul MACs by hand, per layer (T = 512, E = 1024, F = 2816): q, k, v, o: 4*T*E*E =
# 2,147,483,648; q k^T and p v over the causal triangle (query i sees keys 0..i: T*(T+1)/2 =
# 131,328 pairs): 2*131,328*E = 268,959,744; w1, w3, w2: 3*T*E*F = 4,429,185,024; per layer
# 6,845,628,416; 24 layers:
TRANSFORMER24_MATMUL_MACS = 164_295_081_984
# FlopCounterMode counts the full square of attention (2*T*T*E = 536,870,912 per layer): it is
# 24 * (536,870,912 - 268,959,744) = 6,429,868,032 MACs above the causal count.
# Layer norms: 2 per layer + the final one, 49 * T*E = 49 * 524,288
TRANSFORMER24_NORM_MACS = 25_690_112

# 2 billion parameters: 30 layers of width 2048 (16 heads), SwiGLU 8192. Per layer:
# q, k, v, o 4*2048^2 = 16,777,216 + o's bias 2048 + w1, w3, w2 3*2048*8192 = 50,331,648 +
# 2 layer norms 4*2048 = 8192: 67,119,104; 30 layers + final norm (4096): 2,013,577,216
# parameters, 8.05 GB in fp32.
BIG = dict(d_model=2048, n_heads=16, d_ff=8192, n_layers=30)
BIG_INPUT = (1, 512, 2048)
BIG_PARAMS = 2_013_577_216


def model_class(file: str):
    module = import_model_file(str(MODELS / file), "_bench_" + Path(file).stem, RuntimeError)
    return module.Model


def build(file: str, kwargs: dict, input_shape: tuple, fake: bool = False):
    torch.manual_seed(0)
    if not fake:
        return model_class(file)(**kwargs), (torch.randn(*input_shape),)
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode(allow_non_fake_inputs=True):
        return model_class(file)(**kwargs), (torch.randn(*input_shape),)


def timed(f):
    start = time.perf_counter()
    value = f()
    return value, time.perf_counter() - start


def flop_counter(model, inputs) -> tuple[int, float]:
    """FlopCounterMode's FLOPs of one forward and the seconds it took. SDPA runs its math form:
    on the CPU the fused kernel has no flop formula (it would count 0)."""

    def run():
        with torch.no_grad(), sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as c:
            model(*inputs)
        return c.get_total_flops()

    return timed(run)


def bench_model(
    name: str, file: str, kwargs: dict, input_shape: tuple, hand: tuple[int, int], args
) -> None:
    print(f"== {name}: {file} {kwargs}, input {list(input_shape)}", flush=True)
    model, inputs = build(file, kwargs, input_shape)
    params = sum(p.numel() for p in model.parameters())
    with torch.no_grad(), sdpa_kernel(SDPBackend.MATH):
        _, t_warm = timed(lambda: model(*inputs))  # one-time kernel set-up, not counted
    flops, t_fc = flop_counter(model, inputs)
    print(f"  parameters: {params:,}; one plain forward (warm-up, untimed below): {t_warm:.2f} s")
    print(f"  FlopCounterMode: {flops // 2:,} MACs in {t_fc:.2f} s")
    cap, t_cap = timed(lambda: capture(model, inputs, source=file))
    print(f"  capture: {t_cap:.2f} s ({len(cap.document['nodes'])} ATen nodes)", flush=True)
    lowered, t_lower = timed(lambda: stages.lower_detailed(cap.to_json()))
    print(f"  lower (alone): {t_lower:.2f} s ({len(lowered.ir):,} characters of IR)")

    def golden(wanted):
        return cap.golden(model, inputs, wanted)

    options = {"verify_mode": args.verify_mode}
    report, t_rest = timed(
        lambda: solar_torch.analyze_capture(cap, golden, args.hw, None, **options)
    )
    v = report.verification
    total = t_cap + t_rest
    macs = report.data["totals"]["macs"]
    print(f"  lower + verify + analyse: {t_rest:.2f} s; verification {v['status']} "
          f"({v.get('mode')}: {v['detail']})")  # fmt: skip
    if v.get("why"):
        print(f"    mode chosen because {v['why']}")
    print(f"  MACs: SOLAR {macs:,}; by hand {hand[0]:,} matmul/conv + {hand[1]:,} normalisation"
          f" = {sum(hand):,}; FlopCounterMode {flops // 2:,} (no normalisation; causal"
          " attention counted in full)")  # fmt: skip
    print(
        f"  SOLAR capture + lower + verify + analyse: {total:.2f} s; FlopCounterMode "
        f"{t_fc:.2f} s; ratio SOLAR / FlopCounterMode = {total / t_fc:.1f}x",
        flush=True,
    )


def bench_capture_big(args) -> None:
    print(f"== capture2b: transformer_stack.py {BIG}, input {list(BIG_INPUT)}, FakeTensors")
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    (model, inputs), t_build = timed(lambda: build("transformer_stack.py", BIG, BIG_INPUT, True))
    params = sum(p.numel() for p in model.parameters())
    print(f"  parameters: {params:,} (by hand {BIG_PARAMS:,}; {4 * params / 1e9:.2f} GB fp32); "
          f"built in {t_build:.2f} s")  # fmt: skip
    cap, t_cap = timed(lambda: capture(model, inputs, source="transformer_stack.py"))
    print(f"  capture: {t_cap:.2f} s ({len(cap.document['nodes'])} ATen nodes)")
    lowered, t_lower = timed(lambda: stages.lower_detailed(cap.to_json()))
    print(f"  lower: {t_lower:.2f} s")
    report, t_sol = timed(lambda: stages.analyze(lowered.ir, args.hw, _core.AnalysisOptions()))
    data = json.loads(report.to_json())
    print(f"  analyse (sol, not verified): {t_sol:.2f} s, {data['totals']['macs']:,} MACs")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    print(
        f"  peak resident memory of this process: {rss:.2f} GB (was {rss0:.2f} GB before); "
        f"build + capture {t_build + t_cap:.2f} s",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default="resnet50,transformer24,capture2b")
    p.add_argument("--verify-mode", default="auto", choices=["auto", "per_op", "whole_program"])
    p.add_argument("--hw", default="H100-SXM")
    args = p.parse_args(argv)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; solar analyze_capture"
          f"{inspect.signature(solar_torch.analyze_capture)}")  # fmt: skip
    print(f"load average (1 min) at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    for name in args.only.split(","):
        if name == "resnet50":
            bench_model(name, "resnet.py", RESNET50, RESNET50_INPUT,
                        (RESNET50_CONV_FC_MACS, RESNET50_NORM_MACS), args)  # fmt: skip
        elif name == "transformer24":
            bench_model(name, "transformer_stack.py", TRANSFORMER24, TRANSFORMER24_INPUT,
                        (TRANSFORMER24_MATMUL_MACS, TRANSFORMER24_NORM_MACS), args)  # fmt: skip
        elif name == "capture2b":
            bench_capture_big(args)
        else:
            p.error(f"unknown benchmark '{name}' (resnet50, transformer24, capture2b)")
    print(f"load average (1 min) at the end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
