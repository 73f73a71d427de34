"""The cost of a kernel-benchmark definition per workload (docs/benchmarks.md; issue 28 item 2).

A bfloat16 GEMM definition (N = 1024, K = 512 const, M var) with ``--workloads W`` workloads
(M = 16, 32, ..., 16 W) is written to a temporary folder and analysed as ``solar analyze``
does: captured once with M symbolic and bound to each workload (``--alone``: one capture per
workload, as before issue 28 item 2); the script prints the seconds of each stage summed over
the workloads, the captures made, the time of the first workload alone, and the ratio of all W
to one (target <= 3 for W = 20).

    export PYTHONPATH=$PWD/build/dev/pkg
    python3 bench/definition_bench.py [--workloads 20] [--alone] [--no-verify] [--hw H100-SXM]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

from solar.options import Options
from solar.stages import STAGES
from solar.suites import definition as fmt
from solar.torch import definition as definition_capture

DEFINITION = {
    "name": "bench_gemm_bf16_n1024_k512",
    "axes": {
        "M": {"type": "var"},
        "N": {"type": "const", "value": 1024},
        "K": {"type": "const", "value": 512},
    },
    "inputs": {
        "A": {"shape": ["M", "K"], "dtype": "bfloat16"},
        "B": {"shape": ["N", "K"], "dtype": "bfloat16"},
    },
    "outputs": {"C": {"shape": ["M", "N"], "dtype": "bfloat16"}},
    "reference": "import torch\n\ndef run(A, B):\n    return A @ B.t()\n",
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workloads", type=int, default=20)
    p.add_argument("--alone", action="store_true", help="one capture per workload")
    p.add_argument("--no-verify", action="store_true")
    p.add_argument("--hw", default="H100-SXM")
    args = p.parse_args()
    options = Options.of(args.hw, verify=not args.no_verify)
    with tempfile.TemporaryDirectory() as folder:
        with open(os.path.join(folder, "definition.json"), "w") as f:
            json.dump(DEFINITION, f)
        with open(os.path.join(folder, "workload.jsonl"), "w") as f:
            for i in range(1, args.workloads + 1):
                inputs = {"A": {"type": "random"}, "B": {"type": "random"}}
                f.write(json.dumps({"uuid": f"m{16 * i}", "axes": {"M": 16 * i}, "inputs": inputs}))
                f.write("\n")
        problem = fmt.load(folder)
        namespace = definition_capture.reference_namespace(problem.definition)
        captures = definition_capture.Captures(
            problem.definition, problem.workloads, namespace, once=not args.alone
        )
        times: dict[str, float] = {}
        seconds = []
        for workload in problem.workloads:
            start = time.perf_counter()
            definition_capture.analyse_workload(
                problem.definition, workload, namespace, options, times, captures
            )
            seconds.append(time.perf_counter() - start)
    total = sum(seconds)
    how = "one capture each" if args.alone else "captured once, bound to each"
    print(f"{len(seconds)} workload(s), {how}, on {args.hw}: {captures.count} capture(s)")
    for stage in STAGES:
        print(f"  {stage:<13}{times.get(stage, 0.0):8.2f} s")
    print(f"  {'total':<13}{total:8.2f} s")
    print(f"first workload alone: {seconds[0]:.2f} s; all / first: {total / seconds[0]:.1f}")


if __name__ == "__main__":
    main()
