"""The ``solar`` console command.

Subcommands implemented in C++ (``solar ir check|fmt|run``, ``sol``, ``--version``, ``help``, ...)
run in-process through ``solar._core.run_cli``, the same code as the native ``solar`` executable.
The subcommands that need PyTorch or JAX are here (docs/capture.md, docs/jax.md); a model file
goes to its framework's adapter through ``solar.adapters``, with every option:

- ``solar capture MODEL.py -o OUT.json [--golden OUT.npz]``: the capture document (or, with
  ``-o OUT.ir``, the lowered IR program), and optionally the golden data.
- ``solar analyze MODEL.py [--hw NAME] [--policy NAME] [--json OUT] [--ir OUT] [--fidelity F]
  [--no-verify] [--allow-unsupported] [--verify-budget-mb MB] [--verify-budget-s S]
  [--verify-mode M] [--stage-times OUT.json]``: capture, lower, verify against the framework,
  and the SOL report (``--stage-times``: the seconds each stage took, for ``solar bench``).
  With ``--serve prefill|decode [--batch B] [--context T] [--batch-sweep LIST]``, one serving
  step of a decoder instead (solar.torch.serve, docs/serving.md).
- ``solar calibrate -o FILE.yaml`` (solar.timing.calibrate) and ``solar bench DIR --hw NAME --out
  DIR`` (solar.suites.bench): docs/calibrate.md. ``analyze`` also takes ``--measure``,
  ``--measured-ms``, ``--html``, ``--trace``, ``--csv`` and ``--dot``.
- ``solar sol|provision|compare|curve MODEL.py ARGS...``: capture, lower and verify the model file,
  then run the C++ command on the lowered program (in memory) with ARGS unchanged.

torch or jax is imported only by these subcommands, and only the model file's own.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from solar import _core

if TYPE_CHECKING:
    from solar.options import AnalysisOptions, Options

PYTHON_COMMANDS = ("capture", "analyze")

# Python subcommands that live in their own modules: name -> module with ``main(argv) -> int``
# (argv without the subcommand; exit codes as below). Imported only when the command runs.
MODULE_COMMANDS: dict[str, str] = {
    "translate": "solar.llm.cli",
    "calibrate": "solar.timing.calibrate",  # docs/calibrate.md
    "bench": "solar.suites.bench",  # docs/calibrate.md, "Suites"
    "sweep": "solar.suites.sweep",  # docs/sweeps.md
}


def main(argv: Sequence[str] | None = None) -> int:
    """Runs ``solar ARGS...``; returns the exit code (0 ok, 1 user error, 2 internal error). An
    internal error (a bug: an exception that is no user error) is one line and exit code 2,
    never a traceback."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        return _main(args)
    except KeyboardInterrupt:
        print("solar: interrupted", file=sys.stderr)
        return 130
    except MemoryError:  # as the native executable says it (src/cli/guard.cpp)
        command = args[0] if args and not args[0].startswith("-") else ""
        prefix = f"solar {command}" if command else "solar"
        print(f"{prefix}: error: out of memory (run at smaller sizes)", file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001 - a bug: one line, exit code 2
        command = args[0] if args and not args[0].startswith("-") else ""
        prefix = f"solar {command}" if command else "solar"
        text = _one_line(e).removeprefix("internal error: ")
        print(
            f"{prefix}: internal error: {type(e).__name__}: {text} (a bug in SOLAR: please "
            "report it with the command that caused it)",
            file=sys.stderr,
        )
        return 2


def _main(args: list[str]) -> int:
    if len(args) == 2 and args[0] == "help" and args[1] in (*PYTHON_COMMANDS, *MODULE_COMMANDS):
        args = [args[1], "--help"]  # (the C++ help knows these commands by name only)
    if args and args[0] in PYTHON_COMMANDS:
        return _run_python_command(args[0], args[1:])
    if args and args[0] in MODEL_FILE_COMMANDS and _model_file_index(args) is not None:
        return _run_on_model_file(args)
    if args and args[0] in MODULE_COMMANDS:
        import importlib

        return int(importlib.import_module(MODULE_COMMANDS[args[0]]).main(args[1:]))
    return _core.run_cli(args)


# C++ analysis commands that also take a PyTorch/JAX model file in place of their IR file.
MODEL_FILE_COMMANDS = ("sol", "provision", "compare", "curve")


def _model_file_index(args: list[str]) -> int | None:
    """The position of the first argument ending in ``.py`` (the model file), or None."""
    for i, arg in enumerate(args[1:], start=1):
        if arg.endswith(".py") and not arg.startswith("-"):
            return i
    return None


def _run_on_model_file(args: list[str]) -> int:
    """``solar CMD MODEL.py ARGS...``: ARGS checked first (``_core.check_program_args``: an
    unknown device or a bad option costs no capture); capture, lower and verify the model
    (whole program when it
    fits, else per op: ``solar.stages.run`` up to ``Verified``), then run ``CMD`` on the lowered
    program in memory (``_core.run_on_program``), with ARGS unchanged (the framework's default
    policy added when ARGS give none); the report shows the model file's name and its capture,
    coverage and verification. A model that cannot be captured, lowered or verified is a
    one-line error and exit code 1."""
    command, index = args[0], _model_file_index(args)
    path = args[index]
    rc = _core.check_program_args(command, args[1:])  # a wrong device costs no capture
    if rc is not None:
        return rc
    try:
        from solar import adapters
        from solar.options import Options

        verified = adapters.run_file(path, Options(), until="verified")
    except (ValueError, OSError) as e:
        print(f"solar {command}: error: {_one_line(e)}", file=sys.stderr)
        return 1
    v = verified.verification
    if v.status == "failed":
        print(f"solar {command}: error: {path}: verification failed: {v.detail}", file=sys.stderr)
        return 1
    return adapters.run_command(verified, command, args[1:], index - 1)


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split("\n")[0].split()) or type(e).__name__
    if text.startswith("solar ") and ": error: " in text:  # the C++ command's own prefix
        text = text.split(": error: ", 1)[1]
    return text


def _budget(text: str) -> float:
    """A verification budget: a non-negative finite number."""
    import math

    value = float(text)  # ValueError: argparse's "invalid _budget value"
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative number, not '{text}'")
    return value


MODEL_HELP = (
    "model file: PyTorch (class Model, get_inputs(), get_init_inputs()) or JAX (get_inputs() "
    "and forward(...) or a Flax Model)"
)


def _parser(command: str) -> argparse.ArgumentParser:
    """The arguments of ``solar capture`` or ``solar analyze`` (``command``)."""
    if command == "capture":
        return _capture_parser()
    from solar.options import OPTIMIZERS, ArgumentParser

    p = ArgumentParser(
        prog="solar analyze",
        usage="%(prog)s [-h] MODEL [OPTIONS]",
        description="Capture a PyTorch or JAX model file, lower it to IR, verify the IR against "
        "the framework and report its speed-of-light time (docs/capture.md, docs/report.md).",
    )
    g = p.add_argument_group("input and program")
    g.add_argument(
        "model",
        help=MODEL_HELP + "; or a kernel-benchmark definition.json (or its folder) and its "
        "workloads, or a folder of such definition folders (docs/benchmarks.md)",
    )
    g.add_argument(
        "--size",
        action="append",
        metavar="N=1024",
        help="set the model file's integer global N before get_inputs() runs (repeatable, or "
        "comma-separated: N=1024,M=64; docs/sweeps.md)",
    )
    g.add_argument(
        "--build-budget-s",
        type=_budget,
        default=600.0,
        metavar="S",
        help="stop the model file's own code (get_inputs(), get_init_inputs(), Model(...)) when "
        "one call runs past S seconds, with the line it was running (default 600)",
    )
    g.add_argument(
        "--train",
        action="store_true",
        help="analyse one training step: forward, backward of the loss (the file's get_loss, "
        "else the sum of the outputs) and --optimizer's update (docs/training.md)",
    )
    g.add_argument(
        "--optimizer",
        choices=OPTIMIZERS,
        help="with --train: the optimizer whose update of every parameter ends the step "
        "(default: none, forward and backward only)",
    )
    g.add_argument(
        "--allow-unsupported",
        action="store_true",
        help="analyse the rest of a graph with operators that have no lowering rule (listed in "
        "the report; their outputs are fed from the framework's run); default: such an operator "
        "is an error",
    )
    _add_device_and_fidelity_arguments(p)
    _add_verification_arguments(p)
    g = p.add_argument_group("measured time and headroom (docs/calibrate.md)")
    add_measured_arguments(g)  # --measure, --measured-ms, ...
    g = p.add_argument_group("serving and parallel (docs/serving.md, docs/parallel.md)")
    add_serve_arguments(g)  # --serve, --batch, --context, --batch-sweep
    add_parallel_arguments(g)  # --devices, --parallel
    _add_definition_arguments(p)
    _add_output_arguments(p)
    from solar.llm.cli import add_analyze_arguments  # --llm, --llm-fallback (docs/llm.md)

    add_analyze_arguments(p)
    return p


def _capture_parser() -> argparse.ArgumentParser:
    """``solar capture``'s arguments."""
    from solar.options import ArgumentParser

    p = ArgumentParser(
        prog="solar capture",
        description="Capture a PyTorch or JAX model file into SOLAR's capture format "
        "(docs/capture.md, docs/jax.md).",
    )
    p.add_argument("model", help=MODEL_HELP)
    p.add_argument(
        "-o",
        "--output",
        required=True,
        help="OUT.json: the capture document; OUT.ir: the lowered IR program",
    )
    p.add_argument("--golden", metavar="OUT.npz", help="also run the model; write its data")
    return p


def _add_device_and_fidelity_arguments(p: argparse.ArgumentParser) -> None:
    """``solar analyze``'s device, precision, fidelity and cache arguments."""
    from solar.options import DEFAULT_HW

    g = p.add_argument_group("device and precision (docs/precision.md)")
    g.add_argument(
        "--hw",
        default=DEFAULT_HW,
        help=f"the device: a built-in name (solar hw list) or a device file FILE.yaml; default "
        f"{DEFAULT_HW}",
    )
    g.add_argument(
        "--policy",
        help="precision policy (default: pytorch-cuda-default for PyTorch, jax-default for JAX)",
    )
    g = p.add_argument_group("fidelity and cache (docs/fidelities.md, docs/cache-state.md)")
    g.add_argument(
        "--fidelity",
        help="unfused, fused, cache (the cache-aware model) or all (the default: the three)",
    )
    add_cache_arguments(g)  # --cache-state, --kernel-floor, --routing


def _add_verification_arguments(p: argparse.ArgumentParser) -> None:
    """``solar analyze``'s verification arguments."""
    g = p.add_argument_group("verification against the framework")
    g.add_argument(
        "--no-verify",
        dest="verify",
        action="store_false",
        help="do not check the lowered program against the framework (the report says so); "
        "default: verify",
    )
    g.add_argument(
        "--verify-budget-mb",
        type=_budget,
        default=2048.0,
        metavar="MB",
        help="verify the whole program when its tensors fit in MB (1e6 bytes; default 2048), "
        "else each op alone at reduced size",
    )
    g.add_argument(
        "--verify-budget-s",
        type=_budget,
        default=60.0,
        metavar="S",
        help="... and when SOLAR's executor would take at most about S seconds (default 60)",
    )
    g.add_argument(
        "--verify-mode",
        choices=("auto", "whole_program", "per_op"),
        default="auto",
        help="force a verification mode (default: auto, by the budgets)",
    )


def _add_definition_arguments(p: argparse.ArgumentParser) -> None:
    """``solar analyze``'s arguments for a kernel-benchmark definition."""
    g = p.add_argument_group("when MODEL is a kernel-benchmark definition (docs/benchmarks.md)")
    g.add_argument(
        "--workload",
        action="append",
        metavar="UUID|INDEX",
        help="analyse this workload only (repeatable; INDEX 0-based in the workload file; "
        "default: every workload)",
    )
    g.add_argument(
        "--measured",
        metavar="FILE.csv",
        help="measured latencies (workload_uuid,latency_ms[,baseline_ms]): the SOL score and "
        "headroom of each workload",
    )
    g.add_argument(
        "--suite-only",
        action="store_true",
        help="print the suite table only, not each workload's table",
    )


def _add_output_arguments(p: argparse.ArgumentParser) -> None:
    """``solar analyze``'s output arguments."""
    g = p.add_argument_group("output (default: the report's table on stdout)")
    g.add_argument("--json", metavar="OUT", help="write the JSON report ('-': to stdout instead)")
    g.add_argument(
        "--details",
        action="store_true",
        help="list every output and op configuration the verification compared, and every "
        "node or tensor of a note (precision fallbacks, data-dependent reads), as the JSON "
        "does; without it, one line per kind of note with its count",
    )
    g.add_argument("--ir", metavar="OUT", help="also write the lowered IR program")
    add_report_file_arguments(g)  # --html, --trace, --csv, --dot
    g.add_argument(
        "--stage-times",
        metavar="OUT.json",
        help="write the seconds of capture, lowering, verification and analysis (solar bench "
        "reads it; docs/cli.md)",
    )


def add_serve_arguments(p: argparse._ActionsContainer) -> None:
    """``solar analyze``'s serving options (docs/serving.md), on ``p``: a parser or one of its
    argument groups."""
    p.add_argument(
        "--serve",
        choices=("prefill", "decode"),
        help="analyse one serving step of a decoder instead of the file's forward: prefill "
        "(batch x context prompt tokens) or decode (batch new tokens attending to context "
        "tokens)",
    )
    p.add_argument(
        "--batch", type=int, default=1, metavar="B", help="--serve: sequences per step (default 1)"
    )
    p.add_argument(
        "--context",
        type=int,
        default=1024,
        metavar="T",
        help="--serve: tokens in the cache (decode: attended by the new token, itself "
        "included) or in the prompt (prefill); default 1024",
    )
    p.add_argument(
        "--batch-sweep",
        metavar="LIST",
        help="--serve: analyse the step at each batch size (1,2,4,8 or a range 1..512: the "
        "powers of two) and print batch | SOL/token | tokens/s | bound and the crossover",
    )


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
        print(f"solar {command}: error: {_one_line(e)}", file=sys.stderr)
        return 1


def _capture(args: argparse.Namespace) -> int:
    """``solar capture MODEL.py -o OUT.json|OUT.ir [--golden OUT.npz]``: ``solar.stages.run``
    up to the capture (a document) or the lowering (an IR program); the golden data from the
    captured program's own run."""
    from solar import adapters
    from solar._files import check_output_paths, write_atomic
    from solar.document import write_npz
    from solar.options import Options

    check_output_paths(args.output, args.golden)
    lowering = args.output.endswith(".ir")
    stage = adapters.run_file(args.model, Options(), until="lowered" if lowering else "captured")
    captured = stage.captured if lowering else stage
    write_atomic(args.output, stage.ir if lowering else captured.to_json())
    if args.golden:
        write_npz(args.golden, captured.golden([]))
    return 0


def _analyze(args: argparse.Namespace) -> int:
    from solar.suites import definition

    # a kernel-benchmark definition, or a folder of them (docs/benchmarks.md)
    if definition.is_definition(args.model) or definition.is_suite(args.model):
        from solar.suites.definition_cli import analyze_definition

        return analyze_definition(args, options_of)
    given_flags = (
        ("--workload", args.workload),
        ("--measured", args.measured),
        ("--suite-only", args.suite_only),
    )
    for flag, given in given_flags:
        if given:
            raise ValueError(f"{flag} needs a definition (definition.json; docs/benchmarks.md)")
    from solar._files import check_output_paths

    check_output_paths(
        args.ir,
        args.json,
        args.html,
        args.trace,
        args.csv,
        args.dot,
        args.stage_times,
        args.measure_out,
    )
    from solar._modelfile import build_budget, parse_sizes, size_overrides

    with size_overrides(parse_sizes(args.size)), build_budget(args.build_budget_s):
        options = options_of(args)
        return _analyze_with_options(args, options)


def options_of(args: argparse.Namespace) -> Options:
    """The one ``Options`` of ``solar analyze``'s command line (every rule between options
    checked by ``Options``; the flags of the LLM agent and of measuring, which the options
    carry as their results, here)."""
    from solar.options import (
        AnalysisOptions,
        LoweringOptions,
        Options,
        ProgramOptions,
        VerificationOptions,
        refused_with_serve,
    )

    llm = "program" if args.llm else ("fallback" if args.llm_fallback else None)
    kind = "train" if args.train else "forward"
    # The program's rules and the device first: before --measure runs the model.
    Options(
        program=ProgramOptions(kind, args.optimizer, llm=llm),
        analysis=AnalysisOptions(args.hw, args.policy),
    )
    if llm and args.stage_times:
        raise ValueError("--stage-times times the capture pipeline; it cannot be given with --llm")
    if args.batch_sweep and not args.serve:
        raise ValueError("--batch-sweep needs --serve prefill|decode")
    if args.serve:
        refused_with_serve(
            ("--llm", llm is not None),
            ("--measure", args.measure),
            ("--measured-ms", args.measured_ms is not None),
            ("--measurement", args.measurement is not None),
            ("--train", args.train),
        )
    if args.llm and args.llm_fallback:
        raise ValueError("--llm and --llm-fallback exclude each other")
    if args.serve:
        from solar.serving import parse_batches

        batches = tuple(parse_batches(args.batch_sweep) if args.batch_sweep else [args.batch])
        program = ProgramOptions("serve", phase=args.serve, batches=batches, context=args.context)
    elif llm:
        from solar.llm.cli import config_from_args

        program = ProgramOptions(kind, llm=llm, llm_config=config_from_args(args))
    else:
        program = ProgramOptions(kind, args.optimizer)
    return Options(
        program=program,
        lowering=LoweringOptions(
            args.allow_unsupported, tuple(args.llm_disable_rule) if llm == "fallback" else ()
        ),
        verification=VerificationOptions(
            args.verify, args.verify_mode, args.verify_budget_mb, args.verify_budget_s
        ),
        analysis=analysis_options(args),
    )


def _analyze_with_options(args: argparse.Namespace, options: Options) -> int:
    """``solar analyze`` once the sizes are set (``--size``) and the options made."""
    from solar import adapters
    from solar._files import write_atomic

    if options.program.kind == "serve":
        return _serve(args, options)
    times: dict[str, float] = {}
    try:
        report = adapters.run_file(args.model, options, stage_times=times)
    finally:  # also after a failure: the stages reached so far
        if args.stage_times:
            write_stage_times(args.stage_times, times)
    if args.ir:
        write_atomic(args.ir, report.ir)
    outputs = [(k, getattr(args, k)) for k in REPORT_OUTPUTS if getattr(args, k, None)]
    report.write_outputs(outputs)  # all or none, before anything is printed
    if args.json == "-":
        sys.stdout.write(report.to_json())
    else:
        if args.json:  # before the summary: a failure prints no report
            write_atomic(args.json, report.to_json())
        sys.stdout.write(report.summary(args.details))
        if outputs:
            sys.stdout.write("\n" + "".join(f"wrote {path}\n" for _, path in outputs))
        if args.json:
            sys.stdout.write(f"\nwrote {args.json}\n")
    return 1 if report.verification["status"] == "failed" else 0


def _serve(args: argparse.Namespace, options: Options) -> int:
    """``solar analyze MODEL.py --serve PHASE ...`` (docs/serving.md): one step, or a sweep of
    batch sizes; the serving table (after the step's own report when there is one step)."""
    from solar import adapters
    from solar._files import write_atomic

    times: dict[str, float] = {}
    try:
        served = adapters.run_file(args.model, options, stage_times=times)
    finally:
        if args.stage_times:
            write_stage_times(args.stage_times, times)
    first = served.steps[0]
    if args.ir:
        write_atomic(args.ir, first.ir)
    outputs = [(k, getattr(args, k)) for k in REPORT_OUTPUTS if getattr(args, k, None)]
    first.write_outputs(outputs)  # the first step's files
    if args.json == "-":
        sys.stdout.write(served.to_json())
        return 0
    if args.json:
        write_atomic(args.json, served.to_json())
    if len(options.program.batches) == 1:
        sys.stdout.write(first.summary(args.details) + "\n")
        # the table without the policy, cache state and verification the step's report shows
        sys.stdout.write(served.core.render(after_step_report=True))
    else:
        sys.stdout.write(served.table)
    if outputs:
        sys.stdout.write("\n" + "".join(f"wrote {path}\n" for _, path in outputs))
    if args.json:
        sys.stdout.write(f"\nwrote {args.json}\n")
    return 0


def write_stage_times(path: str, times: dict[str, float]) -> None:
    """``{stage: seconds}`` for every stage of ``stages.STAGES`` (0 for a stage not reached),
    as JSON with sorted keys."""
    import json

    from solar._files import write_atomic
    from solar.stages import STAGES

    data = {stage: times.get(stage, 0.0) for stage in STAGES}
    write_atomic(path, json.dumps(data, sort_keys=True, indent=1) + "\n")


def add_measured_arguments(p: argparse._ActionsContainer) -> None:
    """``solar analyze``'s headroom options (docs/calibrate.md), on ``p``: a parser or one of its
    argument groups."""
    p.add_argument(
        "--measure",
        action="store_true",
        help="time the model here (CUDA events on a GPU, else wall clock) and report headroom",
    )
    p.add_argument(
        "--measure-device",
        choices=("cpu", "cuda"),
        help="where --measure runs (default: cuda when the framework sees a GPU, else cpu)",
    )
    p.add_argument(
        "--measure-out",
        metavar="OUT.json",
        help="with --measure: also write the times taken (a measurement file)",
    )
    p.add_argument(
        "--measurement",
        metavar="FILE.json",
        help="report headroom from a measurement file written by --measure-out, without "
        "timing the model again",
    )
    p.add_argument(
        "--measured-ms",
        type=float,
        metavar="X",
        help="a time of the whole model measured elsewhere, in ms: report headroom against it",
    )
    p.add_argument(
        "--measured-on",
        metavar="NAME",
        help="the device --measured-ms was taken on (default: the --hw device)",
    )


def add_report_file_arguments(p: argparse._ActionsContainer) -> None:
    """``solar analyze``'s report files (``REPORT_OUTPUTS``), on ``p``: a parser or one of its
    argument groups."""
    p.add_argument("--html", metavar="OUT", help="write the self-contained HTML report")
    p.add_argument("--trace", metavar="OUT", help="write a Chrome/Perfetto trace of the SOL")
    p.add_argument("--csv", metavar="OUT", help="write the per-node table as CSV")
    p.add_argument("--dot", metavar="OUT", help="write the einsum graph in Graphviz DOT")


def add_parallel_arguments(p: argparse._ActionsContainer) -> None:
    """``solar analyze``'s parallel layout (docs/parallel.md), on ``p``: a parser or one of its
    argument groups."""
    p.add_argument(
        "--devices",
        type=int,
        metavar="N",
        help="devices the program runs on, with --parallel; default: T x D x P of the layout, "
        "which N must equal when given",
    )
    p.add_argument(
        "--parallel",
        metavar="LAYOUT",
        help="the layout over the devices: tp=T,dp=D,pp=P[,mb=M][,sp] (tensor, data, pipeline "
        "parallel; microbatches; sequence parallel): the report gains the SOL per device "
        "with its collectives; default: one device",
    )


def add_cache_arguments(p: argparse._ActionsContainer) -> None:
    """``solar analyze``'s cache state, kernel floor and routing (docs/cache-state.md,
    docs/einsum.md), on ``p``: a parser or one of its argument groups."""
    p.add_argument(
        "--cache-state",
        choices=("cold", "warm"),
        help="cold (the default): every byte from DRAM; warm: the inputs, weights and outputs "
        "that fit in L2 come from L2, as a loop over the same inputs leaves them",
    )
    p.add_argument(
        "--kernel-floor",
        choices=("on", "off"),
        help="on (the default): each unfused operation, and the fused and cache-aware program, "
        "takes at least the device's min_kernel_s (one kernel's shortest time); off: no floor",
    )
    p.add_argument(
        "--routing",
        choices=("balanced", "concentrated"),
        help="a top-k router's expert-weight reads: the fewest any routing reads (concentrated, "
        "the default: k experts a layer) or every index distinct (balanced: min(E, B*k) experts "
        "at batch B); other gathers read the rows they name under both (docs/einsum.md)",
    )


# The report files of ``add_report_file_arguments``, by the kind ``_core.Report.write`` takes.
REPORT_OUTPUTS = ("html", "trace", "csv", "dot")


def analysis_options(args: argparse.Namespace) -> AnalysisOptions:
    """The analysis group of the options (``solar.options.AnalysisOptions``): the device, the
    policy, the fidelity and the options of ``add_measured_arguments``,
    ``add_parallel_arguments`` and ``add_cache_arguments``; with ``--measure`` or
    ``--measurement``, the median, the device, the method and the per-node times of the model's
    run (``solar.adapters.measured_keywords``)."""
    from solar.options import AnalysisOptions

    options: dict = {}
    for name in ("fidelity", "routing", "cache_state", "kernel_floor", "parallel", "devices"):
        if getattr(args, name, None) is not None:
            options[name] = getattr(args, name)
    measure = getattr(args, "measure", False)
    recorded = getattr(args, "measurement", None)
    given = [
        name
        for name, on in (
            ("--measure", measure),
            ("--measurement", recorded),
            ("--measured-ms", getattr(args, "measured_ms", None) is not None),
        )
        if on
    ]
    if getattr(args, "devices", None) is not None and args.devices < 1:
        raise ValueError(f"--devices must be at least 1, not {args.devices}")
    if len(given) > 1:
        raise ValueError(
            f"give one of --measure, --measurement and --measured-ms, not {' and '.join(given)}"
        )
    if getattr(args, "measure_out", None) and not measure:
        raise ValueError("--measure-out writes the times --measure takes: give --measure too")
    if measure or recorded:
        from solar.adapters import measured_keywords

        if recorded:
            options.update(measured_keywords(args.model, args.hw, recorded=recorded))
        else:
            how = {"device": args.measure_device, "out": args.measure_out}
            options.update(measured_keywords(args.model, args.hw, **how))
    elif getattr(args, "measured_ms", None) is not None:
        options["measured_ms"] = args.measured_ms
        if args.measured_on:
            options["measured_on"] = args.measured_on
    return AnalysisOptions(args.hw, args.policy, **options)


if __name__ == "__main__":
    sys.exit(main())
