"""SOL against real runs on a GPU (issue 12): for every model file of a folder, SOLAR's three SOL
times next to the measured times of PyTorch eager and torch.compile, with every violation of the
promise that a bound is never above a real run.

    export PYTHONPATH=$(scripts/dev-python.sh build/gpu-py)
    python3 bench/gpu_validate.py DIR [--hw NAME] [--iters 50] [--budget-s 12] [--verify]
                                  [--out table.md] [--json table.json]
    python3 bench/gpu_validate.py DIR --device cpu     # no GPU: wall clock, no compile

Two phases. First every problem is analysed by ``solar analyze FILE --hw HW --json`` in its own
process (``--jobs`` at once, verification off unless ``--verify``, killed after ``--budget-s``).
Then each problem is timed in this process, one after another: the model and inputs built as
for capture (``torch.manual_seed(0)``, in the mode the file builds them), moved to the device,
run under ``torch.no_grad()``: ``--warmup`` untimed runs, then ``--iters`` timed runs (at least
50), median. On CUDA the L2 is flushed before each timed run by writing a buffer of twice its
size, and CUDA events are recorded around the run alone (the flush outside them); eager first,
then ``torch.compile(model)`` (a model that fails to compile is reported, not fatal). Eager and
compile of one problem share one time budget (``--budget-s``, an alarm). On the CPU the wall
clock is read around each run, there is no flush, and compile is skipped unless ``--compile``.

``--warm`` times warm-cache runs instead: no flush, the runs back to back on the same inputs (what
most benchmark loops do), and the analyses use ``--cache-state warm`` (docs/cache-state.md), the
bound of that kind of run. The cold default and ``--warm`` are two different promises; the
environment records which one a table checks (``cache_state``).

The checks (``violations``): the unfused SOL must be at most the eager time; the fused and the
cache-aware SOL must be at most both the eager and the compile time. A SOL above a median time is
a violation. The script measures: it exits 0 with violations, 1 only on a usage error.

bench/README.md describes the flags, the columns and the results.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

MIN_ITERS = 50
FIDELITIES = ("unfused", "fused", "cache_aware")  # the report's sol.<fidelity>_s keys
KINDS = ("eager", "compile")
# (fidelity, timing) pairs whose SOL must not be above the timing: eager runs each ATen op as its
# own kernel(s), so the unfused bound is checked against it; compile fuses, so only the fused
# bounds are. (An unfused violation can also be one ATen kernel doing in one pass what the
# lowering splits into nodes, e.g. addmm; bench/README.md.)
CHECKS = (
    ("unfused", "eager"),
    ("fused", "eager"),
    ("fused", "compile"),
    ("cache_aware", "eager"),
    ("cache_aware", "compile"),
)
FIDELITY_WORDS = {"unfused": "unfused", "fused": "fused", "cache_aware": "cache-aware"}

# GPU names (as torch.cuda.get_device_name gives them) -> SOLAR's built-in device: every word of
# the key must appear in the name, none of the excluded ones; the first match wins. Variants with
# other memory (H100 NVL, GH200, A100 40GB SXM, ...) match nothing and need --hw.
GPU_NAMES = (
    (("GH200",), (), None),
    (("H200",), ("NVL",), "H200-SXM"),
    (("H100", "PCIE"), (), "H100-PCIe"),
    (("H100",), ("NVL",), "H100-SXM"),
    (("GB200",), (), "GB200"),
    (("B200",), (), "B200"),
    (("A100", "PCIE", "40GB"), (), "A100-PCIe-40GB"),
    (("A100", "SXM", "80GB"), (), "A100-SXM-80GB"),
    (("L40S",), (), "L40S"),
    (("L4",), (), "L4"),
    (("A6000",), ("ADA",), "A6000"),
    (("4090",), (), "RTX-4090"),
    (("MI300X",), (), "MI300X"),
    (("MI355X",), (), "MI355X"),
)


class UsageError(ValueError):
    """A bad folder, option or device: one line, exit status 1."""


class BudgetExceeded(BaseException):  # noqa: N818
    """The problem's time budget ran out (raised by the alarm). A BaseException, so that no
    ``except Exception`` inside torch swallows it."""


# ---------------------------------------------------------------------------------------------
# Pure functions: the checks, the device name, formatting (no torch; unit-tested).


def violations(sol_s: dict, measured_s: dict) -> list[dict]:
    """Every check of ``CHECKS`` whose SOL is above its timing: ``{fidelity, timing, sol_s,
    measured_s, ratio}`` (ratio = measured / SOL, below 1). A missing number checks nothing."""
    found = []
    for fidelity, kind in CHECKS:
        sol, measured = sol_s.get(fidelity), measured_s.get(kind)
        if sol is None or measured is None:
            continue
        if sol > measured:
            found.append(
                {
                    "fidelity": fidelity,
                    "timing": kind,
                    "sol_s": sol,
                    "measured_s": measured,
                    "ratio": measured / sol if sol > 0 else None,
                }
            )
    return found


def ratios(sol_s: dict, measured_s: dict) -> dict:
    """``{"eager/unfused": measured / SOL, ...}`` for every timing and fidelity with both numbers
    (None where the SOL is 0)."""
    out = {}
    for kind in KINDS:
        for fidelity in FIDELITIES:
            sol, measured = sol_s.get(fidelity), measured_s.get(kind)
            if sol is not None and measured is not None:
                out[f"{kind}/{fidelity}"] = measured / sol if sol > 0 else None
    return out


def default_hw(gpu_name: str, builtins: Sequence[str]) -> str | None:
    """The built-in device file for a GPU name (``GPU_NAMES``), if it is one of ``builtins``."""
    words = gpu_name.upper().replace("-", " ").replace("_", " ").split()
    text = " ".join(words)
    for need, exclude, hw in GPU_NAMES:
        if all(_has_word(text, words, w) for w in need) and not any(w in words for w in exclude):
            return hw if hw in builtins else None
    return None


def _has_word(text: str, words: list[str], wanted: str) -> bool:
    # "L4" must be a word of its own (not the L4 of "L40S"); longer keys may sit inside a word
    # ("A100-SXM4-80GB" holds SXM).
    return wanted in words or (len(wanted) > 2 and wanted in text)


def summary(problems: list[dict]) -> dict:
    """Counts over the problems: analysed, timed per kind, violations per check and per
    fidelity (problems with at least one violating check of that fidelity)."""
    per_check = {f"{f}>{k}": 0 for f, k in CHECKS}
    per_fidelity = {f: 0 for f in FIDELITIES}
    with_violation = 0
    for p in problems:
        found = p["violations"]
        for v in found:
            per_check[f"{v['fidelity']}>{v['timing']}"] += 1
        for f in {v["fidelity"] for v in found}:
            per_fidelity[f] += 1
        with_violation += 1 if found else 0
    return {
        "problems": len(problems),
        "analysed": sum(1 for p in problems if p["analysis"].get("sol_s")),
        "timed": {k: sum(1 for p in problems if p["timings"][k].get("median_s")) for k in KINDS},
        "violations": per_check,
        "violations_by_fidelity": per_fidelity,
        "problems_with_violations": with_violation,
    }


def fmt_time(seconds: float | None) -> str:
    """Four significant digits in ns, us, ms or s; ``-`` for None."""
    if seconds is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if abs(seconds) >= scale or unit == "ns":
            return f"{seconds / scale:.4g} {unit}"
    raise AssertionError("unreachable")


def fmt_ratio(r: float | None, checked: bool = False) -> str:
    """Four significant digits (whole numbers from 10,000); bold when ``checked`` and below 1
    (a violation of that check)."""
    if r is None:
        return "-"
    text = f"{r:.4g}" if r < 1e4 else f"{r:.0f}"
    return f"**{text}**" if checked and r < 1 else text


def _timing_cell(t: dict) -> str:
    if t.get("median_s") is not None:
        return fmt_time(t["median_s"])
    return t["status"].replace("_", " ")


def markdown(doc: dict) -> str:
    """The Markdown table of a result document (``run``'s JSON)."""
    env, s = doc["environment"], doc["summary"]
    lines = [f"# SOL against measured times: {env['folder']}", ""]
    lines += [f"- {line}" for line in describe(env)]
    header = ["problem", "verification"] + [f"{FIDELITY_WORDS[f]} SOL" for f in FIDELITIES]
    header += list(KINDS) + [f"{k}/{f.removesuffix('_aware')}" for k in KINDS for f in FIDELITIES]
    header.append("violations")
    lines += ["", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    notes = []
    for p in doc["problems"]:
        a, t = p["analysis"], p["timings"]
        sol = a.get("sol_s") or {}
        verification = a.get("verification") or f"analysis {a['status'].replace('_', ' ')}"
        cells = [p["problem"], verification]
        cells += [fmt_time(sol.get(f)) for f in FIDELITIES]
        cells += [_timing_cell(t[k]) for k in KINDS]
        cells += [
            fmt_ratio(p["ratios"].get(f"{k}/{f}"), (f, k) in CHECKS)
            for k in KINDS
            for f in FIDELITIES
        ]
        found = [f"{FIDELITY_WORDS[v['fidelity']]} > {v['timing']}" for v in p["violations"]]
        cells.append(", ".join(found) if found else "none")
        lines.append("| " + " | ".join(cells) + " |")
        if a.get("error"):
            notes.append(f"{p['problem']}: analysis: {a['error']}")
        for k in KINDS:
            if t[k].get("error"):
                notes.append(f"{p['problem']}: {k}: {t[k]['error']}")
    if notes:
        lines += ["", "Failures, timeouts and skips:", ""] + [f"- {n}" for n in notes]
    by_check = ", ".join(
        f"{FIDELITY_WORDS[f]} > {k}: {s['violations'][f'{f}>{k}']}" for f, k in CHECKS
    )
    by_fidelity = ", ".join(
        f"{FIDELITY_WORDS[f]} {s['violations_by_fidelity'][f]}" for f in FIDELITIES
    )
    lines += [
        "",
        f"Summary: {s['problems']} problem(s), {s['analysed']} analysed, "
        f"{s['timed']['eager']} timed eager, {s['timed']['compile']} timed with torch.compile; "
        f"problems with a violation, by fidelity: {by_fidelity} "
        f"({s['problems_with_violations']} problem(s) in all); by check: {by_check}.",
    ]
    return "\n".join(lines) + "\n"


def describe(env: dict) -> list[str]:
    """The header lines: how it was timed and analysed."""
    t = env["timing"]
    lines = [f"timings: {env['device']} ({env['device_name']}), torch {env['torch_version']}; {t}"]
    if not env["compile"]:
        lines.append("torch.compile: skipped (--device cpu without --compile)")
    elif env.get("compile_warmup_s") is not None:
        lines.append(
            f"torch.compile: default mode; a warm-up compile of a small function before the "
            f"first problem took {env['compile_warmup_s']:.3g} s (not counted)"
        )
    else:
        lines.append("torch.compile: default mode; the warm-up compile failed")
    if env.get("tf32") is not None:
        lines.append(
            f"TF32: matmul {env['tf32']['matmul']}, cuDNN {env['tf32']['cudnn']} "
            "(torch.backends flags at the end of the timings)"
        )
    verify = "verification on (--verify)" if env["verify"] else "verification off (--verify)"
    lines.append(
        f"SOL: `solar analyze --hw {env['hw']} --cache-state {env.get('cache_state', 'cold')}` "
        f"({env['hw_source']}), policy {env['policy']}, {verify}, {env['jobs']} at once"
    )
    if env["what_if"]:
        lines.append(
            f"what-if: the timings ran on {env['device_name']}, the SOL is of {env['hw']}; "
            "its violations say nothing about SOLAR's bound"
        )
    lines.append(
        f"budget: {env['budget_s']:g} s per problem for its analysis and again for its timings; "
        f"this run took {env['wall_s']['total']:.1f} s (analysis {env['wall_s']['analysis']:.1f} "
        f"s, timings {env['wall_s']['timings']:.1f} s)"
    )
    lines.append(
        "checks: unfused SOL <= eager; fused and cache-aware SOL <= eager and <= compile; "
        "a checked ratio measured/SOL below 1 (a violation) is in bold"
    )
    return lines


# ---------------------------------------------------------------------------------------------
# Analysis: `solar analyze` in child processes.


def analyse(
    path: str,
    hw: str,
    policy: str | None,
    verify: bool,
    timeout_s: float,
    cache_state: str = "cold",
) -> dict:
    """``solar analyze path --json --cache-state STATE`` in a child process: ``{status,
    verification, error, sol_s, bytes, nodes, macs, flops, wall_s}`` (status ``ok``, ``failed``
    or ``timed_out``)."""
    from solar.suite import summarise

    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="solar-gpu-validate-") as tmp:
        report_path = os.path.join(tmp, "report.json")
        cmd = [sys.executable, "-m", "solar", "analyze", path, "--hw", hw, "--json", report_path]
        cmd += ["--policy", policy] if policy else []
        cmd += [] if verify else ["--no-verify"]
        cmd += ["--cache-state", cache_state]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return {
                "status": "timed_out",
                "error": f"analysis timed out after {timeout_s:g} s (--budget-s)",
                "wall_s": time.perf_counter() - start,
            }
        if not os.path.exists(report_path):
            lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
            error = lines[-1] if lines else f"solar analyze exited {done.returncode}"
            return {"status": "failed", "error": error, "wall_s": time.perf_counter() - start}
        with open(report_path) as f:
            report = json.load(f)
    record = summarise(report)
    record.pop("headroom", None)
    record.pop("violation", None)
    record["wall_s"] = time.perf_counter() - start
    return record


# ---------------------------------------------------------------------------------------------
# Timings (torch imported here only).


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raises ``BudgetExceeded`` in this (main) thread after ``seconds``."""

    def ring(signum: int, frame: object) -> None:
        raise BudgetExceeded()

    old = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 1e-3))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


class Timer:
    """Times ``fn()`` on one device: CUDA events with an L2 flush, or the wall clock."""

    def __init__(self, device: str, iters: int, warmup: int, flush_bytes: int) -> None:
        import torch

        self.torch, self.device, self.iters, self.warmup = torch, device, iters, warmup
        self.flush = None
        if device == "cuda" and flush_bytes > 0:
            self.flush = torch.empty(flush_bytes, dtype=torch.uint8, device="cuda")

    def sync(self) -> None:
        if self.device == "cuda":
            self.torch.cuda.synchronize()

    def time(self, fn: Callable[[], object], started: float, budget_s: float) -> dict:
        """Warm-up, then ``iters`` timed runs: ``{status, median_s, min_s, max_s, runs}``; when
        the warm-up says the timed runs cannot end within the budget, ``over_budget``."""
        t0 = time.perf_counter()
        for _ in range(self.warmup):
            fn()
        self.sync()
        per_run = (time.perf_counter() - t0) / max(self.warmup, 1)
        left = budget_s - (time.perf_counter() - started)
        if self.warmup and per_run * self.iters > left:
            return {
                "status": "over_budget",
                "error": f"a warm-up run took {fmt_time(per_run)}: {self.iters} runs would need "
                f"about {per_run * self.iters:.3g} s, {max(left, 0):.3g} s of the budget are "
                "left (--budget-s)",
            }
        samples = self._cuda(fn) if self.device == "cuda" else self._wall(fn)
        return {
            "status": "ok",
            "median_s": statistics.median(samples),
            "min_s": min(samples),
            "max_s": max(samples),
            "runs": len(samples),
        }

    def _cuda(self, fn: Callable[[], object]) -> list[float]:
        torch = self.torch
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(self.iters)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(self.iters)]
        torch.cuda.synchronize()
        for start, end in zip(starts, ends, strict=True):
            if self.flush is not None:
                self.flush.zero_()  # outside the events: not timed
            start.record()
            fn()
            end.record()
        torch.cuda.synchronize()
        return [s.elapsed_time(e) * 1e-3 for s, e in zip(starts, ends, strict=True)]

    def _wall(self, fn: Callable[[], object]) -> list[float]:
        samples = []
        for _ in range(self.iters):
            t0 = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - t0)
        return samples


def _failure(e: BaseException) -> str:
    message = " ".join(str(e).split("\n")[0].split())
    return f"{type(e).__name__}" + (f": {message}" if message else "")


def time_problem(path: str, timer: Timer, compile_too: bool, budget_s: float) -> dict:
    """Eager and torch.compile timings of one model file, within one budget."""
    import torch

    from solar.torch.capture import load_model_file

    started = time.perf_counter()
    result: dict = {k: {"status": "not_run"} for k in KINDS}
    if not compile_too:
        result["compile"] = {"status": "skipped"}
    kind = "eager"
    try:
        with deadline(budget_s), torch.no_grad():
            model, inputs = load_model_file(path)
            if hasattr(model, "to"):
                model = model.to(timer.device)
            inputs = tuple(x.to(timer.device) if isinstance(x, torch.Tensor) else x for x in inputs)
            result["eager"] = timer.time(lambda: model(*inputs), started, budget_s)
            if compile_too:
                kind = "compile"
                try:
                    compiled = torch.compile(model)
                    t0 = time.perf_counter()
                    compiled(*inputs)  # compiles
                    timer.sync()
                    compile_s = time.perf_counter() - t0
                except Exception as e:  # reported, not fatal
                    result["compile"] = {"status": "failed", "error": f"compile: {_failure(e)}"}
                else:
                    result["compile"] = timer.time(lambda: compiled(*inputs), started, budget_s)
                    result["compile"]["compile_s"] = compile_s
    except BudgetExceeded:
        result[kind] = {
            "status": "timed_out",
            "error": f"timed out: the budget of {budget_s:g} s ran out (--budget-s)",
        }
        if kind == "eager" and compile_too:
            result["compile"] = {"status": "not_run", "error": "not run: the budget ran out"}
    except Exception as e:  # one model's failure never stops the run
        result[kind] = {"status": "failed", "error": _failure(e)}
        if kind == "eager" and compile_too:
            result["compile"] = {"status": "not_run", "error": "not run: eager failed"}
    finally:
        with contextlib.suppress(Exception):
            torch._dynamo.reset()
        gc.collect()
        if timer.device == "cuda":
            torch.cuda.empty_cache()
    result["wall_s"] = time.perf_counter() - started
    return result


def warm_compile(device: str) -> float:
    """Compiles and runs a small function once, so that the first problem does not pay for
    inductor's start-up (imports, compile workers); returns the seconds it took."""
    import torch

    t0 = time.perf_counter()
    x = torch.ones(1024, device=device)
    torch.compile(lambda t: torch.relu(t * 2.0 + 1.0))(x)
    if device == "cuda":
        torch.cuda.synchronize()
    torch._dynamo.reset()
    return time.perf_counter() - t0


# ---------------------------------------------------------------------------------------------
# The command line.


def builtin_devices() -> list[str]:
    from solar import pipeline

    rc, out, err = pipeline.run_cli_captured(["hw", "list"])
    if rc != 0:
        raise UsageError(err.strip().split("\n")[0])
    table = out.split("\n\n")[0].splitlines()  # a header, one line per device, a blank line
    return [line.split()[0] for line in table[1:] if line.strip()]


def check_hw(hw: str) -> None:
    from solar import pipeline

    rc, _out, err = pipeline.run_cli_captured(["hw", "show", hw])
    if rc != 0:
        raise UsageError(err.strip().split("\n")[0].split(": error: ", 1)[-1])


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="bench/gpu_validate.py",
        description="SOLAR's SOL of every model file in DIR against PyTorch eager and "
        "torch.compile timings on this machine (bench/README.md).",
    )
    p.add_argument("dir", metavar="DIR", help="model files (Model, get_inputs, get_init_inputs)")
    p.add_argument(
        "--hw",
        help="SOLAR device (solar hw list) or device file; default: picked from the GPU's name "
        "(CPU: H100-SXM, a what-if)",
    )
    p.add_argument("--policy", help="precision policy (docs/precision.md)")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda", help="default cuda")
    p.add_argument(
        "--iters", type=int, default=MIN_ITERS, help=f"timed runs (at least {MIN_ITERS})"
    )
    p.add_argument("--warmup", type=int, default=10, help="untimed runs first (default 10)")
    p.add_argument(
        "--l2-bytes",
        type=int,
        metavar="N",
        help="the L2 size in bytes (default: torch.cuda.get_device_properties().L2_cache_size); "
        "the flush writes twice that",
    )
    p.add_argument(
        "--budget-s",
        type=float,
        default=12.0,
        metavar="S",
        help="per problem: for its analysis, and again for its timings (default 12)",
    )
    p.add_argument("--jobs", type=int, metavar="N", help="analyses at once (default min(8, CPUs))")
    p.add_argument("--verify", action="store_true", help="verify the lowered IR (slower)")
    p.add_argument(
        "--warm",
        action="store_true",
        help="time warm-cache runs (no L2 flush) against the warm bound (--cache-state warm)",
    )
    p.add_argument("--compile", action="store_true", help="with --device cpu: torch.compile too")
    p.add_argument("--out", metavar="FILE.md", help="also write the Markdown table here")
    p.add_argument("--json", metavar="FILE.json", help="write the results as JSON")
    try:
        args = p.parse_args(list(argv))
    except SystemExit as e:
        raise SystemExit(0 if e.code == 0 else 1) from None
    if args.iters < MIN_ITERS:
        raise UsageError(f"--iters must be at least {MIN_ITERS} (got {args.iters})")
    if args.warmup < 0:
        raise UsageError("--warmup must be at least 0")
    if not args.budget_s > 0 or not math.isfinite(args.budget_s):
        raise UsageError("--budget-s must be a positive number of seconds")
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    if args.l2_bytes is not None and args.l2_bytes <= 0:
        raise UsageError("--l2-bytes must be positive")
    if not os.path.isdir(args.dir):
        raise UsageError(f"{args.dir}: not a folder")
    return args


def environment(args: argparse.Namespace) -> dict:
    """Picks the device, its name, the L2 flush and the SOLAR device; raises UsageError."""
    import torch

    env: dict = {"device": args.device, "torch_version": torch.__version__}
    if args.device == "cuda":
        if not torch.cuda.is_available():
            raise UsageError("--device cuda: torch sees no CUDA device (--device cpu to try here)")
        props = torch.cuda.get_device_properties(0)
        env["device_name"] = torch.cuda.get_device_name(0)
        env["cuda_version"] = torch.version.cuda or torch.version.hip
        l2 = int(getattr(props, "L2_cache_size", 0) or 0)
        if args.l2_bytes is not None:
            env["l2_bytes"], env["l2_source"] = args.l2_bytes, "--l2-bytes"
        elif l2 > 0:
            env["l2_bytes"], env["l2_source"] = l2, "torch.cuda.get_device_properties"
        else:
            raise UsageError("torch does not report this GPU's L2 size: give --l2-bytes")
        env["flush_bytes"] = 0 if args.warm else 2 * env["l2_bytes"]
        flush = (
            "no L2 flush (--warm: each timed run follows the last on the same inputs)"
            if args.warm
            else f"before each timed run the L2 is flushed (outside the events) by writing "
            f"{env['flush_bytes']:,} bytes, twice its {env['l2_bytes']:,} bytes "
            f"({env['l2_source']})"
        )
        env["timing"] = (
            f"CUDA events around each timed run, median of {args.iters} after {args.warmup} "
            f"warm-up runs; {flush}; torch.no_grad(); models in the mode their file builds them in"
        )
    else:
        from solar.measure import cpu_model

        env["device_name"] = cpu_model()
        env["flush_bytes"] = 0
        env["tf32"] = None
        env["timing"] = (
            f"wall clock (time.perf_counter) around each timed run, median of {args.iters} "
            f"after {args.warmup} warm-up runs, {torch.get_num_threads()} thread(s), no cache "
            "flush; torch.no_grad(); models in the mode their file builds them in"
        )
    if args.hw:
        check_hw(args.hw)
        env["hw"], env["hw_source"], env["what_if"] = args.hw, "--hw", args.device == "cpu"
    elif args.device == "cuda":
        hw = default_hw(env["device_name"], builtin_devices())
        if hw is None:
            raise UsageError(
                f"no built-in SOLAR device for the GPU '{env['device_name']}': give --hw "
                f"({', '.join(builtin_devices())}, or a device file)"
            )
        env["hw"], env["hw_source"], env["what_if"] = hw, "picked from the GPU's name", False
    else:
        env["hw"], env["hw_source"], env["what_if"] = "H100-SXM", "the CPU default", True
    return env


def run(args: argparse.Namespace) -> dict:
    from solar.suite import find_problems

    t_start = time.perf_counter()
    problems = find_problems(args.dir)
    if not problems:
        raise UsageError(f"{args.dir}: no *.py model files")
    env = environment(args)
    env.update(
        cache_state="warm" if args.warm else "cold",
        folder=os.path.basename(os.path.normpath(args.dir)),
        policy=args.policy or "pytorch-cuda-default",
        verify=args.verify,
        iters=args.iters,
        warmup=args.warmup,
        budget_s=args.budget_s,
        jobs=args.jobs or max(1, min(8, os.cpu_count() or 1)),
    )
    paths = [os.path.join(args.dir, rel) for _level, rel in problems]

    def one(path: str) -> dict:
        try:
            return analyse(
                path, env["hw"], args.policy, args.verify, args.budget_s, env["cache_state"]
            )
        except Exception as e:  # never stop the run
            return {"status": "failed", "error": _failure(e)}

    print(
        f"gpu_validate: analysing {len(paths)} problem(s), {env['jobs']} at once", file=sys.stderr
    )
    with ThreadPoolExecutor(max_workers=env["jobs"]) as pool:
        analyses = list(pool.map(one, paths))
    t_analysis = time.perf_counter()

    compile_too = args.device == "cuda" or args.compile
    env["compile"], env["compile_warmup_s"] = compile_too, None
    if compile_too:
        try:
            env["compile_warmup_s"] = warm_compile(args.device)
        except Exception as e:  # each problem's compile will report its own failure
            print(f"gpu_validate: the warm-up compile failed: {_failure(e)}", file=sys.stderr)
    timer = Timer(args.device, args.iters, args.warmup, env["flush_bytes"])
    results = []
    for (_level, rel), path, analysis in zip(problems, paths, analyses, strict=True):
        timings = time_problem(path, timer, compile_too, args.budget_s)
        sol = analysis.get("sol_s") or {}
        measured = {k: timings[k].get("median_s") for k in KINDS}
        results.append(
            {
                "problem": rel,
                "analysis": analysis,
                "timings": timings,
                "ratios": ratios(sol, measured),
                "violations": violations(sol, measured),
            }
        )
        eager, comp = (_timing_cell(timings[k]) for k in KINDS)
        print(f"gpu_validate: {rel}: eager {eager}, compile {comp}", file=sys.stderr)
    if args.device == "cuda":  # after the timings: a model file may have changed them
        import torch

        env["tf32"] = {
            "matmul": bool(torch.backends.cuda.matmul.allow_tf32),
            "cudnn": bool(torch.backends.cudnn.allow_tf32),
        }
    t_end = time.perf_counter()
    env["wall_s"] = {
        "analysis": t_analysis - t_start,
        "timings": t_end - t_analysis,
        "total": t_end - t_start,
    }
    return {
        "schema_version": 1,
        "environment": env,
        "problems": results,
        "summary": summary(results),
    }


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv)
        for out in (args.out, args.json):
            if out and os.path.isdir(out):
                raise UsageError(f"cannot write '{out}': it is a directory")
        doc = run(args)
    except SystemExit as e:
        return int(e.code or 0)
    except (UsageError, OSError) as e:
        print(f"gpu_validate: error: {' '.join(str(e).split())}", file=sys.stderr)
        return 1
    from solar._files import write_atomic

    table = markdown(doc)
    sys.stdout.write(table)
    if args.out:
        write_atomic(args.out, table)
    if args.json:
        write_atomic(args.json, json.dumps(doc, sort_keys=True, indent=1, allow_nan=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
