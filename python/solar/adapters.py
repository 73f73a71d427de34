"""The adapters' one entry: picks the adapter (``solar.torch`` for PyTorch, ``solar.jax`` for
JAX) and forwards every option to it unchanged. Framework-free: the adapter's framework is
imported only when it is picked, so a JAX program never imports torch and a PyTorch one never
imports jax.

- ``analyze(fn, example_inputs, hw, **options)``: a torch module, or a function of tensors, goes
  to PyTorch; a function given JAX arrays, or a Flax nnx module, to JAX.
- ``analyze_file(path, hw, **options)``: a model file that imports jax or flax goes to JAX, any
  other to PyTorch.
- ``capture_file(path)``: the capture of a model file, and its golden run.
- ``measure_file(path, device)``: the model file's run, timed by its own framework.
- ``measured_keywords(path, hw, ...)``: the analysis's keywords of the model file's measured
  run (``--measure``, or a measurement file).
- ``run_command(verified, command, argv, model_at)``: ``solar sol|compare|provision|curve
  MODEL.py``'s C++ command on the verified model file's program.
- ``run_file(path, options)``: a model file under one ``solar.options.Options`` (``solar
  analyze`` and ``solar sol MODEL.py``): its forward, training step or serving steps, or the
  LLM agent's translation, through ``solar.stages.run``.
- ``preload(frameworks)``: imports what an analysis of the frameworks' model files imports, once,
  for a parent whose forked children analyse them (``solar bench``'s fork isolation).

``OPTIONS``: the keywords every adapter takes (``solar.options.Options.of``'s, with ``source``
and ``stage_times``, less the serving step's); another keyword is a ``TypeError`` that lists
them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from typing import Any

from solar._modelfile import framework_of
from solar.options import (
    DEFAULT_HW,
    KEYWORDS,
    SERVING_KEYWORDS,
    SOL_KEYWORDS,
    AnalysisError,
    Options,
)
from solar.stages import Report, run

# Options.of's keywords, with the entry points' ``source`` and ``stage_times``, less the serving
# step's alone: a serving step is no program of the caller's but one SOLAR builds from a model
# file's decoder, and its report is a ``solar.serving.ServingReport``, not a ``Report``
# (``solar.torch.serve.analyze_serving`` takes them).
OPTIONS = ("source", "stage_times", *(k for k in KEYWORDS if k not in SERVING_KEYWORDS))

__all__ = [
    "OPTIONS",
    "analyze",
    "analyze_file",
    "capture_file",
    "framework_of_call",
    "measure_file",
    "measured_keywords",
    "preload",
    "run_command",
    "run_file",
]

# The modules an analysis of a model file of each framework imports (the adapter, the framework,
# its tracer): ``preload`` imports them in a parent that forks the analyses. Importing them runs
# no tensor operation and starts no thread pool (torch starts its OpenMP pool at its first
# parallel operation, jax its runtime at its first array).
PRELOAD = {
    "torch": (
        "torch",
        "torch.export",
        "torch._dynamo",
        "torch._functorch.aot_autograd",
        "torch._subclasses.fake_tensor",
        "torch.fx.experimental.proxy_tensor",
        "torch.fx.experimental.symbolic_shapes",
        "solar.torch.capture",
        "solar.torch",
    ),
    "jax": ("jax", "jax.numpy", "solar.jax"),
}
# Imported too when installed, whatever the framework: ``solar.ir.run`` views bf16/f8 outputs
# as ml_dtypes arrays, and importing ml_dtypes took 5.1 s of each forked child's verification on
# the loaded 2-core development machine (issue 29; `python -X importtime`).
PRELOAD_OPTIONAL = ("ml_dtypes",)


def analyze(fn: Any, example_inputs: Any, hw: str = DEFAULT_HW, **options: Any) -> Report:
    """The SOL report of ``fn(*example_inputs)`` by the adapter of its framework."""
    _check_options(options)
    if framework_of_call(fn, example_inputs) == "jax":
        _jax_training(options)
        from solar import jax as solar_jax

        return solar_jax.analyze(fn, example_inputs, hw=hw, **options)
    from solar import torch as solar_torch

    return solar_torch.analyze(fn, example_inputs, hw=hw, **options)


def analyze_file(path: str | os.PathLike, hw: str = DEFAULT_HW, **options: Any) -> Report:
    """The SOL report of a model file by the adapter of its framework (``source`` is the file's
    name and cannot be given)."""
    _check_options(options)
    if "source" in options:
        raise TypeError("analyze_file names the report after the model file: no 'source'")
    if os.path.isfile(path) and framework_of(path) == "jax":
        _jax_training(options)
        if "loss" in options:
            raise TypeError("analyze_file takes the loss from the file's get_loss: no 'loss'")
        from solar import jax as solar_jax

        return solar_jax.analyze_file(path, hw=hw, **options)
    from solar import torch as solar_torch

    return solar_torch.analyze_file(path, hw=hw, **options)


def capture_file(
    path: str | os.PathLike, golden: bool = False, prog: str = "solar"
) -> tuple[Any, Callable[[], dict]]:
    """``(capture, golden)`` of a model file by its framework's adapter: the capture (its
    ``to_json()`` is the capture document) and a function that runs the model once and returns
    its golden data by capture name. ``golden=False``: the data will not be asked for (PyTorch
    then builds the model with FakeTensors when it can: no memory)."""
    if os.path.isfile(path) and framework_of(path) == "jax":
        from solar import jax as solar_jax

        return solar_jax.capture_file(path)
    from solar import torch as solar_torch

    return solar_torch.capture_file(path, golden=golden, prog=prog)


def measure_file(path: str | os.PathLike, device: str | None = None) -> tuple[Any, str | None]:
    """``(timing, per_node)``: the model file's run timed by its framework
    (``solar.timing.clock.Timing``), and the per-node times document's JSON text
    (``solar.torch.node_timing``; None where the framework has none: JAX runs one jitted executable,
    so only the whole run is timed)."""
    if os.path.isfile(path) and framework_of(path) == "jax":
        from solar import jax as solar_jax

        return solar_jax.measure_file(path, device=device), None
    from solar import torch as solar_torch

    return solar_torch.measure_file(path, device=device)


def framework_of_call(fn: Any, example_inputs: Any) -> str:
    """ "jax" when ``fn`` is a Flax nnx module or some input is a ``jax.Array`` (jax is then
    already imported: such a value cannot exist without it), else "torch"."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(fn, torch.nn.Module):
        return "torch"
    jax = sys.modules.get("jax")
    if jax is None:
        return "torch"
    nnx = sys.modules.get("flax.nnx")
    if nnx is not None and isinstance(fn, nnx.Module):
        return "jax"

    def leaves(x: Any) -> Any:
        if isinstance(x, (list, tuple)):
            for v in x:
                yield from leaves(v)
        elif isinstance(x, dict):
            for v in x.values():
                yield from leaves(v)
        else:
            yield x

    return "jax" if any(isinstance(x, jax.Array) for x in leaves(example_inputs)) else "torch"


def _jax_training(options: dict) -> None:
    """The training options of a JAX program, checked (``Options``) before jax is imported,
    passed on only for a training step."""
    train, optimizer, loss = (options.pop(k, None) for k in ("train", "optimizer", "loss"))
    Options.of(train=train, optimizer=optimizer, loss=loss)  # their one-line errors
    if train:
        options["train"] = True
        if optimizer is not None:
            options["optimizer"] = optimizer
        if loss is not None:
            options["loss"] = loss


def _check_options(options: dict) -> None:
    """Rejects an unknown option; moves the analysis's own keywords (``SOL_KEYWORDS``:
    ``cache_state``, ``kernel_floor``, ``routing``, ``parallel``, ``devices``) into
    ``sol_options`` (in place)."""
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise TypeError(f"unknown option(s) {', '.join(unknown)} (valid: {', '.join(OPTIONS)})")
    keywords = {k: options.pop(k) for k in SOL_KEYWORDS if k in options}
    if keywords:
        options["sol_options"] = {**(options.get("sol_options") or {}), **keywords}


def preload(frameworks: Iterable[str]) -> list[str]:
    """Imports ``PRELOAD``'s modules of each framework ("torch", "jax") and those of
    ``PRELOAD_OPTIONAL`` that are installed; returns the frameworks
    whose modules all imported (one that is not installed is left to the children, whose error
    names it)."""
    import importlib

    loaded = []
    for framework in sorted(set(frameworks)):
        try:
            for name in PRELOAD[framework]:
                importlib.import_module(name)
        except ImportError:
            continue
        loaded.append(framework)
    for name in PRELOAD_OPTIONAL:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    return loaded


def run_file(
    path: str | os.PathLike,
    options: Options,
    stage_times: dict[str, float] | None = None,
    until: str = "analysed",
) -> Any:
    """A model file under ``options``: the LLM agent's translation (``options.program.llm``),
    the serving steps of a PyTorch decoder (``solar.torch.serve``), else the file's forward or
    training step captured by its framework's adapter; ``until``: ``solar.stages.run``'s."""
    program = options.program
    path = os.fspath(path)
    jax_file = os.path.isfile(path) and framework_of(path) == "jax"
    if program.llm is not None:
        from solar.llm.analysis import progress, run_llm

        return run_llm(path, options, log=progress)
    if program.kind == "serve":
        if jax_file:  # before anything imports torch
            raise AnalysisError(
                f"{os.path.basename(path)} is a JAX model file: --serve builds the steps of a "
                "PyTorch decoder (docs/serving.md)"
            )
        from solar.torch import serve

        return serve.serve_file(path, options, stage_times)
    if jax_file:
        from solar import jax as solar_jax

        return run(lambda: solar_jax.captured_file(path, options), options, stage_times, until)
    from solar import torch as solar_torch

    return run(lambda: solar_torch.captured_file(path, options), options, stage_times, until)


def measured_keywords(
    path: str | os.PathLike,
    hw: str,
    device: str | None = None,
    out: str | None = None,
    recorded: str | None = None,
) -> dict[str, Any]:
    """The analysis's keywords of a measured run of the model file (``solar analyze
    --measure``): ``measured_ms`` (the median), ``measured_on`` (``hw`` when the run was on
    that device, else the device it ran on), ``measured_method`` and ``measured_nodes`` (the
    per-node times, when the framework has them). The run is timed here (``measure_file`` on
    ``device``; written to the measurement file ``out`` when given), or read from the
    measurement file ``recorded`` (``--measurement``)."""
    from solar.timing import measurement
    from solar.timing.clock import same_device

    if recorded is None:
        timing, per_node = measure_file(path, device=device)
        if out:
            measurement.write(out, timing, per_node, path)
    else:
        timing, per_node = measurement.load(recorded, path)
    on = hw if same_device(hw, timing.device) else timing.device
    keywords = {
        "measured_ms": timing.median_s * 1e3,
        "measured_on": on,
        "measured_method": timing.describe(),
    }
    if per_node is not None:
        keywords["measured_nodes"] = per_node
    return keywords


def run_command(verified: Any, command: str, argv: list[str], model_at: int) -> int:
    """``solar CMD MODEL.py ARGS...`` once the model file is verified (``run_file`` up to
    ``Verified``): the C++ command ``command`` on the lowered program in memory
    (``_core.run_on_program``: the lowering result, whose program was parsed once, and a
    ``_core.Provenance``) with ``argv`` (``argv[model_at]`` is the model file) unchanged, the
    framework's default policy added when they give none; the report shows the model file's
    capture, coverage and verification. Returns the command's exit code."""
    from solar import _core, stages
    from solar.document import capture_section

    lowered = verified.lowered
    sections = {
        "capture": capture_section(lowered.captured.document),
        "coverage": lowered.coverage(),
        "verification": verified.verification,
    }
    rest = argv[:model_at] + argv[model_at + 1 :]
    policy = lowered.captured.default_policy
    if policy and _option_value(rest, "--policy") is None:
        argv = [*argv, "--policy", policy]
    return _core.run_on_program(command, argv, lowered.result, stages.provenance(sections))


def _option_value(args: list[str], name: str) -> str | None:
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None
