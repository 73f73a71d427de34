"""SOL against real runs on a GPU (issues 12 and 40), in two halves: ``time`` measures with
PyTorch alone on the GPU machine (bench/gpu_time.py: no SOLAR there), ``compare`` analyses here
and checks the promise that a bound is never above a real run.

    # on the GPU machine (python3 with torch; bench/suite_bench.py needs only Python):
    python3 bench/suite_bench.py /tmp/kb --generate-only
    python3 bench/gpu_validate.py time /tmp/kb/suite --out RESULTS [--total-budget-s 540]
        [--device cuda|cpu] [--iters 50] [--budget-s 30] [--serving STEPS|none] ...
    # here, with SOLAR (the same problem files: generate them the same way):
    python3 bench/gpu_validate.py compare RESULTS [--dir /tmp/kb/suite] [--hw NAME]
        [--stat min|median] [--cache-states cold,warm] [--jobs N] [--budget-s 300] [--verify]
        [--policy P] [--out table.md] [--json table.json]

``time``: see bench/gpu_time.py. It writes, per timing kind (eager, torch.compile) and cache
state (cold: the L2 flushed before each timed run; warm: back-to-back runs on the same inputs),
one JSON file in the layout of KernelBench's baseline timings, the serving steps of a decoder
with a static KV cache (serving.json, serving_model.py) and environment.json.

``compare`` checks that the model files under ``--dir`` (default: the folder the timings were
taken of) are those timed (environment.json's sha256 of each), then analyses every problem and
serving step with a timing in a cache state: ``solar analyze FILE --hw HW --json --cache-state
STATE`` (serving: ``--serve PHASE --batch B --context T``) in its own process, ``--jobs`` at
once, verification off unless ``--verify``, killed after ``--budget-s``. The cold timings are
checked against the cold analyses, the warm ones against the warm analyses (docs/cache-state.md).
The SOLAR device is ``--hw``, else picked from the GPU's name (timings on the CPU: H100-SXM, a
what-if).

The checks (``violations``): the unfused SOL must be at most the eager time; the fused and the
cache-aware SOL must be at most both the eager and the compile time. The time is ``--stat`` of
the timed runs, by default ``min``: the fastest run, itself a real run that no bound may be
above (``median`` is the weaker check). The script measures: it exits 0 with violations, 1 only
on a usage error.

bench/README.md describes the flags, the files, the columns and the results.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_time  # noqa: E402  (the PyTorch-only half, beside this file)

KINDS = gpu_time.KINDS
STATES = gpu_time.STATES
STATS = ("min", "median")
UsageError = gpu_time.UsageError
FIDELITIES = ("unfused", "fused", "cache_aware")  # the report's sol.<fidelity>_s keys
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


def measured(entry: dict, stat: str) -> float | None:
    """The ``stat`` of a timing file's entry, in seconds (None when it was not timed)."""
    value = entry.get(stat) if entry.get("status") == "ok" else None
    return value * 1e-3 if isinstance(value, (int, float)) else None


def record(name: str, analysis: dict, timings: dict, stat: str) -> dict:
    """One row: the analysis, the two timing entries, measured / SOL and the violations."""
    sol = analysis.get("sol_s") or {}
    times = {k: measured(timings[k], stat) for k in KINDS}
    return {
        "problem": name,
        "analysis": analysis,
        "timings": timings,
        "measured_s": times,
        "ratios": ratios(sol, times),
        "violations": violations(sol, times),
    }


def summary(rows: list[dict]) -> dict:
    """Counts over the rows: analysed, timed per kind, violations per check and per fidelity
    (rows with at least one violating check of that fidelity)."""
    per_check = {f"{f}>{k}": 0 for f, k in CHECKS}
    per_fidelity = {f: 0 for f in FIDELITIES}
    with_violation = 0
    for p in rows:
        found = p["violations"]
        for v in found:
            per_check[f"{v['fidelity']}>{v['timing']}"] += 1
        for f in {v["fidelity"] for v in found}:
            per_fidelity[f] += 1
        with_violation += 1 if found else 0
    return {
        "problems": len(rows),
        "analysed": sum(1 for p in rows if p["analysis"].get("sol_s")),
        "timed": {k: sum(1 for p in rows if p["measured_s"][k] is not None) for k in KINDS},
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


def timing_cell(entry: dict, stat: str) -> str:
    seconds = measured(entry, stat)
    return fmt_time(seconds) if seconds is not None else entry["status"].replace("_", " ")


STATE_TITLES = {
    "cold": "Cold caches: the L2 flushed before each timed run, SOL of `--cache-state cold`",
    "warm": "Warm caches: timed runs back to back on the same inputs, SOL of `--cache-state warm`",
}


def table(rows: list[dict], first: str, stat: str) -> list[str]:
    """The Markdown table of rows, the failures under it and the summary line."""
    header = [first, "verification"] + [f"{FIDELITY_WORDS[f]} SOL" for f in FIDELITIES]
    header += [f"{k} {stat}" for k in KINDS]
    header += [f"{k}/{f.removesuffix('_aware')}" for k in KINDS for f in FIDELITIES]
    header.append("violations")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    notes = []
    for p in rows:
        a, t = p["analysis"], p["timings"]
        sol = a.get("sol_s") or {}
        verification = a.get("verification") or f"analysis {a['status'].replace('_', ' ')}"
        cells = [p["problem"], verification]
        cells += [fmt_time(sol.get(f)) for f in FIDELITIES]
        cells += [timing_cell(t[k], stat) for k in KINDS]
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
            if t[k].get("error") and t[k]["status"] != "skipped":
                notes.append(f"{p['problem']}: {k}: {t[k]['error']}")
    if notes:
        lines += ["", "Failures, timeouts and skips:", ""] + [f"- {n}" for n in notes]
    s = summary(rows)
    by_check = ", ".join(
        f"{FIDELITY_WORDS[f]} > {k}: {s['violations'][f'{f}>{k}']}" for f, k in CHECKS
    )
    by_fidelity = ", ".join(
        f"{FIDELITY_WORDS[f]} {s['violations_by_fidelity'][f]}" for f in FIDELITIES
    )
    lines += [
        "",
        f"Summary: {s['problems']} {first}(s), {s['analysed']} analysed, "
        f"{s['timed']['eager']} timed eager, {s['timed']['compile']} timed with torch.compile; "
        f"{first}s with a violation, by fidelity: {by_fidelity} "
        f"({s['problems_with_violations']} in all); by check: {by_check}.",
    ]
    return lines


def markdown(doc: dict) -> str:
    """The Markdown of a result document (``compare``'s JSON): the header, then per cache state
    the problems' table and the serving steps' table."""
    env = doc["environment"]
    lines = [f"# SOL against measured times: {env['folder']}", ""]
    lines += [f"- {line}" for line in describe(env)]
    for state, part in doc["cache_states"].items():
        lines += ["", f"## {STATE_TITLES[state]}", ""]
        lines += table(part["problems"], "problem", env["stat"])
        if part["serving"]:
            lines += ["", f"### Serving steps of `{env['serving_model']}`, {state}", ""]
            lines += table(part["serving"], "step", env["stat"])
    return "\n".join(lines) + "\n"


def describe(env: dict) -> list[str]:
    """The header lines: how it was timed and analysed."""
    t, o = env["timing"], env["timing"]["options"]
    device = t["device_name"] + (f", CUDA {t['cuda_version']}" if t.get("cuda_version") else "")
    lines = [
        f"timings: {t['device']} ({device}), torch {t['torch_version']}; {t['timer']}; "
        f"{o['warmup']} warm-up runs, then up to {o['iters']} timed runs per cache state "
        f"(at least {o['min_trials']}; `num_trials` in the files); the {env['stat']} is checked",
        f"cold: before each timed run the cache is flushed (outside the timed region) by writing "
        f"{t['flush_bytes']:,} bytes, twice its {t['l2_bytes']:,} bytes ({t['l2_source']}); "
        "warm: the runs back to back on the same inputs",
    ]
    if not o["compile"]:
        lines.append("torch.compile: not timed")
    else:
        pre = t.get("precompile") or {}
        if "compiled" in pre:
            pre_text = (
                f"; {pre['compiled']} compiled beforehand by {pre['workers']} process(es) in "
                f"{pre['wall_s']:.1f} s (inductor's on-disk caches)"
            )
        else:
            pre_text = f"; the precompile failed: {pre['error']}" if "error" in pre else ""
        lines.append("torch.compile: default mode" + pre_text)
    if t.get("tf32") is not None:
        lines.append(
            f"TF32: matmul {t['tf32']['matmul']}, cuDNN {t['tf32']['cudnn']} "
            "(torch.backends flags at the end of the timings)"
        )
    total = o["total_budget_s"]
    run = f"{t['wall_s']['total']:.1f} s" if t.get("wall_s") else "unknown (killed?)"
    lines.append(
        f"budget: {o['budget_s']:g} s per problem and pass"
        + (f", {total:g} s in all" if total else "")
        + f"; the timings took {run}"
        + (
            ""
            if t.get("complete")
            else f"; INCOMPLETE: {t.get('stopped') or 'the run was cut off'}"
        )
    )
    verify = "verification on (--verify)" if env["verify"] else "verification off (--verify)"
    lines.append(
        f"SOL: `solar analyze --hw {env['hw']}` ({env['hw_source']}), policy {env['policy']}, "
        f"{verify}, {env['jobs']} at once, {env['budget_s']:g} s each; analyses took "
        f"{env['wall_s']:.1f} s"
    )
    if env["what_if"]:
        lines.append(
            f"what-if: the timings ran on {t['device_name']}, the SOL is of {env['hw']}; "
            "its violations say nothing about SOLAR's bound"
        )
    lines.append(
        f"checks: unfused SOL <= eager; fused and cache-aware SOL <= eager and <= compile "
        f"({env['stat']} of the runs); a checked ratio measured/SOL below 1 (a violation) is "
        "in bold"
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
    serve: dict | None = None,
) -> dict:
    """``solar analyze path --json --cache-state STATE`` (``serve``: ``{phase, batch, context}``,
    one serving step) in a child process: ``{status, verification, error, sol_s, bytes, ...,
    wall_s}`` (status ``ok``, ``failed`` or ``timed_out``)."""
    from solar.suites.bench import summarise

    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="solar-gpu-validate-") as tmp:
        report_path = os.path.join(tmp, "report.json")
        cmd = [sys.executable, "-m", "solar", "analyze", path, "--hw", hw, "--json", report_path]
        cmd += ["--policy", policy] if policy else []
        cmd += [] if verify else ["--no-verify"]
        cmd += ["--cache-state", cache_state]
        if serve:
            cmd += ["--serve", serve["phase"], "--batch", str(serve["batch"])]
            cmd += ["--context", str(serve["context"])]
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
    if serve:
        row = report["rows"][0]
        record = {
            "status": "ok",
            "verification": row["verification"]["status"],
            "sol_s": {f: v["step_s"] for f, v in row["fidelities"].items()},
            "bytes": {f: v["bytes"] for f, v in row["fidelities"].items()},
        }
    else:
        record = summarise(report)
        record.pop("headroom", None)
        record.pop("violation", None)
    record["wall_s"] = time.perf_counter() - start
    return record


# ---------------------------------------------------------------------------------------------
# The command line.


def builtin_devices() -> list[str]:
    from solar.ir import run_cli_captured

    rc, out, err = run_cli_captured(["hw", "list"])
    if rc != 0:
        raise UsageError(err.strip().split("\n")[0])
    table = out.split("\n\n")[0].splitlines()  # a header, one line per device, a blank line
    return [line.split()[0] for line in table[1:] if line.strip()]


def check_hw(hw: str) -> None:
    from solar.ir import run_cli_captured

    rc, _out, err = run_cli_captured(["hw", "show", hw])
    if rc != 0:
        raise UsageError(err.strip().split("\n")[0].split(": error: ", 1)[-1])


def parse_compare_args(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="bench/gpu_validate.py compare",
        description="SOLAR's SOL of every problem and serving step timed by `gpu_validate.py "
        "time` against those timings, with every violation (bench/README.md).",
    )
    p.add_argument("results", metavar="RESULTS", help="the folder `time --out` wrote")
    p.add_argument(
        "--dir",
        help="the model files that were timed (default: the folder `time` was given, "
        "environment.json's dir)",
    )
    p.add_argument(
        "--hw",
        help="SOLAR device (solar hw list) or device file; default: picked from the GPU's name "
        "(CPU timings: H100-SXM, a what-if)",
    )
    p.add_argument("--policy", help="precision policy (docs/precision.md)")
    p.add_argument("--stat", choices=STATS, default="min", help="the time checked (default min)")
    p.add_argument(
        "--cache-states",
        default=",".join(STATES),
        metavar="LIST",
        help="cold, warm or both (default cold,warm)",
    )
    p.add_argument(
        "--budget-s",
        type=float,
        default=300.0,
        metavar="S",
        help="per analysis (default 300)",
    )
    p.add_argument("--jobs", type=int, metavar="N", help="analyses at once (default min(8, CPUs))")
    p.add_argument("--verify", action="store_true", help="verify the lowered IR (slower)")
    p.add_argument("--out", metavar="FILE.md", help="also write the Markdown table here")
    p.add_argument("--json", metavar="FILE.json", help="write the results as JSON")
    try:
        args = p.parse_args(list(argv))
    except SystemExit as e:
        raise SystemExit(0 if e.code == 0 else 1) from None
    states = [s.strip() for s in args.cache_states.split(",") if s.strip()]
    if not states or any(s not in STATES for s in states):
        raise UsageError(f"--cache-states: a list of {', '.join(STATES)} (got {args.cache_states})")
    args.states = [s for s in STATES if s in states]
    if not args.budget_s > 0 or args.budget_s == float("inf"):
        raise UsageError("--budget-s must be a positive number of seconds")
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    if not os.path.isdir(args.results):
        raise UsageError(f"{args.results}: not a folder")
    for out in (args.out, args.json):
        if out and os.path.isdir(out):
            raise UsageError(f"cannot write '{out}': it is a directory")
    return args


def read_json(path: str) -> dict:
    try:
        with open(path) as f:
            data = json.load(f)
    except FileNotFoundError:
        raise UsageError(
            f"{path}: missing (is this a folder `gpu_validate.py time` wrote?)"
        ) from None
    except json.JSONDecodeError as e:
        raise UsageError(f"{path}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: not a JSON object")
    return data


def check_files(root: str, hashes: dict) -> None:
    """Every timed file is under ``root`` with the same sha256, else a UsageError."""
    changed = []
    for rel, digest in sorted(hashes.items()):
        path = os.path.join(root, rel)
        if not os.path.isfile(path):
            changed.append(f"{rel} is missing")
        elif gpu_time.sha256(path) != digest:
            changed.append(f"{rel} differs")
    if changed:
        raise UsageError(
            f"{root}: {len(changed)} of the {len(hashes)} timed model file(s) are not the ones "
            f"timed ({changed[0]}{', ...' if len(changed) > 1 else ''}): give --dir the same files "
            "(bench/suite_bench.py OUT --generate-only writes the suite)"
        )


def pick_hw(args: argparse.Namespace, timing: dict) -> tuple[str, str, bool]:
    """(device, where it came from, what-if)."""
    if args.hw:
        check_hw(args.hw)
        return args.hw, "--hw", timing["device"] != "cuda"
    if timing["device"] == "cuda":
        hw = default_hw(timing["device_name"], builtin_devices())
        if hw is None:
            raise UsageError(
                f"no built-in SOLAR device for the GPU '{timing['device_name']}': give --hw "
                f"({', '.join(builtin_devices())}, or a device file)"
            )
        return hw, "picked from the GPU's name", False
    return "H100-SXM", "the CPU default", True


def compare(args: argparse.Namespace) -> dict:
    t_start = time.perf_counter()
    timing = read_json(os.path.join(args.results, gpu_time.ENVIRONMENT))
    if timing.get("schema_version") != gpu_time.SCHEMA_VERSION or "problems" not in timing:
        raise UsageError(f"{args.results}/{gpu_time.ENVIRONMENT}: not written by this script")
    files = {
        (k, s): read_json(os.path.join(args.results, gpu_time.timing_file(k, s)))
        for k in KINDS
        for s in args.states
    }
    folder = args.dir or timing["dir"]
    if not os.path.isdir(folder):
        raise UsageError(
            f"{folder}: not a folder here: give --dir the model files that were timed "
            "(bench/suite_bench.py OUT --generate-only writes the suite)"
        )
    check_files(folder, timing["problems"])
    serving = None
    if timing.get("serving_model"):
        serving = read_json(os.path.join(args.results, gpu_time.SERVING))
        check_files(
            args.results, {timing["serving_model"]["file"]: timing["serving_model"]["sha256"]}
        )
    hw, hw_source, what_if = pick_hw(args, timing)
    jobs = args.jobs or max(1, min(8, os.cpu_count() or 1))

    def entry(kind: str, state: str, rel: str) -> dict:
        level = os.path.dirname(rel) or gpu_time.TOP_LEVEL
        return files[(kind, state)].get(level, {}).get(os.path.basename(rel), {"status": "missing"})

    # every (state, row) with a timing gets an analysis in that state
    work = []
    for state in args.states:
        for rel in sorted(timing["problems"]):
            timings = {k: entry(k, state, rel) for k in KINDS}
            work.append((state, rel, os.path.join(folder, rel), None, timings))
        for step in (serving or {}).get("steps", []):
            timings = {k: step[f"{k}_{state}"] for k in KINDS}
            path = os.path.join(args.results, timing["serving_model"]["file"])
            work.append((state, step["name"], path, step, timings))

    def one(job: tuple) -> dict:
        state, _name, path, serve, timings = job
        if all(measured(t, args.stat) is None for t in timings.values()):
            return {"status": "not_run", "error": "nothing timed to check"}
        try:
            return analyse(path, hw, args.policy, args.verify, args.budget_s, state, serve)
        except Exception as e:  # never stop the run
            return {"status": "failed", "error": gpu_time.failure(e)}

    print(f"gpu_validate: {len(work)} analyses, {jobs} at once", file=sys.stderr)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        analyses = list(pool.map(one, work))
    parts: dict = {s: {"problems": [], "serving": []} for s in args.states}
    for (state, name, _path, serve, timings), analysis in zip(work, analyses, strict=True):
        parts[state]["serving" if serve else "problems"].append(
            record(name, analysis, timings, args.stat)
        )
    for part in parts.values():
        part["summary"] = summary(part["problems"])
        part["serving_summary"] = summary(part["serving"])
    env = {
        "timing": {k: v for k, v in timing.items() if k not in ("problems", "dir")},
        "folder": os.path.basename(os.path.normpath(folder)),
        "results": os.path.basename(os.path.normpath(args.results)),
        "serving_model": timing["serving_model"]["file"] if serving else None,
        "hw": hw,
        "hw_source": hw_source,
        "what_if": what_if,
        "policy": args.policy or "pytorch-cuda-default",
        "verify": args.verify,
        "stat": args.stat,
        "jobs": jobs,
        "budget_s": args.budget_s,
        "wall_s": time.perf_counter() - t_start,
    }
    return {"schema_version": 2, "environment": env, "cache_states": parts}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["time"]:  # PyTorch alone: nothing of SOLAR is imported on this path
        return gpu_time.main(argv[1:])
    if argv[:1] != ["compare"]:
        asked = argv[:1] in (["-h"], ["--help"])
        print(
            "usage: bench/gpu_validate.py time DIR --out RESULTS ... (PyTorch alone, on the GPU)\n"
            "       bench/gpu_validate.py compare RESULTS ... (with SOLAR)\n"
            "--help after either for its options; bench/README.md",
            file=sys.stdout if asked else sys.stderr,
        )
        return 0 if asked else 1
    try:
        args = parse_compare_args(argv[1:])
        doc = compare(args)
    except SystemExit as e:
        return int(e.code or 0)
    except (UsageError, OSError) as e:
        print(f"gpu_validate compare: error: {' '.join(str(e).split())}", file=sys.stderr)
        return 1
    from solar._files import write_atomic

    text = markdown(doc)
    sys.stdout.write(text)
    if args.out:
        write_atomic(args.out, text)
    if args.json:
        write_atomic(args.json, json.dumps(doc, sort_keys=True, indent=1, allow_nan=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
