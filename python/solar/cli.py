"""The ``solar`` console command.

Subcommands implemented in C++ (``solar ir check|fmt|run``, ``sol``, ``--version``, ``help``, ...)
run in-process through ``solar._core.run_cli``, the same code as the native ``solar`` executable.
The subcommands that need PyTorch are here (docs/capture.md):

- ``solar capture MODEL.py -o OUT.json [--golden OUT.npz]``: the capture document (or, with
  ``-o OUT.ir``, the lowered IR program), and optionally the golden data.
- ``solar analyze MODEL.py [--hw NAME] [--policy NAME] [--json OUT] [--ir OUT]``: capture, lower,
  verify against PyTorch, and the SOL report.

torch is imported only by these two subcommands.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from solar import _core

PYTHON_COMMANDS = ("capture", "analyze")

# Python subcommands that live in their own modules: name -> module with ``main(argv) -> int``
# (argv without the subcommand; exit codes as below). Imported only when the command runs.
MODULE_COMMANDS: dict[str, str] = {}


def main(argv: Sequence[str] | None = None) -> int:
    """Runs ``solar ARGS...``; returns the exit code (0 ok, 1 user error, 2 internal error)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in PYTHON_COMMANDS:
        return _run_python_command(args[0], args[1:])
    if args and args[0] in MODULE_COMMANDS:
        import importlib

        return int(importlib.import_module(MODULE_COMMANDS[args[0]]).main(args[1:]))
    return _core.run_cli(args)


def _parser(command: str) -> argparse.ArgumentParser:
    if command == "capture":
        p = argparse.ArgumentParser(
            prog="solar capture",
            description="Capture a PyTorch model file into SOLAR's capture format "
            "(docs/capture.md).",
        )
        p.add_argument("model", help="model file: class Model, get_inputs(), get_init_inputs()")
        p.add_argument(
            "-o",
            "--output",
            required=True,
            help="OUT.json: the capture document; OUT.ir: the lowered IR program",
        )
        p.add_argument("--golden", metavar="OUT.npz", help="also run the model; write its data")
        return p
    p = argparse.ArgumentParser(
        prog="solar analyze",
        description="Capture a PyTorch model file, lower it to IR, verify the IR against PyTorch "
        "and report its speed-of-light time (docs/capture.md, docs/report.md).",
    )
    p.add_argument("model", help="model file: class Model, get_inputs(), get_init_inputs()")
    p.add_argument("--hw", default="H100-SXM", help="device (solar hw list); default H100-SXM")
    p.add_argument("--policy", help="precision policy (docs/precision.md)")
    p.add_argument("--json", metavar="OUT", help="write the JSON report ('-': to stdout)")
    p.add_argument("--ir", metavar="OUT", help="also write the lowered IR program")
    return p


def _run_python_command(command: str, argv: list[str]) -> int:
    try:
        args = _parser(command).parse_args(argv)
    except SystemExit as e:  # argparse: --help (0) or a usage error (2 -> 1, a user error)
        return 0 if e.code == 0 else 1
    try:
        if command == "capture":
            return _capture(args)
        return _analyze(args)
    except (ValueError, OSError) as e:  # CaptureError, AnalysisError, IRError, file errors
        message = " ".join(str(e).split("\n")[0].split()) or type(e).__name__
        print(f"solar {command}: error: {message}", file=sys.stderr)
        return 1


def _capture(args: argparse.Namespace) -> int:
    import os

    from solar import frontend
    from solar.capture import CaptureError, capture, load_model_file, write_atomic, write_npz

    source = os.path.basename(args.model)
    cap = None
    if not args.golden:
        # No data needed: build the model and its inputs as FakeTensors (no memory).
        try:
            model, inputs = load_model_file(args.model, fake=True)
            cap = capture(model, inputs, source=source)
        except CaptureError:
            raise
        except Exception as e:  # a model that cannot be built on meta: build it for real
            print(
                f"solar capture: note: building with FakeTensors failed ({type(e).__name__});"
                " building the model with real tensors",
                file=sys.stderr,
            )
    if cap is None:
        model, inputs = load_model_file(args.model)
        cap = capture(model, inputs, source=source)
    if args.output.endswith(".ir"):
        write_atomic(args.output, frontend.lower(cap.to_json()))
    else:
        write_atomic(args.output, cap.to_json())
    if args.golden:
        write_npz(args.golden, cap.golden(model, inputs))
    return 0


def _analyze(args: argparse.Namespace) -> int:
    from solar import frontend
    from solar.capture import write_atomic

    report = frontend.analyze_file(args.model, hw=args.hw, policy=args.policy)
    if args.ir:
        write_atomic(args.ir, report.ir)
    if args.json == "-":
        sys.stdout.write(report.to_json())
    else:
        sys.stdout.write(report.summary())
        if args.json:
            write_atomic(args.json, report.to_json())
            sys.stdout.write(f"\nwrote {args.json}\n")
    return 0 if report.verification["status"] == "passed" else 1


if __name__ == "__main__":
    sys.exit(main())
