"""``solar sweep --models A.py B.ir ... --hw NAME ... --out DIR``: the cross product of model
files (or IR files) x devices x precision policies x sizes x parallel layouts (docs/sweeps.md).

Each combination is a task with a stable id (``<model>_<device>_<policy>_<sizes>_<layout>_<hash>``,
the hash of its parameters) that runs ``solar analyze`` (``solar sol`` for an IR file, ``*.ir``: no
torch) in its own child process (solar.suites._child.run_child, the same runner as ``solar bench``),
on a Ray cluster (``--ray local`` or ``--ray ADDRESS``: one Ray task per combination, re-run
elsewhere when its worker dies) or on this machine's thread pool (no ``--ray``). The driver
writes each result as it arrives, to ``DIR/results/<id>.json``: the task's parameters, its status
(analysed, failed, crashed, timeout), the one-line error and the ``--json`` report. A rerun
skips every task with a result, except the crashed ones. At the end, ``DIR/sweep.json`` and
``DIR/sweep.csv`` (one row per task: parameters, status, SOL and bottleneck per fidelity, the
per-device fused SOL of a layout), in the order of the cross product: the same inputs give the
same bytes, whichever ran the tasks.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import logging
import os
import re
import sys
from collections.abc import Sequence

from solar._files import write_atomic
from solar.options import add_child_arguments, child_flags
from solar.suites._child import Progress, run_child, run_local, write_json_atomic

SCHEMA_VERSION = 1
STATUSES = ("analysed", "failed", "crashed", "timeout")
RERUN = ("crashed",)  # statuses a rerun runs again (a worker died; nothing was learnt)
AXES = ("models", "hw", "policy", "size", "parallel")  # the keys of a --spec file
NO_LAYOUT = "none"


def task_params(
    model: str,
    hw: str,
    policy: str | None,
    sizes: dict,
    parallel: str | None,
    analysis: Sequence[str] = (),
):
    """A task's parameters, as recorded (``sizes`` sorted by name); ``analysis``: the analysis
    options every task passes on (``solar.options.CHILD_FLAGS``; recorded only when given)."""
    params = {
        "model": model,
        "hw": hw,
        "policy": policy,
        "sizes": dict(sorted(sizes.items())),
        "parallel": parallel,
    }
    if analysis:
        params["analysis"] = list(analysis)
    return params


def task_id(params: dict) -> str:
    """``<model stem>_<device>_<policy>_<sizes>_<layout>_<8 hex digits>``: readable, and unique by
    the hash of the parameters (the model path as given)."""
    sizes = "-".join(f"{k}{v}" for k, v in params["sizes"].items()) or "default"
    parts = [
        os.path.splitext(os.path.basename(params["model"]))[0],
        params["hw"],
        params["policy"] or "default",
        sizes,
        params["parallel"] or NO_LAYOUT,
    ]
    slug = "_".join(re.sub(r"[^A-Za-z0-9.-]+", "-", p).strip("-") or "x" for p in parts)
    digest = hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:8]
    return f"{slug}_{digest}"


def expand(axes: dict, analysis: Sequence[str] = ()) -> list[dict]:
    """Every task of the cross product, in order: models, then devices, policies, sizes,
    layouts (each with the ``analysis`` options)."""
    tasks = []
    for model in axes["models"]:
        for hw in axes["hw"]:
            for policy in axes["policy"]:
                for sizes in axes["size"]:
                    for parallel in axes["parallel"]:
                        params = task_params(model, hw, policy, sizes, parallel, analysis)
                        tasks.append({"id": task_id(params), **params})
    return tasks


def is_ir(model: str) -> bool:
    """An IR file (``*.ir``) runs ``solar sol``; any other model file ``solar analyze``."""
    return model.endswith(".ir")


def analyze_options(task: dict) -> list[str]:
    """The ``solar analyze`` (or, for an IR file, ``solar sol``) options of a task (after the
    file and ``--json``): the same but for the sizes, ``--size N=1024,M=64`` for analyze and
    ``--size N=1024 --size M=64`` for sol."""
    options = ["--hw", task["hw"]]
    if task["policy"]:
        options += ["--policy", task["policy"]]
    if task["sizes"] and is_ir(task["model"]):
        for k, v in task["sizes"].items():
            options += ["--size", f"{k}={v}"]
    elif task["sizes"]:
        options += ["--size", ",".join(f"{k}={v}" for k, v in task["sizes"].items())]
    if task["parallel"]:
        options += ["--parallel", task["parallel"]]  # docs/sweeps.md, "Parallel layouts"
    return options + list(task.get("analysis", []))  # --fidelity, --routing, ...


def run_task(task: dict, timeout_s: float) -> dict:
    """Runs one task (``solar analyze``, or ``solar sol`` for an IR file, in a child process,
    here or on a Ray worker) and returns its result record; never raises for what the child
    does."""
    command = "sol" if is_ir(task["model"]) else "analyze"
    child = run_child(command, task["abspath"], analyze_options(task), timeout_s)
    status, error, report = child["status"], child["error"], child["report"]
    if report is not None and report.get("verification", {}).get("status") == "failed":
        status = "failed"
        error = " ".join(f"verification failed: {report['verification'].get('detail', '')}".split())
    return record_of(task, status, error, report)


def record_of(task: dict, status: str, error: str | None, report: dict | None) -> dict:
    params = {k: task[k] for k in ("model", "hw", "policy", "sizes", "parallel")}
    return {
        "schema_version": SCHEMA_VERSION,
        "id": task["id"],
        "task": params,
        "status": status,
        "error": error,
        "report": report,
    }


def one_line(e: BaseException) -> str:
    """The first non-empty line of an exception's message, after its type."""
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    return f"{type(e).__name__}: {lines[0]}" if lines else type(e).__name__


def row_of(record: dict) -> dict:
    """The ``sweep.json`` row of a result: parameters, status, error, verification, and per
    fidelity its SOL seconds and bottleneck."""
    report = record.get("report") or {}
    sol = report.get("sol", {})
    fidelities = sorted(report.get("bytes", {}))
    return {
        "id": record["id"],
        **record["task"],
        "status": record["status"],
        "error": record["error"],
        "verification": report.get("verification", {}).get("status"),
        "sol_s": {f: sol.get(f"{f}_s") for f in fidelities},
        "bottleneck": {f: sol.get(f"bottleneck_{f}") for f in fidelities},
        # --parallel: the fused SOL per device of the layout (docs/parallel.md)
        "parallel_fused_s": (report.get("parallel") or {})
        .get("fidelities", {})
        .get("fused", {})
        .get("time_s"),
    }


def csv_text(rows: list[dict]) -> str:
    """``sweep.csv``: one row per task; sizes as ``N=1024;M=64``; ``sol_s_<fidelity>`` and
    ``bottleneck_<fidelity>`` columns, fidelities sorted, then ``parallel_fused_s``."""
    fidelities = sorted({f for r in rows for f in r["sol_s"]})
    columns = ["id", "model", "hw", "policy", "sizes", "parallel", "status", "error"]
    columns += ["verification", *(f"sol_s_{f}" for f in fidelities)]
    columns += [f"bottleneck_{f}" for f in fidelities]
    columns += ["parallel_fused_s"]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for r in rows:
        flat = dict(r, sizes=";".join(f"{k}={v}" for k, v in r["sizes"].items()))
        flat.update({f"sol_s_{f}": v for f, v in r["sol_s"].items()})
        flat.update({f"bottleneck_{f}": v for f, v in r["bottleneck"].items()})
        w.writerow(["" if flat.get(c) is None else flat.get(c) for c in columns])
    return buf.getvalue()


def result_path(out: str, tid: str) -> str:
    return os.path.join(out, "results", f"{tid}.json")


def finished(out: str, tid: str) -> dict | None:
    """The recorded result of a task, or None when it must run (none yet, or it crashed)."""
    path = result_path(out, tid)
    if not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            record = json.load(f)
    except (OSError, ValueError):  # not one of ours (written atomically): run it again
        return None
    return None if record.get("status") in RERUN else record


# --- running the tasks -------------------------------------------------------------------------


def run_on_pool(todo: list[dict], timeout_s: float, jobs: int, done) -> None:
    """Runs the tasks on this machine, ``jobs`` children at once."""

    def one(task: dict) -> None:
        try:
            record = run_task(task, timeout_s)
        except Exception as e:  # noqa: BLE001 - never stop the sweep
            record = record_of(task, "crashed", one_line(e), None)
        done(record)

    run_local(todo, one, jobs)


def run_on_ray(todo: list[dict], timeout_s: float, ray_address: str, jobs: int, retries: int, done):
    """Runs each task as a Ray task (``max_retries=retries``: a task whose worker or node dies
    runs again elsewhere); writes each result as it arrives (``ray.wait``). A task that still
    fails is recorded ``crashed`` with Ray's one-line reason."""
    ray = import_ray()
    if ray_address == "local":
        ray.init(
            num_cpus=jobs,
            include_dashboard=False,
            log_to_driver=False,
            logging_level=logging.ERROR,
        )
    else:
        try:
            ray.init(address=ray_address, log_to_driver=False, logging_level=logging.ERROR)
        except Exception as e:  # noqa: BLE001 - Ray's own exceptions: one line
            raise ValueError(f"cannot connect to the Ray cluster at '{ray_address}': {e}") from e
    try:
        remote = ray.remote(num_cpus=1, max_retries=retries, retry_exceptions=False)(run_task)
        pending = {remote.remote(task, timeout_s): task for task in todo}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                task = pending.pop(ref)
                try:
                    record = ray.get(ref)
                except Exception as e:  # noqa: BLE001 - WorkerCrashedError, NodeDiedError, ...
                    record = record_of(task, "crashed", one_line(e), None)
                done(record)
    finally:
        ray.shutdown()


def import_ray():
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        import ray
    except ImportError as e:
        raise ValueError("--ray needs Ray: pip install 'solar[sweep]' (ray==2.60.0)") from e
    return ray


# --- the command -------------------------------------------------------------------------------


def parse_args(argv: list[str]) -> argparse.Namespace | int:
    """The options; or the exit code when there is nothing to run (``--help``: 0; a usage
    error, one line: 1)."""
    from solar.options import ArgumentParser  # a usage error is one line

    p = ArgumentParser(
        prog="solar sweep",
        description="Analyse every combination of model files, devices, precision policies, "
        "sizes and parallel layouts, on a Ray cluster or this machine (docs/sweeps.md).",
    )
    g = p.add_argument_group(
        "axes", "each task is one combination; an option replaces the --spec file's axis"
    )
    g.add_argument("--spec", metavar="FILE", help="the axes as a JSON or YAML file")
    g.add_argument(
        "--models",
        nargs="+",
        metavar="MODEL.py",
        help="model files, or IR files (*.ir); required, here or in --spec",
    )
    g.add_argument(
        "--hw",
        nargs="+",
        metavar="NAME",
        help="devices (solar hw list) or device files; required, here or in --spec",
    )
    g.add_argument(
        "--policy",
        nargs="+",
        metavar="P",
        help="precision policies (docs/precision.md; default: none, each child's default)",
    )
    g.add_argument(
        "--size",
        action="append",
        metavar="N=1024[,M=64]",
        help="one point of the sizes axis (repeat for more): the model file's integer globals "
        "(default: the files' own sizes)",
    )
    g.add_argument(
        "--parallel",
        nargs="+",
        metavar="LAYOUT",
        help="parallel layouts, passed to solar analyze/sol --parallel ('none': no option, the "
        "default)",
    )
    g = p.add_argument_group("analysis", "passed to every task unchanged")
    add_child_arguments(g)  # --fidelity, --routing, --cache-state, --kernel-floor
    g = p.add_argument_group("running and results")
    g.add_argument(
        "--out",
        required=True,
        metavar="DIR",
        help="the results folder (a second run resumes: it skips the tasks recorded there)",
    )
    g.add_argument(
        "--ray",
        metavar="local|ADDRESS",
        help="run on a Ray cluster: local starts one here for this command, ADDRESS "
        "(HOST:PORT) joins a running one (default: no Ray, --jobs children here)",
    )
    g.add_argument(
        "--jobs",
        type=int,
        default=1,
        metavar="N",
        help="tasks at once (default 1; ignored with --ray ADDRESS)",
    )
    g.add_argument(
        "--timeout-s",
        type=float,
        default=1800.0,
        metavar="S",
        help="seconds a task may run before it is killed (default 1800)",
    )
    g.add_argument(
        "--retries",
        type=int,
        default=3,
        metavar="R",
        help="Ray: re-runs of a task whose worker died (default 3)",
    )
    try:
        return p.parse_args(argv)
    except SystemExit as e:
        return 0 if e.code == 0 else 1


def load_spec(path: str) -> dict:
    """A ``--spec`` file: an object whose keys are among AXES, each a list (``size``: of
    ``"N=1024,M=64"`` strings or ``{"N": 1024}`` objects)."""
    with open(path) as f:
        text = f.read()
    if path.endswith((".yaml", ".yml")):
        try:
            import yaml
        except ImportError as e:
            raise ValueError(f"{path}: YAML needs PyYAML (or write the spec as JSON)") from e
        try:
            spec = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise ValueError(f"{path}: not valid YAML: {e}") from e
    else:
        try:
            spec = json.loads(text)
        except ValueError as e:
            raise ValueError(f"{path}: not valid JSON: {e}") from e
    if not isinstance(spec, dict):
        raise ValueError(f"{path}: expected an object with keys {', '.join(AXES)}")
    for key, value in spec.items():
        if key not in AXES:
            raise ValueError(f"{path}: unknown key '{key}' (valid: {', '.join(AXES)})")
        if not isinstance(value, list) or not value:
            raise ValueError(f"{path}: '{key}' must be a non-empty list")
    sizes = []
    for item in spec.get("size", []):
        if isinstance(item, dict):
            item = ",".join(f"{k}={v}" for k, v in item.items())
        sizes.append(str(item))
    if sizes:
        spec["size"] = sizes
    return spec


def axes_of(args: argparse.Namespace) -> dict:
    """The five axes from the spec file and the options (an option replaces the spec's axis),
    checked: files exist, nothing given twice."""
    from solar._modelfile import parse_sizes

    spec = load_spec(args.spec) if args.spec else {}
    pick = {key: getattr(args, key) or spec.get(key) for key in AXES}
    if not pick["models"]:
        raise ValueError("give the model files: --models A.py ... (or a --spec file)")
    if not pick["hw"]:
        raise ValueError("give the devices: --hw NAME ... (or a --spec file)")
    axes = {
        "models": [str(m) for m in pick["models"]],
        "hw": [str(h) for h in pick["hw"]],
        "policy": [str(p) for p in pick["policy"]] if pick["policy"] else [None],
        "size": [parse_sizes([s]) for s in pick["size"]] if pick["size"] else [{}],
        "parallel": [None if str(x) == NO_LAYOUT else str(x) for x in pick["parallel"] or []]
        or [None],
    }
    for key, values in axes.items():
        seen = []
        for v in values:
            if v in seen:
                shown = ",".join(f"{k}={n}" for k, n in v.items()) if isinstance(v, dict) else v
                raise ValueError(f"--{key}: '{shown or NO_LAYOUT}' is given twice")
            seen.append(v)
    for model in axes["models"]:
        if not os.path.isfile(model):
            raise ValueError(f"{model}: no such model file")
    from solar.options import check_device

    for hw in axes["hw"]:
        check_device(hw)  # an unknown device: one error now, not one per task
    return axes


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(list(sys.argv[1:] if argv is None else argv))
    if isinstance(args, int):
        return args
    try:
        if args.jobs < 1:
            raise ValueError("--jobs must be at least 1")
        if args.retries < 0:
            raise ValueError("--retries must be at least 0")
        if args.timeout_s <= 0:
            raise ValueError("--timeout-s must be positive")
        tasks = expand(axes_of(args), child_flags(args))
        if os.path.exists(args.out) and not os.path.isdir(args.out):
            raise ValueError(f"--out {args.out}: not a folder")
        os.makedirs(os.path.join(args.out, "results"), exist_ok=True)
        if args.ray:
            import_ray()  # before anything runs: a missing Ray is one line
        records: dict[str, dict] = {}
        todo = []
        for task in tasks:
            record = finished(args.out, task["id"])
            if record is None:
                todo.append(dict(task, abspath=os.path.abspath(task["model"])))
            else:
                records[task["id"]] = record
        if records:
            print(
                f"solar sweep: {len(records)} task(s) already done, {len(todo)} to run",
                file=sys.stderr,
            )
        progress = Progress(len(todo))

        def done(record: dict) -> None:  # as each result arrives: nothing finished is lost
            write_json_atomic(result_path(args.out, record["id"]), record)
            records[record["id"]] = record
            progress.step(record["id"])

        if todo and args.ray:
            run_on_ray(todo, args.timeout_s, args.ray, args.jobs, args.retries, done)
        elif todo:
            run_on_pool(todo, args.timeout_s, args.jobs, done)
        rows = [row_of(records[t["id"]]) for t in tasks]
        write_json_atomic(
            os.path.join(args.out, "sweep.json"), {"schema_version": SCHEMA_VERSION, "tasks": rows}
        )
        write_atomic(os.path.join(args.out, "sweep.csv"), csv_text(rows))
    except (ValueError, OSError) as e:
        print(f"solar sweep: error: {' '.join(str(e).split())}", file=sys.stderr)
        return 1
    counts = {s: sum(1 for r in rows if r["status"] == s) for s in STATUSES}
    print(f"{len(rows)} task(s): " + ", ".join(f"{n} {s}" for s, n in counts.items()))
    print(f"wrote {os.path.join(args.out, 'sweep.json')} and sweep.csv")
    return 0
