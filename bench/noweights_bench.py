"""The no-weight serving path at full size (issue 27; docs/serving.md, "No weight memory"): one
``solar analyze --serve decode`` of a model file (default: bench/models/llama3_70b.py, batch 1,
context 8192, H200-SXM), timed in a child process with its peak resident memory; next to it,
FlopCounterMode under FakeTensorMode on the same decode step (the same model built without
weights, the same inputs), timed and counted. Not a test: run it by hand, quote the command.

    export PYTHONPATH=...; python3 bench/noweights_bench.py [--model PATH] [--batch B]
        [--context T] [--hw HW] [--no-verify]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


CHILD = """
import json, sys
from solar.torch import serve
model, batch, context, hw, verify = sys.argv[1:6]
served = serve.analyze_serving(
    model, "decode", [int(batch)], int(context), hw=hw, verify=verify == "1"
)
print(served.table)
print(json.dumps({"serving": served.data, "totals": served.steps[0].data["totals"]}))
"""


def solar_run(model: str, batch: int, context: int, hw: str, verify: bool) -> dict:
    """The serving analysis (what ``solar analyze MODEL --serve decode`` runs) in a child
    process: wall and CPU seconds, peak RSS, the serving JSON and the step's totals."""
    argv = [
        sys.executable,
        "-c",
        CHILD,
        model,
        str(batch),
        str(context),
        hw,
        "1" if verify else "0",
    ]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"solar failed: {done.stderr.strip()[-2000:]}")
    data = json.loads(done.stdout.strip().splitlines()[-1])
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": wall, "cpu_s": cpu, "peak_rss": after.ru_maxrss * 1024, **data}


def flop_counter(model: str, batch: int, context: int) -> dict:
    """FlopCounterMode on the decode step SOLAR builds, under the FakeTensorMode of the model
    built without weights: seconds (build + run) and FLOPs."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    from solar.torch import serve

    start = time.perf_counter()
    decoder = serve.load_decoder(model, weights=False)
    step = decoder.step("decode", batch, context)
    counter = FlopCounterMode(display=False)
    # The math SDPA: the fused CPU kernel has no flop formula (bench/README.md).
    with decoder.mode, torch.no_grad(), sdpa_kernel(SDPBackend.MATH), counter:
        step.module(*step.inputs)
    return {"seconds": time.perf_counter() - start, "flops": counter.get_total_flops()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=os.path.join(HERE, "models", "llama3_70b.py"))
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--context", type=int, default=8192)
    parser.add_argument("--hw", default="H200-SXM")
    parser.add_argument("--no-verify", action="store_true")
    args = parser.parse_args()
    run = solar_run(args.model, args.batch, args.context, args.hw, not args.no_verify)
    row = run["serving"]["rows"][0]
    fused = row["fidelities"]["fused"]
    print(
        f"model {os.path.basename(args.model)}: decode, batch {args.batch}, context "
        f"{args.context}, {args.hw}"
    )
    print(
        f"solar analyze --serve: wall {run['wall_s']:.1f} s, CPU {run['cpu_s']:.1f} s, "
        f"peak RSS {run['peak_rss'] / 1e9:.2f} GB"
    )
    print(
        f"  fused bytes {fused['bytes']:,}, step {fused['step_s'] * 1e3:.2f} ms "
        f"({fused['bottleneck']} bound)"
    )
    print(f"  SOLAR FLOPs {run['totals']['flops']:,}")
    print(f"  verification: {row['verification']['status']}: {row['verification']['detail']}")
    start_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    fc = flop_counter(args.model, args.batch, args.context)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(
        f"FlopCounterMode under FakeTensorMode: {fc['seconds']:.1f} s, "
        f"{fc['flops']:,} FLOPs, peak RSS {max(rss, start_rss) / 1e9:.2f} GB"
    )


if __name__ == "__main__":
    main()
