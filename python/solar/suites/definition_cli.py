"""``solar analyze DEFINITION`` (docs/benchmarks.md): every workload of a FlashInfer-Bench
definition (or those of ``--workload UUID|INDEX``), each captured from the reference's ``run``
and analysed by the one pipeline; the usual table per workload, then the suite table.
``--csv FILE``: one row per workload (``solar.suites.definition.CSV_COLUMNS``, with the score
columns under ``--measured``); ``--json FILE``: every report; ``--measured FILE``: the SOL score and
the headroom of measured latencies. torch is imported only once the files have been read.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from solar.suites import definition as fmt

if TYPE_CHECKING:
    from solar.options import Options

# solar analyze's options that mean nothing for a definition (a model file's, or a serving
# step's): given with a definition, a one-line error.
_REFUSED = (
    ("--serve", "serve"),
    ("--train", "train"),
    ("--llm", "llm"),
    ("--llm-fallback", "llm_fallback"),
    ("--size", "size"),
    ("--measure", "measure"),
    ("--measurement", "measurement"),
    ("--measured-ms", "measured_ms"),
    ("--html", "html"),
    ("--trace", "trace"),
    ("--dot", "dot"),
    ("--ir", "ir"),
    ("--batch-sweep", "batch_sweep"),
)

SCHEMA_VERSION = 1


def refused(args: argparse.Namespace) -> str | None:
    """The first option given that a definition does not take (None: none)."""
    for flag, name in _REFUSED:
        value = getattr(args, name, None)
        if value not in (None, False, []):
            return flag
    return None


def analyze_definition(
    args: argparse.Namespace, options_of: Callable[[argparse.Namespace], Options]
) -> int:
    """``solar analyze DEFINITION [--workload ...] [--csv F] [--json F] [--measured F]``, with
    the options ``options_of(args)`` makes of the command line (``solar.cli.options_of``, once
    the options a definition refuses are ruled out); exit code 1 when a workload's verification
    failed. A folder of definitions (``fmt.is_suite``): ``analyze_suite``."""
    from solar._files import check_output_paths, write_atomic

    flag = refused(args)
    if flag is not None:
        raise ValueError(f"{flag} cannot be given with a definition (docs/benchmarks.md)")
    check_output_paths(args.csv, args.json, args.stage_times)
    if fmt.is_suite(args.model):
        return analyze_suite(args, options_of)
    problem = fmt.load(args.model)
    workloads = fmt.select(problem, args.workload)
    measured = fmt.read_measured(args.measured, problem) if args.measured else None
    options = options_of(args)
    times: dict[str, float] = {}
    try:
        done = _analyse(problem, workloads, options, measured, _Shown.of(args), times)
    finally:
        if args.stage_times:
            _write_stage_times(args.stage_times, times)
    json_text = _json(done.document)
    csv_text = fmt.csv_text(done.rows, _columns(measured))
    if args.csv:  # all files before anything is printed
        write_atomic(args.csv, csv_text)
    if args.json and args.json != "-":
        write_atomic(args.json, json_text)
    if args.json == "-":
        sys.stdout.write(json_text)
    else:
        sys.stdout.write(done.text)
        for path in (args.csv, args.json):
            if path:
                sys.stdout.write(f"wrote {path}\n")
    return 1 if done.failed else 0


def analyze_suite(
    args: argparse.Namespace, options_of: Callable[[argparse.Namespace], Options]
) -> int:
    """``solar analyze SUITE`` (a folder of definition folders): every workload of every
    definition, in one process (torch imported and its export warmed up once), each definition
    as ``solar analyze DEFINITION`` analyses it, its text printed as it is done; a definition
    that fails is its one line on stderr and the others go on. ``--csv``: every definition's
    rows under one header; ``--json``: ``{"definitions": [each definition's document],
    "failures": [...]}``; ``--stage-times``: the seconds of each stage summed, and per
    definition. Exit code 1 when a definition failed or a workload's verification failed."""
    from solar._files import write_atomic

    for flag, given in (("--workload", args.workload), ("--measured", args.measured)):
        if given:
            raise ValueError(
                f"{flag} names the workloads of one definition; not with a folder of "
                "definitions (docs/benchmarks.md)"
            )
    paths = fmt.suite_definitions(args.model)
    options = options_of(args)
    documents: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    failures: list[dict[str, str]] = []
    times: dict[str, float] = {}
    per_definition: dict[str, dict[str, float]] = {}
    failed = False
    to_stdout = args.json != "-"
    from solar.torch.definition import isolated

    for path in paths:
        own: dict[str, float] = {}
        start = time.perf_counter()
        try:
            with isolated():
                problem = fmt.load(path)
                done = _analyse(problem, problem.workloads, options, None, _Shown.of(args), own)
        except Exception as e:  # noqa: BLE001 - one definition's failure; the others go on
            line = _error_line(e)
            failures.append({"definition": path, "error": line})
            failed = True
            print(f"solar analyze: error: {line}", file=sys.stderr, flush=True)
            done = None
        own["total"] = time.perf_counter() - start
        per_definition[path] = own
        for stage, seconds in own.items():
            if stage != "total":
                times[stage] = times.get(stage, 0.0) + seconds
        if done is None:
            continue
        documents.append(done.document)
        rows += done.rows
        failed = failed or done.failed
        if to_stdout:
            sys.stdout.write(done.text + "\n")
            sys.stdout.flush()
    workloads = sum(len(d["workloads"]) for d in documents)
    if args.stage_times:
        _write_stage_times(args.stage_times, times, per_definition)
    if args.csv:
        write_atomic(args.csv, fmt.csv_text(rows, _columns(None)))
    document = {"schema_version": SCHEMA_VERSION, "definitions": documents, "failures": failures}
    if args.json and args.json != "-":
        write_atomic(args.json, _json(document))
    if args.json == "-":
        sys.stdout.write(_json(document))
        return 1 if failed else 0
    names = ", ".join(os.path.basename(f["definition"]) for f in failures)
    sys.stdout.write(
        f"suite {args.model}: {len(paths)} definition(s), {len(documents)} analysed "
        f"({workloads} workload(s)), {len(failures)} failed{': ' + names if names else ''}\n"
    )
    for path in (args.csv, args.json):
        if path:
            sys.stdout.write(f"wrote {path}\n")
    return 1 if failed else 0


def _error_line(e: BaseException) -> str:
    text = " ".join(str(e).split("\n")[0].split()) or type(e).__name__
    if isinstance(e, (ValueError, OSError)):  # a user error: its one line
        return text
    return f"internal error: {type(e).__name__}: {text} (a bug in SOLAR: please report it)"


@dataclass
class _Analysed:
    """One definition analysed: its JSON document, CSV rows, terminal text, and whether a
    workload's verification failed."""

    document: dict[str, Any]
    rows: list[dict[str, Any]]
    text: str
    failed: bool


@dataclass(frozen=True)
class _Shown:
    """What the terminal shows: only the suite's summary (``--suite-only``), and every per-op
    check and per-node note (``--details``)."""

    suite_only: bool
    details: bool

    @staticmethod
    def of(args: argparse.Namespace) -> _Shown:
        return _Shown(bool(args.suite_only), bool(getattr(args, "details", False)))


def _analyse(
    problem: fmt.Problem,
    workloads: list[fmt.Workload],
    options: Options,
    measured: Any,
    shown: _Shown,
    times: dict[str, float],
) -> _Analysed:
    from solar.torch import definition as definition_capture

    definition = problem.definition
    namespace = definition_capture.reference_namespace(definition)
    captures = definition_capture.Captures(definition, workloads, namespace)
    entries: list[dict[str, Any]] = []
    tables: list[str] = []
    for workload in workloads:
        try:
            report, notes, capture, built = definition_capture.analyse_workload(
                definition, workload, namespace, options, times, captures
            )
        except ValueError as e:  # one line naming the workload
            text = str(e)
            if workload.where not in text:
                text = f"{workload.where} (workload {workload.uuid}): {text}"
            raise ValueError(text) from e
        row = fmt.row_of(definition, workload, report.data)
        row["index"] = workload.index
        row["capture"] = capture
        row["inputs"] = built
        if measured is not None:
            fmt.add_score(row, measured.get(workload.uuid))
        axes = fmt.resolve_axes(definition, workload)
        entries.append(
            {
                "index": workload.index,
                "uuid": workload.uuid,
                "axes": axes,
                "notes": notes,
                "row": {k: row[k] for k in _columns(measured)},
                "report": report.data,
            }
        )
        var_axes = fmt.axes_text(definition, workload) or "no var axes"
        title = f"workload {workload.index}: {workload.uuid} ({var_axes})"
        text = "\n".join(
            [title, *(f"note: {n}" for n in notes), report.summary(shown.details).rstrip("\n")]
        )
        tables.append(text + "\n")
    rows = [dict(e["row"], index=e["index"]) for e in entries]
    document = {
        "schema_version": SCHEMA_VERSION,
        "definition": definition.name,
        "capture": {
            "captures": captures.count,
            "workloads": len(entries),
            "shared": captures.shared,
        },
        "sol_score": {
            "formula": "1 / (1 + (T_kernel - T_SOL) / (T_baseline - T_SOL))",
            "t_sol": "fused",
        },
        "workloads": entries,
    }
    text = "" if shown.suite_only else "\n".join(tables) + "\n"
    text += fmt.suite_table(definition, rows, measured is not None)
    text += (
        f"capture: {captures.count} capture(s) for {len(entries)} workload(s), "
        f"{captures.shared} on a capture shared with another; "
        "SOL score T_SOL: the fused SOL (docs/benchmarks.md)\n"
    )
    failed = any(e["row"]["verification"] == "failed" for e in entries)
    return _Analysed(document, rows, text, failed)


def _json(document: dict[str, Any]) -> str:
    return json.dumps(document, sort_keys=True, indent=2, allow_nan=False) + "\n"


def _write_stage_times(
    path: str, times: dict[str, float], per_definition: dict[str, dict[str, float]] | None = None
) -> None:
    """``--stage-times``: ``{stage: seconds}`` summed over the workloads (as for a model file);
    for a suite also ``definitions``: each definition's stages and ``total`` (its wall time)."""
    from solar._files import write_atomic
    from solar.stages import STAGES

    data: dict[str, Any] = {stage: times.get(stage, 0.0) for stage in STAGES}
    if per_definition is not None:
        data["definitions"] = per_definition
    write_atomic(path, json.dumps(data, sort_keys=True, indent=1) + "\n")


def _columns(measured: Any) -> tuple[str, ...]:
    return fmt.CSV_COLUMNS + (fmt.SCORE_COLUMNS if measured is not None else ())
