"""``solar bench DIR --hw NAME --out RESULTS/``: analyse a suite of benchmark-style model files.

Every ``*.py`` file under DIR is a problem (``Model``, ``get_inputs``, ``get_init_inputs``); its
folder relative to DIR is its level (files directly in DIR: level ``.``). Each problem runs
``solar analyze`` in its own child process (``--jobs N`` at once), so one crash, hang
(``--timeout-s``) or failure never stops the rest. ``--isolation fork`` (the default where the
system can fork) imports the frameworks once, in a fork server, which forks a child per problem;
``--isolation process`` starts a new Python per problem (solar.suites._child: the same outputs). A
finished problem (analysed or failed) leaves ``RESULTS/problems/<level>/<file>.json``; a second
run skips it, so an interrupted run resumes.

``--timings FILE.json`` gives measured times in the public format
``{level: {file_name: {"mean": ms, ...}}}``; a problem with a time gets headroom = time / SOL
per fidelity, and a violation flag when the time is below its smallest SOL.

Outputs (docs/calibrate.md, "Suites"): ``problems.json`` and ``problems.csv`` (one row per
problem: status, verification, coverage, counts, SOL per fidelity, headroom, violation) and
``summary.json`` / ``summary.csv`` (per level: problems, analysed, failed, timed, geometric-mean
and median headroom per fidelity, violations). Same inputs, same files.

Stage times (docs/cli.md, "solar bench"): each child writes ``--stage-times`` (seconds of
capture, lowering, verification, analysis) and is timed as a whole, in wall-clock seconds
(``total_s``) and CPU seconds (``cpu_s``: user and system, the child's threads and the processes
it waited for; None where the system cannot say); ``stages.json`` and
``stages.csv`` hold them per problem with an ``all`` row of sums and the run's own wall time
(``wall_s``: the seconds of this ``solar bench`` run, from its start to its outputs), printed as a
table. They are measurements, so they stay out of ``problems.*`` and ``summary.*``.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import statistics
import sys
import time
from collections.abc import Sequence

from solar._files import write_atomic
from solar.options import add_child_arguments, child_flags
from solar.suites._child import (
    ISOLATIONS,
    STAGES,
    ForkServer,
    Progress,
    Request,
    default_isolation,
    run_children,
    write_json_atomic,
)

TOP_LEVEL = "."
TIMING_FIELDS = ("total_s", "cpu_s", "stages_s")  # measured: in stages.*, not in problems.*


def find_problems(root: str) -> list[tuple[str, str]]:
    """(level, path relative to ``root``) of every ``*.py`` file, sorted."""
    found = []
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")))
        for name in sorted(files):
            if name.endswith(".py") and not name.startswith(("_", ".")):
                rel = os.path.relpath(os.path.join(directory, name), root)
                level = os.path.dirname(rel) or TOP_LEVEL
                found.append((level.replace(os.sep, "/"), rel.replace(os.sep, "/")))
    return sorted(found)


def load_timings(path: str | None) -> dict:
    if not path:
        return {}
    try:
        with open(path) as f:
            data = json.load(f)
    except OSError as e:
        raise OSError(f"cannot read '{path}': {e.strerror or e}") from e
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}") from e
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise ValueError(f'{path}: timings must be {{level: {{file_name: {{"mean": ms}}}}}}')
    return data


def timing_ms(timings: dict, level: str, name: str) -> float | None:
    entry = timings.get(level, {}).get(name)
    if isinstance(entry, dict) and isinstance(entry.get("mean"), (int, float)):
        value = float(entry["mean"])
        return value if value > 0 and math.isfinite(value) else None
    return None


def result_path(out: str, rel: str) -> str:
    return os.path.join(out, "problems", rel[: -len(".py")] + ".json")


def problem_request(root: str, rel: str, args: argparse.Namespace, ms: float | None) -> Request:
    """The ``solar analyze`` child of one problem (solar.suites._child.Request)."""
    options = ["--hw", args.hw]
    if args.policy:
        options += ["--policy", args.policy]
    options += ["--cache-state", args.cache_state]
    options += child_flags(args, skip=("--cache-state",))  # --fidelity, --routing, ...
    if ms is not None:
        options += ["--measured-ms", repr(ms)]
    return Request("analyze", os.path.join(root, rel), tuple(options), args.timeout_s, True)


def problem_record(level: str, rel: str, cache_state: str, ms: float | None, child: dict) -> dict:
    """The record of one problem from what came of its child (solar.suites._child.run_children)."""
    record: dict = {
        "level": level,
        "problem": os.path.basename(rel),
        "path": rel,
        "measured_ms": ms,
        "cache_state": cache_state,
    }
    record.update(total_s=child["total_s"], cpu_s=child.get("cpu_s"), stages_s=child["stages_s"])
    if child["report"] is None:  # failed, crashed or timed out: all "failed" here
        record.update(status="failed", error=child["error"])
        return record
    record.update(summarise(child["report"]))
    return record


def summarise(report: dict) -> dict:
    """The per-problem fields of a ``solar analyze`` JSON report."""
    v = report.get("verification", {})
    sol = report.get("sol", {})
    fidelities = sorted(report.get("bytes", {}))
    headroom = report.get("headroom")
    status = "ok" if v.get("status") != "failed" else "failed"
    record = {
        "status": status,
        "verification": v.get("status"),
        "coverage": report.get("coverage"),
        "nodes": len(report.get("nodes", [])),
        "macs": report.get("totals", {}).get("macs"),
        "flops": report.get("totals", {}).get("flops"),
        "bytes": {f: report["bytes"][f] for f in fidelities},
        "sol_s": {f: sol.get(f"{f}_s") for f in fidelities},
        "headroom": headroom["by_fidelity"] if headroom else None,
        "violation": headroom["violation"] if headroom else None,
        "precision_policy": report.get("precision_policy"),
        "routing": report.get("routing"),  # stated for a program with data-dependent reads
    }
    if status == "failed":
        record["error"] = f"verification failed: {v.get('detail', '')}"
    return record


def geomean(values: list[float]) -> float | None:
    values = [x for x in values if x > 0]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def summary(records: list[dict]) -> dict:
    """Per level (and ``all``): problems, analysed, failed, timed, violations, geometric-mean and
    median headroom per fidelity."""
    levels: dict[str, list[dict]] = {}
    for r in records:
        levels.setdefault(r["level"], []).append(r)
    levels["all"] = list(records)
    out = {}
    for level, rs in sorted(levels.items()):
        ok = [r for r in rs if r["status"] == "ok"]
        timed = [r for r in ok if r.get("headroom")]
        fidelities = sorted({f for r in timed for f in r["headroom"]})
        out[level] = {
            # the state every bound of the level was computed in (docs/cache-state.md)
            "cache_state": ",".join(sorted({r.get("cache_state", "cold") for r in rs})),
            "problems": len(rs),
            "analysed": len(ok),
            "failed": len(rs) - len(ok),
            "timed": len(timed),
            "violations": sum(1 for r in timed if r.get("violation")),
            "geomean_headroom": {
                f: geomean([r["headroom"][f] for r in timed if f in r["headroom"]])
                for f in fidelities
            },
            "median_headroom": {
                f: statistics.median([r["headroom"][f] for r in timed if f in r["headroom"]])
                for f in fidelities
            },
        }
    return out


def _csv(rows: list[dict], columns: list[str]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for row in rows:
        w.writerow(["" if row.get(c) is None else row.get(c) for c in columns])
    return buf.getvalue()


def flat(record: dict) -> dict:
    row = {k: v for k, v in record.items() if not isinstance(v, dict)}
    for key in ("bytes", "sol_s", "headroom"):
        for f, v in (record.get(key) or {}).items():
            row[f"{key}_{f}"] = v
    cov = record.get("coverage")
    row["coverage"] = json.dumps(cov, sort_keys=True) if cov is not None else None
    return row


def stage_rows(records: list[dict], run: dict | None = None) -> list[dict]:
    """One row per problem with stage times (sorted by level and path), then an ``all`` row
    of their sums: ``total_s``, ``<stage>_s`` per stage, and ``other_s`` = total minus the
    stages (process start, imports, reading the model file, writing the report); ``run``
    (``wall_s``, ``preload_s``, ``run``, ``jobs``, ``isolation``: this run's) is added to it."""
    rows = []
    for r in records:
        stages = r.get("stages_s")
        if stages is None or r.get("total_s") is None:
            continue
        row = {"level": r["level"], "path": r["path"], "total_s": r["total_s"]}
        row.update({f"{stage}_s": stages[stage] for stage in STAGES})
        row["other_s"] = max(0.0, r["total_s"] - sum(stages.values()))
        row["cpu_s"] = r.get("cpu_s")
        rows.append(row)
    rows.sort(key=lambda row: (row["level"], row["path"]))
    columns = ["total_s", *(f"{stage}_s" for stage in STAGES), "other_s"]
    totals = {"level": "all", "path": None, "problems": len(rows)}
    totals.update({c: sum(row[c] for row in rows) for c in columns})
    cpu = [row["cpu_s"] for row in rows if row["cpu_s"] is not None]
    totals["cpu_s"] = sum(cpu) if cpu else None
    totals.update(run or {})
    return [*rows, totals]


def stage_table(rows: list[dict]) -> str:
    """The terminal table of the ``all`` row of ``stage_rows``: per stage, its seconds summed
    over the problems, its share of their total, and the problem where it took longest."""
    *problems, totals = rows
    lines = [f"stage times, summed over {len(problems)} problem(s):"]
    lines.append(f"{'stage':<14}{'seconds':>10}{'share':>8}  slowest problem")
    for stage in (*STAGES, "other", "total"):
        key = f"{stage}_s"
        share = totals[key] / totals["total_s"] if totals["total_s"] > 0 else 0.0
        slowest = max(problems, key=lambda row: (row[key], row["path"]), default=None)
        where = f"  {slowest['path']} ({slowest[key]:.3g} s)" if slowest else ""
        lines.append(f"{stage:<14}{totals[key]:>10.3f}{100 * share:>7.1f}%{where}")
    if totals.get("wall_s") is not None:
        how = (
            f"frameworks imported once in {totals['preload_s']:.3f} s"
            if totals["isolation"] == "fork"
            else "each child imports its frameworks"
        )
        lines.append(
            f"suite wall time {totals['wall_s']:.3f} s: {totals['run']} problem(s) run, "
            f"--jobs {totals['jobs']}, --isolation {totals['isolation']} ({how})"
        )
    return "\n".join(lines) + "\n"


RUN_FIELDS = ("wall_s", "preload_s", "run", "jobs", "isolation")  # the all row's, this run's


def previous_run(out: str) -> dict | None:
    """The ``RUN_FIELDS`` of the ``all`` row of an earlier run's stages.json (None: none)."""
    try:
        with open(os.path.join(out, "stages.json")) as f:
            totals = json.load(f)[-1]
    except (OSError, ValueError, IndexError, KeyError):
        return None
    if not isinstance(totals, dict) or any(k not in totals for k in RUN_FIELDS):
        return None
    return {k: totals[k] for k in RUN_FIELDS}


def write_outputs(out: str, records: list[dict], run: dict | None = None) -> dict:
    """Every output file; ``run``: this run's measurements (``RUN_FIELDS``), in stages.*."""
    records = sorted(records, key=lambda r: (r["level"], r["path"]))
    timed_rows = stage_rows(records, run)
    write_json_atomic(os.path.join(out, "stages.json"), timed_rows)
    stage_columns = ["level", "path", "problems", "total_s"]
    stage_columns += [f"{stage}_s" for stage in STAGES] + ["other_s", "cpu_s", *RUN_FIELDS]
    write_atomic(os.path.join(out, "stages.csv"), _csv(timed_rows, stage_columns))
    records = [{k: v for k, v in r.items() if k not in TIMING_FIELDS} for r in records]
    write_json_atomic(os.path.join(out, "problems.json"), records)
    rows = [flat(r) for r in records]
    columns = ["level", "problem", "path", "status", "verification", "error", "nodes", "macs"]
    columns += ["flops", "coverage", "measured_ms", "violation"]
    columns += sorted({k for r in rows for k in r} - set(columns))
    write_atomic(os.path.join(out, "problems.csv"), _csv(rows, columns))
    s = summary(records)
    write_json_atomic(os.path.join(out, "summary.json"), s)
    srows = []
    for level, v in s.items():
        keys = ("cache_state", "problems", "analysed", "failed", "timed", "violations")
        row = {k: v[k] for k in keys}
        row["level"] = level
        for kind in ("geomean_headroom", "median_headroom"):
            for f, x in v[kind].items():
                row[f"{kind}_{f}"] = x
        srows.append(row)
    scols = ["level", "cache_state", "problems", "analysed", "failed", "timed", "violations"]
    scols += sorted({k for r in srows for k in r} - set(scols))
    write_atomic(os.path.join(out, "summary.csv"), _csv(srows, scols))
    return s


def _parser() -> argparse.ArgumentParser:
    """``solar bench``'s arguments."""
    p = argparse.ArgumentParser(
        prog="solar bench",
        description="Analyse every benchmark-style model file under DIR (docs/calibrate.md).",
    )
    g = p.add_argument_group("suite and device")
    g.add_argument("dir", metavar="DIR", help="the suite: *.py files, subfolders as levels")
    g.add_argument("--hw", required=True, help="device (solar hw list) or a device file")
    g.add_argument(
        "--policy",
        help="precision policy of each analysis (docs/precision.md); default: the framework's",
    )
    g.add_argument(
        "--timings",
        metavar="FILE.json",
        help='measured times, {level: {file: {"mean": ms}}}: headroom and a violation flag for '
        "each problem with one (default: none)",
    )
    g = p.add_argument_group("analysis", "passed to each problem's solar analyze")
    g.add_argument(
        "--cache-state",
        choices=("cold", "warm"),
        default="cold",
        help="the cache state of the bound (docs/cache-state.md): warm for --timings from loops "
        "that do not flush L2 between runs (default cold)",
    )
    add_child_arguments(g, skip=("--cache-state",))  # --fidelity, --routing, --kernel-floor
    g = p.add_argument_group("running and results")
    g.add_argument(
        "--out",
        required=True,
        metavar="RESULTS",
        help="the results folder (a second run resumes: it skips the problems recorded there)",
    )
    g.add_argument("--jobs", type=int, default=1, metavar="N", help="problems at once (default 1)")
    g.add_argument(
        "--timeout-s",
        type=float,
        default=1800.0,
        metavar="S",
        help="seconds a problem may run before it is killed and recorded as failed (default 1800)",
    )
    g.add_argument(
        "--isolation",
        choices=ISOLATIONS,
        default=default_isolation(),
        help="fork: import the frameworks once and fork a child per problem (the default where "
        "the system can fork); process: a new Python per problem. Either way a crash or a "
        "timeout ends its problem only (docs/cli.md)",
    )
    return p


def _done_and_todo(
    problems: list[tuple[str, str]], out: str, cache_state: str
) -> tuple[list[dict], list[tuple[str, str]]]:
    """The records already in ``out`` for ``cache_state`` (a record of another cache state is
    run again) and the problems still to run."""
    records: list[dict] = []
    todo = []
    for level, rel in problems:
        path = result_path(out, rel)
        done = None
        if os.path.exists(path):
            with open(path) as f:
                done = json.load(f)
        # A record of another cache state is run again (an older record without one: cold).
        if done is not None and done.get("cache_state", "cold") == cache_state:
            records.append(done)
        else:
            todo.append((level, rel))
    return records, todo


def main(argv: Sequence[str] | None = None) -> int:
    p = _parser()
    start = time.perf_counter()
    try:
        args = p.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as e:
        return 0 if e.code == 0 else 1
    try:
        if args.isolation == "fork" and not hasattr(os, "fork"):
            raise ValueError("--isolation fork: this system cannot fork (use process)")
        if not os.path.isdir(args.dir):
            raise ValueError(f"{args.dir}: not a folder")
        if args.jobs < 1:
            raise ValueError("--jobs must be at least 1")
        timings = load_timings(args.timings)
        from solar.options import check_device

        check_device(args.hw)  # an unknown device: one error now, not one per problem
        problems = find_problems(args.dir)
        if not problems:
            raise ValueError(f"{args.dir}: no *.py problem files")
        os.makedirs(args.out, exist_ok=True)
    except (ValueError, OSError) as e:
        print(f"solar bench: error: {' '.join(str(e).split())}", file=sys.stderr)
        return 1
    records, todo = _done_and_todo(problems, args.out, args.cache_state)
    skipped = len(problems) - len(todo)
    if skipped:
        print(
            f"solar bench: {skipped} problem(s) already done, {len(todo)} to run", file=sys.stderr
        )
    server = None
    if args.isolation == "fork" and todo:  # the children's imports, once, in the fork server
        from solar._modelfile import framework_of

        server = ForkServer(framework_of(os.path.join(args.dir, rel)) for _, rel in todo)
    progress = Progress(len(todo))
    measured = [timing_ms(timings, level, os.path.basename(rel)) for level, rel in todo]
    requests = [
        problem_request(args.dir, rel, args, ms)
        for (_, rel), ms in zip(todo, measured, strict=True)
    ]

    def finish(index: int, child: dict) -> None:  # in this thread, as each problem ends
        level, rel = todo[index]
        try:
            record = problem_record(level, rel, args.cache_state, measured[index], child)
        except Exception as e:  # noqa: BLE001 - never stop the suite
            record = {"level": level, "problem": os.path.basename(rel), "path": rel}
            record.update(status="failed", error=f"{type(e).__name__}: {e}")
            record.update(measured_ms=measured[index], cache_state=args.cache_state)
        write_json_atomic(result_path(args.out, rel), record)
        records.append(record)
        progress.step(rel)

    try:
        run_children(requests, args.jobs, args.isolation, finish, server)
    finally:
        if server is not None:
            server.close()
    run = {
        "wall_s": time.perf_counter() - start,
        "preload_s": server.preload_s if server is not None else 0.0,
        "run": len(todo),
        "jobs": args.jobs,
        "isolation": args.isolation,
    }
    if not todo:  # nothing ran: the measurements stay those of the run that made the records
        run = previous_run(args.out) or run
    s = write_outputs(args.out, records, run)
    sys.stdout.write(stage_table(stage_rows(records, run)))
    for level, v in s.items():
        line = f"{level} ({v['cache_state']} cache): {v['analysed']}/{v['problems']} analysed"
        line += f", {v['failed']} failed"
        for f, g in v["geomean_headroom"].items():
            line += f", {f} headroom geomean {g:.4g} median {v['median_headroom'][f]:.4g}"
        if v["timed"]:
            line += f", {v['violations']} violation(s)"
        print(line)
    print(f"wrote {os.path.join(args.out, 'problems.csv')}, summary.csv and stages.csv")
    return 0
