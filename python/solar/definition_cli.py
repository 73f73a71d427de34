"""``solar analyze DEFINITION`` (docs/benchmarks.md): every workload of a FlashInfer-Bench
definition (or those of ``--workload UUID|INDEX``), each captured from the reference's ``run``
and analysed by the one pipeline; the usual table per workload, then the suite table.
``--csv FILE``: one row per workload (``solar.definition.CSV_COLUMNS``, with the score columns
under ``--measured``); ``--json FILE``: every report; ``--measured FILE``: the SOL score and the
headroom of measured latencies. torch is imported only once the files have been read.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from solar import definition as fmt

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
    ("--stage-times", "stage_times"),
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
    failed."""
    from solar._files import check_output_paths, write_atomic

    flag = refused(args)
    if flag is not None:
        raise ValueError(f"{flag} cannot be given with a definition (docs/benchmarks.md)")
    check_output_paths(args.csv, args.json)
    problem = fmt.load(args.model)
    workloads = fmt.select(problem, args.workload)
    measured = fmt.read_measured(args.measured, problem) if args.measured else None
    options = options_of(args)

    from solar.torch import definition as definition_capture

    definition = problem.definition
    namespace = definition_capture.reference_namespace(definition)
    captures = definition_capture.Captures(definition, workloads, namespace)
    entries: list[dict[str, Any]] = []
    tables: list[str] = []
    for workload in workloads:
        try:
            report, notes, capture = definition_capture.analyse_workload(
                definition, workload, namespace, options, captures=captures
            )
        except ValueError as e:  # one line naming the workload
            text = str(e)
            if workload.where not in text:
                text = f"{workload.where} (workload {workload.uuid}): {text}"
            raise ValueError(text) from e
        row = fmt.row_of(definition, workload, report.data)
        row["index"] = workload.index
        row["capture"] = capture
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
        text = "\n".join([title, *(f"note: {n}" for n in notes), report.summary().rstrip("\n")])
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
    json_text = json.dumps(document, sort_keys=True, indent=2, allow_nan=False) + "\n"
    csv_text = fmt.csv_text(rows, _columns(measured))
    if args.csv:  # all files before anything is printed
        write_atomic(args.csv, csv_text)
    if args.json and args.json != "-":
        write_atomic(args.json, json_text)
    if args.json == "-":
        sys.stdout.write(json_text)
    else:
        if not args.suite_only:
            sys.stdout.write("\n".join(tables) + "\n")
        sys.stdout.write(fmt.suite_table(definition, rows, measured is not None))
        sys.stdout.write(
            f"capture: {captures.count} capture(s) for {len(entries)} workload(s), "
            f"{captures.shared} on a capture shared with another; "
            "SOL score T_SOL: the fused SOL (docs/benchmarks.md)\n"
        )
        for path in (args.csv, args.json):
            if path:
                sys.stdout.write(f"wrote {path}\n")
    failed = any(e["row"]["verification"] == "failed" for e in entries)
    return 1 if failed else 0


def _columns(measured: Any) -> tuple[str, ...]:
    return fmt.CSV_COLUMNS + (fmt.SCORE_COLUMNS if measured is not None else ())
