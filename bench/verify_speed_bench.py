"""The two costs of a verification that dominated issue 29's suite tail, this build against a
baseline build in the same run (bench/README.md, "Verification time"):

1. SOLAR's executor on KernelBench level1/72's transposed convolution at batch 1 (the lowered
   scatter kernel, written here: ConvTranspose3d 32->32, kernel 3x5x7, stride 2, groups 4,
   x[1, 32, 12, 24, 48]: 4 x 8 x 8 x (12 x 24 x 48) x 105 = 371,589,120 MACs), by ``solar ir
   run --random-inputs`` of each build; the two outputs are compared byte for byte.
2. ``compare_output`` of a 16384 x 4096 f32 output (67,108,864 elements) against itself, as
   whole-program verification compares a large elementwise output.

    python3 bench/verify_speed_bench.py OUT/ --baseline /work/main/build/dev [--build build/dev]
"""

from __future__ import annotations

import argparse
import filecmp
import os
import subprocess
import sys
import time

CONVT = """input x : f32[1, 32, 12, 24, 48]
weight w : f32[32, 8, 3, 5, 7]
output y : f32[1, 32, 25, 51, 101]
kernel convt {
  for b in 0..1, g in 0..4, oc in 0..8, x0 in 0..12, k0 in 0..3, x1 in 0..24, k1 in 0..5, x2 in 0..48, k2 in 0..7, ic in 0..8:
    y[b, 8*g + oc, 2*x0 + k0, 2*x1 + k1, 2*x2 + k2] += x[b, 8*g + ic, x0, x1, x2] * w[8*g + ic, oc, k0, k1, k2]
}
"""

COMPARE = """
import time, numpy as np
from solar.verify.whole import compare_output
y = np.random.default_rng(0).random((16384, 4096), dtype=np.float32)
z = y.copy()
t = time.perf_counter()
assert compare_output("y", "f32", z, y)["passed"]
print(time.perf_counter() - t)
"""


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--baseline", required=True, help="the baseline's build folder")
    p.add_argument("--build", default="build/dev")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    ir = os.path.join(args.out, "convt.ir")
    with open(ir, "w") as f:
        f.write(CONVT)
    times: dict[str, dict[str, float]] = {}
    for name, build in (("baseline", args.baseline), ("this", args.build)):
        out = os.path.join(args.out, f"{name}.npz")
        cmd = [os.path.join(build, "solar"), "ir", "run", ir, "--random-inputs", "--out", out]
        start = time.perf_counter()
        subprocess.run(cmd, check=True)
        run_s = time.perf_counter() - start
        env = dict(os.environ, PYTHONPATH=os.path.join(build, "pkg"))
        compare_s = float(
            subprocess.run(
                [sys.executable, "-c", COMPARE], env=env, check=True, capture_output=True, text=True
            ).stdout
        )
        times[name] = {"executor": run_s, "compare": compare_s}
        print(
            f"{name}: transposed conv {run_s:.2f} s, compare_output {compare_s:.2f} s", flush=True
        )
    same = filecmp.cmp(*(os.path.join(args.out, f"{n}.npz") for n in times), shallow=False)
    print(f"outputs identical: {same}")
    for stage in ("executor", "compare"):
        print(
            f"ratio baseline / this, {stage}: {times['baseline'][stage] / times['this'][stage]:.1f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
