"""Benchmark of large graphs (issue: "6-layer LSTM over 512 steps did not finish"): each stage of
SOLAR timed on big models and on synthetic 100k-node IR programs, next to a peer in the same run.

    export PYTHONPATH=$(scripts/dev-python.sh build/main)
    python3 bench/large_graphs.py [--only ir,resnet50,transformer24,lstm6,gru6,lstm6_bidir]
                                  [--solar build/main/solar] [--hw H100-SXM] [--nodes 100000]

ir: bench/gen_large_ir.py writes two programs of about --nodes nodes (an LSTM stack written in the
IR, and a chain of small matmuls); the `solar` binary times `solar lift` (parse + check + lift),
then `solar sol --fidelity F` for unfused, fused, cache and all (each includes the lift). The peer
is the lift in the same run: analysis time / lift time, and the target is absolute (under 5 s for
lift + all three fidelities).

torch models (bench/models/*.py, model files as `solar analyze` takes them): capture
(solar.torch.capture.capture), lower (stages.lower_detailed), verify (frontend's per-op or
whole-program verification, as analyze_capture chooses it), then the `sol` analysis once per
fidelity and once with all three, each through solar.stages.analyze as `solar analyze` runs it;
the peer is torch.utils.flop_counter.FlopCounterMode on one forward of the same model (after an
untimed warm-up forward). Printed: each stage's seconds and (capture + lower + verify + analyse)
/ FlopCounterMode. `--e2e` also runs `python3 -m solar analyze FILE` as a subprocess and times it.

Times are wall-clock seconds on this machine (time.perf_counter); the process CPU time of each
`solar` subprocess is printed next to it (the development machine is shared: CPU time is the
steadier number). Results: bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODELS = HERE / "models"
TORCH_MODELS = ["resnet50", "transformer24", "lstm6", "gru6", "lstm6_bidir"]
FIDELITIES = ["unfused", "fused", "cache", "all"]


def timed(f):
    start = time.perf_counter()
    value = f()
    return value, time.perf_counter() - start


def run_solar(solar: str, args: list[str], timeout: float) -> tuple[float, float, str]:
    """(wall s, CPU s of the child, status) of one `solar` command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    try:
        subprocess.run([solar, *args], check=True, stdout=subprocess.DEVNULL, timeout=timeout)
        status = "ok"
    except subprocess.TimeoutExpired:
        status = f"timed out after {timeout:g} s"
    except subprocess.CalledProcessError as e:
        status = f"failed ({e.returncode})"
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, status


def bench_ir(args) -> None:
    sys.path.insert(0, str(HERE))
    import gen_large_ir

    steps_lstm = max(1, (args.nodes - 12) // (8 * 6))
    programs = {
        "lstm-ir": gen_large_ir.lstm(6, steps_lstm, 4, 32, 32),
        "chain-ir": gen_large_ir.chain(max(1, (args.nodes - 1) // 4), 4, 32),
    }
    with tempfile.TemporaryDirectory(prefix="solar-bench-") as tmp:
        for name, text in programs.items():
            path = os.path.join(tmp, name + ".ir")
            with open(path, "w") as f:
                f.write(text)
            print(f"== {name}: {text.splitlines()[0].removeprefix('# generated: ')}", flush=True)
            lift_wall, lift_cpu, status = run_solar(args.solar, ["lift", path], args.timeout)
            print(
                f"  lift (parse + check + lift): {lift_wall:.2f} s ({lift_cpu:.2f} s CPU) {status}"
            )
            for fid in FIDELITIES:
                wall, cpu, status = run_solar(
                    args.solar, ["sol", path, "--hw", args.hw, "--fidelity", fid], args.timeout
                )
                print(f"  sol --fidelity {fid:7s} {wall:7.2f} s ({cpu:.2f} s CPU) {status}; "
                      f"/ lift = {wall / lift_wall:.1f}x"
                      + ("; target under 5 s" if fid == "all" else ""), flush=True)  # fmt: skip


def bench_torch(name: str, args) -> None:
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    from solar import _core, stages
    from solar import torch as solar_torch
    from solar._modelfile import import_model_file
    from solar.torch.capture import capture

    path = MODELS / f"{name}.py"
    module = import_model_file(str(path), "_bench_" + name, RuntimeError)
    torch.manual_seed(0)
    model = module.Model(*module.get_init_inputs())
    inputs = tuple(module.get_inputs())
    print(f"== {name}: {path.relative_to(HERE.parent)}", flush=True)
    with torch.no_grad(), sdpa_kernel(SDPBackend.MATH):
        _, t_warm = timed(lambda: model(*inputs))

    def flops():
        with torch.no_grad(), sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as c:
            model(*inputs)
        return c.get_total_flops()

    fc, t_fc = timed(flops)
    print(f"  warm-up forward {t_warm:.2f} s; FlopCounterMode {fc // 2:,} MACs in {t_fc:.2f} s")
    cap, t_cap = timed(lambda: capture(model, inputs, source=path.name))
    print(f"  capture: {t_cap:.2f} s ({len(cap.document['nodes'])} ATen nodes)", flush=True)
    lowered, t_lower = timed(lambda: stages.lower_detailed(cap.to_json()))
    ir_text = lowered.ir
    print(f"  lower: {t_lower:.2f} s ({len(ir_text):,} characters of IR)", flush=True)

    def golden(wanted):
        return cap.golden(model, inputs, wanted)

    # The verification alone: analyze_capture with the analysis of one cheap fidelity, minus
    # that analysis timed apart.
    unfused = _core.AnalysisOptions(fidelity="unfused")
    (_, t_unf_alone) = timed(lambda: stages.analyze(ir_text, args.hw, unfused))
    report, t_lva = timed(lambda: solar_torch.analyze_capture(cap, golden, args.hw, None,
                                                              fidelity="unfused"))  # fmt: skip
    v = report.verification
    t_verify = max(0.0, t_lva - t_lower - t_unf_alone)
    print(f"  verify: about {t_verify:.2f} s ({v['status']}, {v.get('mode')}: {v['detail']}); "
          f"analyze_capture --fidelity unfused {t_lva:.2f} s", flush=True)  # fmt: skip
    t_sol = {}
    for fid in FIDELITIES:
        options = _core.AnalysisOptions(fidelity=fid)
        report, t_sol[fid] = timed(lambda: stages.analyze(ir_text, args.hw, options))
        data = json.loads(report.to_json())
        print(f"  sol --fidelity {fid:7s} {t_sol[fid]:7.2f} s", flush=True)
    total = t_cap + t_lower + t_verify + t_sol["all"]
    print(f"  capture + lower + verify + analyse (all fidelities): {total:.2f} s; FlopCounterMode "
          f"{t_fc:.2f} s; ratio {total / t_fc:.1f}x (target 3x)", flush=True)  # fmt: skip
    if args.e2e:
        start = time.perf_counter()
        rc = subprocess.run([sys.executable, "-m", "solar", "analyze", str(path), "--hw", args.hw],
                            stdout=subprocess.DEVNULL, timeout=args.timeout).returncode  # fmt: skip
        print(f"  python3 -m solar analyze: {time.perf_counter() - start:.2f} s (exit {rc})")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default="ir," + ",".join(TORCH_MODELS))
    p.add_argument("--solar", default="build/main/solar", help="the solar binary (ir benchmarks)")
    p.add_argument("--hw", default="H100-SXM")
    p.add_argument("--nodes", type=int, default=100_000, help="size of the generated IR programs")
    p.add_argument("--timeout", type=float, default=600, help="per solar command, seconds")
    p.add_argument("--e2e", action="store_true", help="also time `python3 -m solar analyze FILE`")
    args = p.parse_args(argv)
    print(f"load average (1 min) at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    for name in args.only.split(","):
        if name == "ir":
            bench_ir(args)
        elif name in TORCH_MODELS:
            bench_torch(name, args)
        else:
            p.error(f"unknown benchmark '{name}' (ir, {', '.join(TORCH_MODELS)})")
    print(f"load average (1 min) at the end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
