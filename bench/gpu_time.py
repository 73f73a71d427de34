"""The timing half of ``bench/gpu_validate.py`` (``gpu_validate.py time``): PyTorch alone (the
standard library and torch; no SOLAR, and no numpy or yaml of its own), so that it runs on a bare
GPU machine.
Nothing in SOLAR imports this file.

    python3 bench/gpu_validate.py time DIR --out RESULTS [--device cuda|cpu] [--iters 50]
        [--warmup 5] [--budget-s 30] [--total-budget-s S] [--l2-bytes N] [--[no-]compile]
        [--compile-workers N] [--serving STEPS|none] [--serving-size small|tiny]

Every model file of DIR (``*.py``, each with ``Model``, ``get_inputs`` and ``get_init_inputs``;
its folder relative to DIR is its level, ``.`` for files directly in DIR) and every serving step
of bench/serving_decoder.py (``--serving phase:batch:context,...``; ``--serving-size`` small on
CUDA, tiny on the CPU) is timed eager and with ``torch.compile`` (default mode), each in two
cache states: **cold**, the L2 flushed before each
timed run by writing a buffer of twice its size outside the timed region, and **warm**, the runs
back to back on the same inputs. A model and its inputs are built on the device
(``with torch.device(DEVICE)``) after ``torch.manual_seed(0)``, in the mode the file builds them
in, and run under ``torch.no_grad()``: ``--warmup`` untimed runs, then ``--iters`` timed runs per
cache state (fewer when the warm-up says they would not fit in the budget left; never fewer
than 3). On CUDA, events recorded around each run alone; on the CPU, the wall clock, and the
"L2" is a buffer of ``--l2-bytes`` (default 32 MiB) flushed the same way.

The order: the eager pass over every step and problem; then, unless compile is off, a warm-up
compile, the precompile (``--compile-workers`` processes compile every step and problem once, in
parallel, with nothing timed meanwhile, so that the timing process finds inductor's on-disk
caches filled; at most half the total budget left) and the compile pass. A step or problem whose
eager run failed, or whose compile failed in a precompile process, is not compiled again. Each
step or problem gets ``--budget-s`` in each pass (model building included; an alarm).
``--total-budget-s`` stops the run cleanly: what is not reached stays ``not_reached`` and every
file is still written.

Outputs in RESULTS (at most 8 files: what a device call brings back): ``eager_cold.json``,
``eager_warm.json``, ``compile_cold.json``, ``compile_warm.json`` in the layout of KernelBench's
baseline timings, ``{level: {file: {"mean", "std", "min", "max", "median", "num_trials",
"hardware", "device", "status"}}}`` (milliseconds; std over the trials, population), an entry
that was not timed only ``status`` (``not_reached``, ``failed``, ``timed_out``, ``over_budget``,
``skipped``) and, but for ``not_reached``, ``error``; ``serving.json`` (the steps, each with its
four timings); ``serving_model.py`` (the decoder that was timed); ``environment.json`` (the GPU,
versions, L2 size, clocks where torch gives them, the options, a sha256 of every model file,
the wall time of each phase, whether the run completed). Each file is rewritten (a temporary
file renamed) after every step or problem, so a killed run leaves valid JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import hashlib
import importlib.util
import json
import math
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence

SCHEMA_VERSION = 1
KINDS = ("eager", "compile")
STATES = ("cold", "warm")
ENVIRONMENT = "environment.json"
SERVING = "serving.json"
SERVING_MODEL = "serving_model.py"
DECODER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "serving_decoder.py")
SERVING_SIZES = ("small", "tiny")
DEFAULT_STEPS = "prefill:1:512,prefill:8:2048,decode:1:1024,decode:32:4096"
PHASES = ("prefill", "decode")
TOP_LEVEL = "."
MIN_TRIALS = 3
CPU_L2_BYTES = 32 * 1024 * 1024
START_S = 2.0  # a step or problem is not started with less of the total budget left
PRECOMPILE_SHARE = 0.5  # of the total budget left when the precompile starts


def timing_file(kind: str, state: str) -> str:
    return f"{kind}_{state}.json"


class UsageError(ValueError):
    """A bad folder, option or device: one line, exit status 1."""


class BudgetExceeded(BaseException):  # noqa: N818
    """The time budget ran out (raised by the alarm). A BaseException, so that no ``except
    Exception`` inside torch swallows it."""


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


def failure(e: BaseException) -> str:
    """The exception's type and the first line of its message, on one line."""
    message = " ".join(str(e).split("\n")[0].split())
    return f"{type(e).__name__}" + (f": {message}" if message else "")


# ---------------------------------------------------------------------------------------------
# Pure functions (no torch; unit-tested).


def find_problems(root: str) -> list[tuple[str, str]]:
    """(level, path relative to ``root``) of every ``*.py`` file, sorted; the level is the
    file's folder relative to ``root`` (``.`` directly in it), as ``solar bench`` names it."""
    found = []
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")))
        for name in sorted(files):
            if name.endswith(".py") and not name.startswith(("_", ".")):
                rel = os.path.relpath(os.path.join(directory, name), root).replace(os.sep, "/")
                found.append((os.path.dirname(rel) or TOP_LEVEL, rel))
    return sorted(found)


def parse_steps(text: str) -> list[dict]:
    """``prefill:1:512,decode:32:4096`` (or ``none``) -> ``[{phase, batch, context, name}]``."""
    if text.strip() == "none":
        return []
    steps, seen = [], set()
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\w+):(\d+):(\d+)\s*", part)
        if not m or m.group(1) not in PHASES or int(m.group(2)) < 1 or int(m.group(3)) < 1:
            raise UsageError(
                f"--serving: '{part.strip()}' is not phase:batch:context (phase prefill or "
                "decode, batch and context at least 1), e.g. decode:1:1024"
            )
        phase, batch, context = m.group(1), int(m.group(2)), int(m.group(3))
        name = step_name(phase, batch, context)
        if name not in seen:
            seen.add(name)
            steps.append({"phase": phase, "batch": batch, "context": context, "name": name})
    return steps


def step_name(phase: str, batch: int, context: int) -> str:
    return f"{phase}_b{batch}_t{context}"


def stats_ms(samples_s: Sequence[float]) -> dict:
    """KernelBench's statistics of timed runs, in milliseconds (std over the runs, population),
    and the median."""
    ms = [s * 1e3 for s in samples_s]
    return {
        "status": "ok",
        "mean": statistics.fmean(ms),
        "std": statistics.pstdev(ms),
        "min": min(ms),
        "max": max(ms),
        "median": statistics.median(ms),
        "num_trials": len(ms),
    }


def trials(iters: int, per_run_s: float, flush_s: float, left_s: float) -> int:
    """Timed runs per cache state that fit in ``left_s`` (a cold run costs a flush too), at most
    ``iters``; 90% of what is left is planned, for the runs' own spread."""
    cost = 2.0 * per_run_s + flush_s
    if cost <= 0:
        return iters
    return max(0, min(iters, math.floor(0.9 * left_s / cost)))


def decoder_source(size: str) -> str:
    """bench/serving_decoder.py with its ``SIZE`` line set to ``size``."""
    with open(DECODER) as f:
        text = f.read()
    new, count = re.subn(r'(?m)^SIZE = "\w+"$', f'SIZE = "{size}"', text)
    if count != 1:
        raise RuntimeError(f"{DECODER}: no single 'SIZE = \"...\"' line")
    return new


def sha256(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def write_json(path: str, data: object) -> None:
    """Writes ``data`` (sorted keys) to a temporary file beside ``path`` and renames it into
    place, so that a reader (or a kill) never sees half a file."""
    write_text(path, json.dumps(data, sort_keys=True, indent=1, allow_nan=False) + "\n")


def write_text(path: str, text: str) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".gpu-time-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


# ---------------------------------------------------------------------------------------------
# Steps and problems: building, timing.

_loaded = 0


def load_module(path: str) -> object:
    global _loaded
    _loaded += 1
    name = f"gpu_time_model_{_loaded}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ValueError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look the module up
    spec.loader.exec_module(module)
    return module


def build(item: dict, torch: object, device: str) -> tuple[object, tuple]:
    """The model and inputs of a problem (``Model(*get_init_inputs())``, ``get_inputs()``) or a
    serving step (``get_serve_inputs(phase, batch, context)``), built on ``device`` after
    ``torch.manual_seed(0)``."""
    module = load_module(item["path"])
    wanted = ("Model", "get_init_inputs", "get_serve_inputs" if item["serve"] else "get_inputs")
    for attr in wanted:
        if not hasattr(module, attr):
            raise ValueError(f"{item['id']}: defines no '{attr}'")
    with torch.device(device):
        torch.manual_seed(0)
        model = module.Model(*module.get_init_inputs())
        if item["serve"]:
            inputs = module.get_serve_inputs(item["phase"], item["batch"], item["context"])
        else:
            inputs = module.get_inputs()
    if not isinstance(inputs, (list, tuple)):
        raise ValueError(f"{item['id']}: the inputs are a {type(inputs).__name__}, not a list")
    if hasattr(model, "to"):
        model = model.to(device)
    inputs = tuple(x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs)
    return model, inputs


class Timer:
    """Timed runs of ``fn()`` on one device: CUDA events around each run, or the wall clock;
    cold runs flush the cache first, outside the timed region."""

    def __init__(self, torch: object, device: str, flush_bytes: int) -> None:
        self.torch, self.device = torch, device
        self.flush = torch.empty(flush_bytes, dtype=torch.uint8, device=device)
        self.flush.zero_()
        self.sync()
        t0 = time.perf_counter()
        for _ in range(3):
            self.flush.zero_()
        self.sync()
        self.flush_s = (time.perf_counter() - t0) / 3

    def sync(self) -> None:
        if self.device == "cuda":
            self.torch.cuda.synchronize()

    def runs(self, fn: Callable[[], object], n: int, cold: bool) -> list[float]:
        """``n`` timed runs, in seconds."""
        if self.device != "cuda":
            samples = []
            for _ in range(n):
                if cold:
                    self.flush.zero_()
                t0 = time.perf_counter()
                fn()
                samples.append(time.perf_counter() - t0)
            return samples
        cuda = self.torch.cuda
        starts = [cuda.Event(enable_timing=True) for _ in range(n)]
        ends = [cuda.Event(enable_timing=True) for _ in range(n)]
        cuda.synchronize()
        for start, end in zip(starts, ends, strict=True):
            if cold:
                self.flush.zero_()  # before the start event: not timed
            start.record()
            fn()
            end.record()
        cuda.synchronize()
        return [s.elapsed_time(e) * 1e-3 for s, e in zip(starts, ends, strict=True)]

    def measure(self, fn: Callable[[], object], iters: int, warmup: int, until: float) -> dict:
        """Warm-up runs, then the cold and the warm runs: ``{"cold": entry, "warm": entry}``
        (``over_budget`` where fewer than MIN_TRIALS runs would fit before ``until``)."""
        t0 = time.perf_counter()
        for _ in range(max(warmup, 1)):
            fn()
        self.sync()
        per_run = (time.perf_counter() - t0) / max(warmup, 1)
        n = trials(iters, per_run, self.flush_s, until - time.perf_counter())
        if n < MIN_TRIALS:
            error = (
                f"over budget: a warm-up run took {per_run * 1e3:.4g} ms, {MIN_TRIALS} timed "
                "runs per cache state do not fit in the budget left (--budget-s)"
            )
            return {s: {"status": "over_budget", "error": error} for s in STATES}
        return {
            "cold": stats_ms(self.runs(fn, n, cold=True)),
            "warm": stats_ms(self.runs(fn, n, cold=False)),
        }


class Run:
    """One ``time`` run: the options, the clock, the timer and the results, written as they
    come."""

    def __init__(self, args: argparse.Namespace, torch: object, started: float) -> None:
        self.args, self.torch, self.started = args, torch, started
        self.until = started + args.total_budget_s if args.total_budget_s else math.inf
        self.stopped: str | None = None

    def left(self) -> float:
        return self.until - time.perf_counter()

    def time_item(self, item: dict, kind: str, timer: Timer, hardware: str) -> dict:
        """``{"cold": entry, "warm": entry}`` of one step or problem, one kind."""
        torch, args = self.torch, self.args
        limit = min(args.budget_s, self.left())
        until = time.perf_counter() + limit
        extra: dict = {}

        def attempt() -> dict:
            with deadline(limit), torch.no_grad():
                model, inputs = build(item, torch, args.device)
                fn = lambda: model(*inputs)  # noqa: E731
                if kind == "compile":
                    compiled = torch.compile(model)
                    t0 = time.perf_counter()
                    try:
                        compiled(*inputs)  # compiles
                        timer.sync()
                    except Exception as e:  # reported, not fatal
                        raise CompileError(f"compile: {failure(e)}") from None
                    extra["compile_s"] = time.perf_counter() - t0
                    fn = lambda: compiled(*inputs)  # noqa: E731
                return timer.measure(fn, args.iters, args.warmup, until)

        try:
            entries = attempt()
        except BudgetExceeded:
            if self.left() <= 0.05:
                why = f"the total budget of {args.total_budget_s:g} s ran out (--total-budget-s)"
            else:
                why = f"the budget of {args.budget_s:g} s ran out (--budget-s)"
            entries = {s: {"status": "timed_out", "error": f"timed out: {why}"} for s in STATES}
        except Exception as e:  # one model's failure never stops the run
            error = str(e) if isinstance(e, CompileError) else failure(e)
            entries = {s: {"status": "failed", "error": error} for s in STATES}
        finally:
            with contextlib.suppress(Exception):
                torch._dynamo.reset()
            gc.collect()
            if args.device == "cuda":
                with contextlib.suppress(Exception):
                    torch.cuda.empty_cache()
        for entry in entries.values():
            if entry["status"] == "ok":
                entry.update(hardware=hardware, device=timer_device(args.device))
            entry.update(extra)
        return entries

    def one_pass(self, kind: str, items: list[dict], results: Results, timer: Timer, hw: str):
        for item in items:
            if self.left() < START_S:
                self.stopped = (
                    f"the total budget of {self.args.total_budget_s:g} s ran out "
                    f"(--total-budget-s) in the {kind} pass, before {item['id']}"
                )
                return
            entries = self.time_item(item, kind, timer, hw)
            entries = {
                s: {**e, **({"precompile": item["precompile"]} if "precompile" in item else {})}
                for s, e in entries.items()
            }
            results.set(item, kind, entries)
            results.write(kind)
            shown = ", ".join(f"{s} {show(entries[s])}" for s in STATES)
            print(f"gpu_time: {kind} {item['id']}: {shown}", file=sys.stderr, flush=True)


class CompileError(Exception):
    pass


def timer_device(device: str) -> str:
    return "cuda:0" if device == "cuda" else "cpu"


def show(entry: dict) -> str:
    if entry["status"] == "ok":
        return f"min {entry['min']:.4g} ms, median {entry['median']:.4g} ms"
    return entry["status"].replace("_", " ")


class Results:
    """The timing files and serving.json, every entry ``not_reached`` until timed."""

    def __init__(self, out: str, problems: list[dict], steps: list[dict], compile_too: bool):
        self.out = out
        self.tables: dict = {}
        skipped = {
            "status": "skipped",
            "error": "torch.compile not run (--no-compile, or --device cpu without --compile)",
        }
        for kind in KINDS:
            for state in STATES:
                table: dict = {}
                for item in problems:
                    first = {"status": "not_reached"} if kind == "eager" or compile_too else skipped
                    table.setdefault(item["level"], {})[item["name"]] = dict(first)
                self.tables[(kind, state)] = table
        self.serving: dict | None = None
        if steps:
            self.serving = {
                "model": SERVING_MODEL,
                "steps": [
                    {
                        **{k: s[k] for k in ("phase", "batch", "context", "name")},
                        **{
                            f"{kind}_{state}": dict(
                                {"status": "not_reached"}
                                if kind == "eager" or compile_too
                                else skipped
                            )
                            for kind in KINDS
                            for state in STATES
                        },
                    }
                    for s in steps
                ],
            }

    def get(self, item: dict, kind: str, state: str) -> dict:
        if item["serve"]:
            step = next(s for s in self.serving["steps"] if s["name"] == item["name"])
            return step[f"{kind}_{state}"]
        return self.tables[(kind, state)][item["level"]][item["name"]]

    def set(self, item: dict, kind: str, entries: dict) -> None:
        for state, entry in entries.items():
            if item["serve"]:
                step = next(s for s in self.serving["steps"] if s["name"] == item["name"])
                step[f"{kind}_{state}"] = entry
            else:
                self.tables[(kind, state)][item["level"]][item["name"]] = entry

    def write(self, kind: str | None = None) -> None:
        for k in KINDS if kind is None else (kind,):
            for state in STATES:
                write_json(os.path.join(self.out, timing_file(k, state)), self.tables[(k, state)])
        if self.serving is not None:
            write_json(os.path.join(self.out, SERVING), self.serving)

    def counts(self) -> dict:
        """Entries timed (status ok) per file."""
        out = {}
        for (kind, state), table in sorted(self.tables.items()):
            ok = sum(e["status"] == "ok" for level in table.values() for e in level.values())
            out[timing_file(kind, state)] = ok
        if self.serving is not None:
            out[SERVING] = {
                f"{k}_{s}": sum(st[f"{k}_{s}"]["status"] == "ok" for st in self.serving["steps"])
                for k in KINDS
                for s in STATES
            }
        return out


# ---------------------------------------------------------------------------------------------
# The precompile: worker processes fill inductor's on-disk caches, nothing timed meanwhile.


def precompile(items: list[dict], run: Run, workers: int) -> dict:
    """Compiles every item once in ``workers`` processes (round robin), until they end or
    PRECOMPILE_SHARE of the total budget left is spent; returns ``{item id: {status,
    seconds[, error]}}`` for what they reported, and the phase's own record under ``""``."""
    args = run.args
    t0 = time.perf_counter()
    phase_until = t0 + (PRECOMPILE_SHARE * run.left() if math.isfinite(run.left()) else math.inf)
    threads = max(1, (os.cpu_count() or 1) // workers)
    env = dict(os.environ, TORCHINDUCTOR_COMPILE_THREADS=str(threads), PYTHONUNBUFFERED="1")
    tmp = tempfile.mkdtemp(prefix="gpu-time-precompile-")
    procs = []
    try:
        for w in range(workers):
            chunk = items[w::workers]
            if not chunk:
                continue
            spec, out = os.path.join(tmp, f"items{w}.json"), os.path.join(tmp, f"done{w}.jsonl")
            with open(spec, "w") as f:
                json.dump(chunk, f)
            cmd = [sys.executable, os.path.abspath(__file__), "precompile", args.device]
            cmd += [repr(args.budget_s), spec, out]
            log = open(os.path.join(tmp, f"log{w}.txt"), "w")
            procs.append((subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                                           start_new_session=True), out, log))  # fmt: skip
        while any(p.poll() is None for p, _, _ in procs) and time.perf_counter() < phase_until:
            time.sleep(0.1)
        killed = 0
        for p, _, log in procs:
            if p.poll() is None:
                killed += 1
                with contextlib.suppress(OSError):
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait()
            log.close()
        done: dict = {}
        for _, out, _ in procs:
            if os.path.exists(out):
                with open(out) as f:
                    for line in f:
                        with contextlib.suppress(ValueError):
                            record = json.loads(line)
                            done[record.pop("id")] = record
        failed_logs = [
            tail(os.path.join(tmp, f"log{w}.txt"))
            for w, (p, _, _) in enumerate(procs)
            if p.returncode not in (0, -signal.SIGKILL)
        ]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    done[""] = {
        "workers": len(procs),
        "compile_threads_each": threads,
        "wall_s": time.perf_counter() - t0,
        "compiled": sum(1 for k, r in done.items() if k and r["status"] == "ok"),
        "stopped_workers": killed,
        "worker_failures": failed_logs,
    }
    return done


def tail(path: str) -> str:
    with contextlib.suppress(OSError), open(path) as f:
        lines = [line.strip() for line in f if line.strip()]
        return lines[-1] if lines else "no output"
    return "no output"


def precompile_worker(argv: Sequence[str]) -> int:
    """``gpu_time.py precompile DEVICE BUDGET_S ITEMS.json DONE.jsonl``: compiles and runs each
    item once; one JSON line per item."""
    device, budget_s, spec, out = argv[0], float(argv[1]), argv[2], argv[3]
    import torch

    # The timing process benchmarks the kernels' launch configurations itself, on an idle GPU:
    # what the workers pick side by side is not kept (not part of the compiled graph's key).
    torch._inductor.config.autotune_local_cache = False
    with open(spec) as f:
        items = json.load(f)
    for item in items:
        t0 = time.perf_counter()
        record: dict = {"id": item["id"]}
        try:
            with deadline(budget_s), torch.no_grad():
                model, inputs = build(item, torch, device)
                torch.compile(model)(*inputs)
                if device == "cuda":
                    torch.cuda.synchronize()
                del model, inputs
            record["status"] = "ok"
        except BudgetExceeded:
            record.update(status="timed_out", error=f"over {budget_s:g} s (--budget-s)")
        except Exception as e:
            record.update(status="failed", error=failure(e))
        finally:
            with contextlib.suppress(Exception):
                torch._dynamo.reset()
            gc.collect()
        record["seconds"] = time.perf_counter() - t0
        with open(out, "a") as f:
            f.write(json.dumps(record) + "\n")
    return 0


# ---------------------------------------------------------------------------------------------
# The command line.


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="bench/gpu_validate.py time",
        description="Times every model file of DIR and the serving steps of a decoder, eager "
        "and with torch.compile, L2 flushed and warm, with PyTorch alone (bench/README.md).",
    )
    p.add_argument("dir", metavar="DIR", help="model files (Model, get_inputs, get_init_inputs)")
    p.add_argument("--out", required=True, metavar="RESULTS", help="folder for the JSON files")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda", help="default cuda")
    p.add_argument("--iters", type=int, default=50, help="timed runs per cache state (50)")
    p.add_argument("--warmup", type=int, default=5, help="untimed runs first (default 5)")
    p.add_argument(
        "--budget-s",
        type=float,
        default=30.0,
        metavar="S",
        help="per step or problem and pass (eager, compile), building included (default 30)",
    )
    p.add_argument(
        "--total-budget-s",
        type=float,
        metavar="S",
        help="the whole run, from its start: then it stops and writes what it has "
        "(default: no limit)",
    )
    p.add_argument(
        "--l2-bytes",
        type=int,
        metavar="N",
        help="the cache flushed before a cold run, in bytes; the flush writes twice that "
        "(default: torch's L2_cache_size on CUDA, 32 MiB on the CPU)",
    )
    p.add_argument(
        "--compile",
        action=argparse.BooleanOptionalAction,
        help="time torch.compile too (default: on CUDA, not on the CPU)",
    )
    p.add_argument(
        "--compile-workers",
        type=int,
        metavar="N",
        help="processes that compile everything once before the compile pass (default on "
        "CUDA: min(8, CPUs / 2), 0 below 4 CPUs; on the CPU: 0)",
    )
    p.add_argument(
        "--serving",
        default=DEFAULT_STEPS,
        metavar="STEPS",
        help=f"serving steps phase:batch:context,... or none (default {DEFAULT_STEPS})",
    )
    p.add_argument(
        "--serving-size",
        choices=SERVING_SIZES,
        help="the decoder's size (bench/serving_decoder.py; default: small on CUDA, tiny on "
        "the CPU)",
    )
    try:
        args = p.parse_args(list(argv))
    except SystemExit as e:
        raise SystemExit(0 if e.code == 0 else 1) from None
    if args.iters < MIN_TRIALS:
        raise UsageError(f"--iters must be at least {MIN_TRIALS} (got {args.iters})")
    if args.warmup < 0:
        raise UsageError("--warmup must be at least 0")
    for flag, value in (("--budget-s", args.budget_s), ("--total-budget-s", args.total_budget_s)):
        if value is not None and (not value > 0 or not math.isfinite(value)):
            raise UsageError(f"{flag} must be a positive number of seconds")
    if args.l2_bytes is not None and args.l2_bytes <= 0:
        raise UsageError("--l2-bytes must be positive")
    if args.compile_workers is not None and args.compile_workers < 0:
        raise UsageError("--compile-workers must be at least 0")
    if not os.path.isdir(args.dir):
        raise UsageError(f"{args.dir}: not a folder")
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        raise UsageError(f"--out {args.out}: not a folder")
    args.steps = parse_steps(args.serving)
    if args.serving_size is None:
        args.serving_size = "small" if args.device == "cuda" else "tiny"
    if args.compile is None:
        args.compile = args.device == "cuda"
    if args.compile_workers is None:
        cpus = os.cpu_count() or 1
        args.compile_workers = min(8, cpus // 2) if args.device == "cuda" and cpus >= 4 else 0
    return args


def environment(args: argparse.Namespace, torch: object) -> dict:
    """The machine, the versions, the cache flushed and the options; raises UsageError."""
    env: dict = {
        "schema_version": SCHEMA_VERSION,
        "command": "bench/gpu_validate.py time",
        "dir": args.dir,
        "device": args.device,
        "torch_version": torch.__version__,
        "python_version": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "options": {
            "iters": args.iters,
            "warmup": args.warmup,
            "min_trials": MIN_TRIALS,
            "budget_s": args.budget_s,
            "total_budget_s": args.total_budget_s,
            "compile": args.compile,
            "compile_mode": "default" if args.compile else None,
            "compile_workers": args.compile_workers if args.compile else 0,
            "serving": [s["name"] for s in args.steps],
            "serving_size": args.serving_size if args.steps else None,
        },
    }
    if args.device == "cuda":
        if not torch.cuda.is_available():
            raise UsageError("--device cuda: torch sees no CUDA device (--device cpu to try here)")
        props = torch.cuda.get_device_properties(0)
        env["device_name"] = torch.cuda.get_device_name(0)
        env["cuda_version"] = torch.version.cuda or getattr(torch.version, "hip", None)
        env["cudnn_version"] = torch.backends.cudnn.version()
        env["capability"] = f"{props.major}.{props.minor}"
        env["multiprocessors"] = props.multi_processor_count
        env["memory_bytes"] = props.total_memory
        for attr in ("clock_rate", "memory_clock_rate", "memory_bus_width"):  # kHz, kHz, bits
            value = getattr(props, attr, None)
            env[f"properties_{attr}"] = int(value) if isinstance(value, (int, float)) else None
        try:  # the SM clock now, in MHz (through NVML, where torch finds it)
            env["sm_clock_mhz_at_start"] = int(torch.cuda.clock_rate())
        except Exception:
            env["sm_clock_mhz_at_start"] = None
        l2 = int(getattr(props, "L2_cache_size", 0) or 0)
        if args.l2_bytes is not None:
            env["l2_bytes"], env["l2_source"] = args.l2_bytes, "--l2-bytes"
        elif l2 > 0:
            env["l2_bytes"], env["l2_source"] = l2, "torch.cuda.get_device_properties"
        else:
            raise UsageError("torch does not report this GPU's L2 size: give --l2-bytes")
        env["timer"] = "CUDA events around each timed run"
    else:
        env["device_name"] = cpu_name()
        env["cuda_version"] = None
        env["l2_bytes"] = args.l2_bytes or CPU_L2_BYTES
        env["l2_source"] = "--l2-bytes" if args.l2_bytes else "the CPU default (32 MiB)"
        env["timer"] = "time.perf_counter around each timed run"
    env["flush_bytes"] = 2 * env["l2_bytes"]
    return env


def cpu_name() -> str:
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine() or "cpu"


def warm_compile(torch: object, device: str) -> float:
    """Compiles and runs a small function once, so that the first item does not pay for
    inductor's start-up (imports, compile workers); returns the seconds it took."""
    t0 = time.perf_counter()
    x = torch.ones(1024, device=device)
    torch.compile(lambda t: torch.relu(t * 2.0 + 1.0))(x)
    if device == "cuda":
        torch.cuda.synchronize()
    torch._dynamo.reset()
    return time.perf_counter() - t0


def run(args: argparse.Namespace, started: float) -> int:
    problems = [
        {
            "id": rel,
            "serve": False,
            "level": level,
            "name": os.path.basename(rel),
            "path": os.path.join(args.dir, rel),
        }
        for level, rel in find_problems(args.dir)
    ]
    if not problems:
        raise UsageError(f"{args.dir}: no *.py model files")
    try:
        import torch
    except ImportError as e:
        raise UsageError(f"cannot import torch: {failure(e)}") from None
    env = environment(args, torch)  # before anything is written: it checks the device
    os.makedirs(args.out, exist_ok=True)
    model_path = os.path.join(args.out, SERVING_MODEL)
    steps = [
        {**s, "id": f"serving/{s['name']}", "serve": True, "path": model_path} for s in args.steps
    ]
    if steps:
        write_text(model_path, decoder_source(args.serving_size))
    env["problems"] = {p["id"]: sha256(p["path"]) for p in problems}
    if steps:
        env["serving_model"] = {"file": SERVING_MODEL, "sha256": sha256(model_path)}
    results = Results(args.out, problems, steps, args.compile)
    results.write()
    env_path = os.path.join(args.out, ENVIRONMENT)
    env.update(complete=False, stopped=None)
    write_json(env_path, env)

    state = Run(args, torch, started)
    timer = Timer(torch, args.device, env["flush_bytes"])
    env["flush_s"] = timer.flush_s
    items = steps + problems  # the few serving steps first: never starved by the budget
    hw = env["device_name"]
    walls: dict = {}
    t0 = time.perf_counter()
    state.one_pass("eager", items, results, timer, hw)
    walls["eager"] = time.perf_counter() - t0
    env["compile_warmup_s"] = None
    if args.compile and state.stopped is None:
        failed = [i for i in items if results.get(i, "eager", "cold")["status"] == "failed"]
        for item in failed:  # what fails eager fails compiled: not tried again
            entry = {"status": "skipped", "error": "not compiled: the eager run failed"}
            results.set(item, "compile", {s: dict(entry) for s in STATES})
        items = [i for i in items if i not in failed]
        t0 = time.perf_counter()
        try:
            env["compile_warmup_s"] = warm_compile(torch, args.device)
        except Exception as e:  # each item's compile reports its own failure
            env["compile_warmup_error"] = failure(e)
        walls["compile_warmup"] = time.perf_counter() - t0
        if args.compile_workers > 0 and state.left() > START_S:
            print(
                f"gpu_time: precompile: {len(items)} item(s) in {args.compile_workers} process(es)",
                file=sys.stderr,
                flush=True,
            )
            try:
                done = precompile(items, state, args.compile_workers)
            except Exception as e:  # the compile pass compiles for itself
                done = {"": {"error": failure(e), "wall_s": None}}
            env["precompile"] = done.pop("")
            walls["precompile"] = env["precompile"]["wall_s"]
            for item in items:
                item["precompile"] = done.get(item["id"], {"status": "not_reached"})
            failed = [i for i in items if i["precompile"]["status"] == "failed"]
            for item in failed:  # a compile that failed there fails here: not tried again
                error = f"compile (in a precompile process): {item['precompile']['error']}"
                entries = {s: {"status": "failed", "error": error} for s in STATES}
                results.set(item, "compile", entries)
            items = [i for i in items if i not in failed]
        t0 = time.perf_counter()
        state.one_pass("compile", items, results, timer, hw)
        walls["compile"] = time.perf_counter() - t0
    if args.device == "cuda":  # after the timings: a model file may have changed them
        env["tf32"] = {
            "matmul": bool(torch.backends.cuda.matmul.allow_tf32),
            "cudnn": bool(torch.backends.cudnn.allow_tf32),
        }
        with contextlib.suppress(Exception):
            env["sm_clock_mhz_at_end"] = int(torch.cuda.clock_rate())
    walls["total"] = time.perf_counter() - started
    env.update(wall_s=walls, complete=state.stopped is None, stopped=state.stopped)
    env["timed"] = results.counts()
    results.write()
    write_json(env_path, env)
    print(
        f"gpu_time: wrote {args.out}: {json.dumps(env['timed'], sort_keys=True)}; "
        f"{walls['total']:.1f} s" + (f"; stopped: {state.stopped}" if state.stopped else ""),
        file=sys.stderr,
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    started = time.perf_counter()
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["precompile"]:
        return precompile_worker(argv[1:])
    try:
        return run(parse_args(argv), started)
    except SystemExit as e:
        return int(e.code or 0)
    except (UsageError, OSError) as e:
        print(f"gpu_validate time: error: {' '.join(str(e).split())}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
