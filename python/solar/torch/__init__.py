"""The PyTorch adapter (docs/capture.md, "Where the PyTorch adapter lives"): a torch module or
function -> ``TorchCaptured`` (the capture of ``solar.torch.capture`` with the model that makes
its golden data) -> ``solar.stages.run`` (lower, verify, analyse). This module imports torch only
when a function here is called; ``solar.adapters`` sends PyTorch programs here and JAX ones to
``solar.jax``. The package: ``capture`` (``capture``, ``Capture``, the model-file loader),
``_trace``, ``_serialize``, ``_golden``, ``_per_op``, ``_train``, ``_where``, and ``serve``
(the serving steps of a decoder). Its ``import torch`` is PyTorch (absolute imports).

- ``analyze(model, example_inputs, hw="H100-SXM", **options)``: a ``solar.stages.Report`` for
  ``model(*example_inputs)`` (``options``: ``solar.options.Options.of``'s keywords).
- ``analyze_file(path, hw=..., **options)``: the same for a benchmark-style model file.
- ``captured_file(path, options)``: a model file's forward or training step, captured (``solar
  analyze`` runs it through ``solar.adapters.run_file``).
- ``analyze_capture(cap, golden, hw, policy, **options)``: a capture made by hand, with its
  golden data (a dict, a function of the wanted intermediates, or None).
- ``measure_file(path, device)``: a model file's forward timed, and its per-node times.
- ``program_data(path)``: a model file's inputs, weights and outputs, run once (the LLM agent).

With real inputs, PyTorch runs once for the golden data (when the whole program is verified)
and a failed check is rechecked in float64 (the model rebuilt with float64 weights and inputs).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from solar._modelfile import framework_of
from solar.options import DEFAULT_HW, AnalysisError, Options
from solar.stages import Report, run
from solar.verify.float64 import NO_FLOAT64_MODEL, Float64UnavailableError

if TYPE_CHECKING:
    from solar.torch.capture import TorchCaptured

__all__ = [
    "TorchCaptured",
    "analyze",
    "analyze_capture",
    "analyze_file",
    "capture_file",
    "measure_file",
    "program_data",
]


def __getattr__(name: str) -> Any:
    """``TorchCaptured`` lives with the capture (``solar.torch.capture``, which imports torch):
    named here without importing torch until it is asked for."""
    if name == "TorchCaptured":
        from solar.torch.capture import TorchCaptured

        return TorchCaptured
    raise AttributeError(f"module 'solar.torch' has no attribute '{name}'")


def captured_call(
    model: Any,
    example_inputs: Any,
    options: Options,
    source: str | None = None,
    specialise: bool = False,
) -> TorchCaptured:
    """``model(*example_inputs)``'s forward or training step (``options.program``), captured;
    ``specialise``: values of the data decide the forward, traced on them at once
    (``solar.torch.capture.capture``)."""
    from solar.torch.capture import TorchCaptured, capture, capture_train

    inputs = (
        tuple(example_inputs) if isinstance(example_inputs, (list, tuple)) else (example_inputs,)
    )
    program = options.program

    def capture_with(m: Any, xs: tuple, name: str | None) -> Any:
        if program.kind == "train":  # a training step (docs/training.md)
            return capture_train(m, xs, name, program.loss, program.optimizer)
        return capture(m, xs, source=name, specialise=specialise)

    cap = capture_with(model, inputs, source)
    named = cap.document.get("source")
    return TorchCaptured(cap, lambda m, xs: capture_with(m, xs, named), model, inputs)


def captured_file(path: str, options: Options, prog: str = "solar") -> TorchCaptured:
    """A model file's forward or training step (``options.program``), captured with FakeTensors
    when the model can be built so (no memory), else built for real (a note on stderr)."""
    from solar.torch.capture import (
        TorchCaptured,
        capture,
        capture_model_file,
        capture_train,
        load_model_file,
        model_module,
    )

    path = os.fspath(path)
    source = os.path.basename(path)
    program = options.program
    if os.path.isfile(path) and framework_of(path) == "jax":
        raise AnalysisError(f"{source} is a JAX model file: solar.analyze_file analyses it")
    if program.kind == "train":
        loss = _file_loss(path, model_module(path))

        def recapture(m: Any, xs: tuple) -> Any:
            return capture_train(m, xs, source, loss, program.optimizer)

    else:

        def recapture(m: Any, xs: tuple) -> Any:
            return capture(m, xs, source=source)

    cap, model, inputs = capture_model_file(path, prog, recapture)
    captured = TorchCaptured(cap, recapture, model, inputs, build=lambda: load_model_file(path))
    return prefer_real(captured, options, prog)


def whole_verified(captured: TorchCaptured, options: Options) -> bool:
    """Whether ``captured``'s whole program will be verified on its golden run: verification
    on, not per op, and the graph's tensors within ``--verify-budget-mb``."""
    from solar.document import graph_bytes

    v = options.verification
    fits = graph_bytes(captured.document) <= v.budget_mb * 1e6
    return v.enabled and v.mode != "per_op" and fits


def prefer_real(captured: TorchCaptured, options: Options, prog: str) -> TorchCaptured:
    """A capture of FakeTensors that may hold fake values (``holds_fake_values``) is replaced by
    the real model's capture when the whole program will be verified on it anyway (its tensors
    fit the verification budget): the analysis then reads the program the golden run runs. When
    the two captures differ, stderr names the nodes that do."""
    import sys

    from solar.torch.capture import TorchCaptured, differing_nodes, is_fake

    if not whole_verified(captured, options) or not is_fake(captured.inputs):
        return captured
    if not captured.capture.holds_fake_values():
        return captured
    model, inputs = captured.build()
    real = captured.recapture(model, inputs)
    if real.to_json() != captured.to_json():
        source = captured.document.get("source")
        print(
            f"{prog}: note: {source} captures differently when built for real "
            f"({differing_nodes(captured.document, real.document)}); the real capture is analysed",
            file=sys.stderr,
        )
    return TorchCaptured(real, captured.recapture, model, inputs, build=captured.build)


def _file_loss(path: str, module: Any) -> Callable[..., Any] | None:
    loss = getattr(module, "get_loss", None)
    if loss is not None and not callable(loss):
        raise AnalysisError(f"{path}: get_loss is not a function (get_loss(output, *inputs))")
    return loss


def analyze(
    model: Any,
    example_inputs: Any,
    hw: str = DEFAULT_HW,
    source: str | None = None,
    stage_times: dict[str, float] | None = None,
    **options: Any,
) -> Report:
    """Captures ``model(*example_inputs)``, lowers it, verifies it against PyTorch and returns
    its SOL report on device ``hw``. ``model`` is an nn.Module or a function of tensors. With
    real inputs PyTorch runs once for the golden data (when the whole program is verified);
    with FakeTensor inputs (and a model built under the same FakeTensorMode) nothing is
    allocated, and verification is per op at reduced size."""
    opts = Options.of(hw, **options)
    return run(lambda: captured_call(model, example_inputs, opts, source), opts, stage_times)


def analyze_file(
    path: str | os.PathLike,
    hw: str = DEFAULT_HW,
    stage_times: dict[str, float] | None = None,
    **options: Any,
) -> Report:
    """``analyze`` on a benchmark-style model file (``Model``, ``get_inputs``,
    ``get_init_inputs``), built after ``torch.manual_seed(0)``; a training step's loss is the
    file's ``get_loss(output, *inputs)`` when it defines one. The model is first built with
    FakeTensors and captured (no memory); it is built for real only when the whole program is
    verified."""
    if "loss" in options:
        raise TypeError("analyze_file takes the loss from the model file's get_loss: no 'loss'")
    opts = Options.of(hw, **options)
    return run(lambda: captured_file(os.fspath(path), opts), opts, stage_times)


def analyze_capture(
    cap: Any, golden: Any, hw: str = DEFAULT_HW, policy: str | None = None, **options: Any
) -> Report:
    """The report of a capture made by hand (``solar.torch.capture.capture``), with its golden data:
    a dict, a function ``golden(wanted_intermediates) -> dict``, or None (no real data: per-op
    verification). Without its model, a failed check is not rechecked in float64 (the report
    says so)."""
    from solar.torch.capture import TorchCaptured

    opts = Options.of(hw, policy=policy, **options)
    return run(lambda: TorchCaptured(cap, _no_recapture, given=golden), opts)


def _no_recapture(model: Any, inputs: tuple) -> Any:
    raise Float64UnavailableError(NO_FLOAT64_MODEL)


def capture_file(
    path: str | os.PathLike, golden: bool = False, prog: str = "solar"
) -> tuple[Any, Callable[[], dict]]:
    """``(capture, golden)`` of a model file: with ``golden``, the model is built for real and
    ``golden()`` runs it once; without, it is built with FakeTensors when it can be (no memory;
    a note on stderr, prefixed with ``prog``, when it must be built for real)."""
    from solar.torch.capture import capture, load_model_file

    if golden:
        model, inputs = load_model_file(path)
        cap = capture(model, inputs, source=os.path.basename(path))
        return cap, lambda: cap.golden(model, inputs)
    captured = captured_file(os.fspath(path), Options(), prog)
    return captured.capture, lambda: captured.capture.golden(captured.model, captured.inputs)


def measure_file(path: str | os.PathLike, device: str | None = None) -> tuple[Any, str]:
    """``(timing, per_node)``: the model file's forward timed (``solar.torch.measure``) and its
    per-node times document's JSON text (``solar.torch.node_timing``), each on the model built for
    real afresh (``load_model_file``)."""
    import json

    from solar.torch.capture import load_model_file
    from solar.torch.measure import measure_model
    from solar.torch.node_timing import time_nodes

    def build() -> tuple[Any, tuple]:
        return load_model_file(path)

    timing = measure_model(build, device=device)
    try:
        nodes = time_nodes(build, os.path.basename(os.fspath(path)), device=device)
    except (ValueError, OSError):
        raise
    except Exception as e:  # torch failing to run the graph node by node: one line, not a crash
        text = " ".join(str(e).split("\n")[0].split()) or type(e).__name__
        raise ValueError(f"per-node timing failed: {type(e).__name__}: {text}") from e
    return timing, json.dumps(nodes, allow_nan=False)


def program_data(path: str | os.PathLike) -> tuple[list, list, list]:
    """``(inputs, weights, outputs)`` of a model file run once for real (``load_model_file``;
    the LLM agent's translation task, ``solar.llm.tasks``): inputs and outputs as ``(dtype,
    array)`` (the tensors of ``get_inputs()`` and of the call's result, flattened in order; no
    output when the call returns no tensor), weights as ``(IR name, state_dict key, dtype,
    array)``, named with '.' replaced by '_' (values before the call: BatchNorm)."""
    import torch
    from torch.utils import _pytree as pytree

    from solar._names import sanitize
    from solar.torch._serialize import dtype_name
    from solar.torch.capture import load_model_file, to_numpy

    model, args = load_model_file(path)
    leaves = [t for t in pytree.tree_leaves(args) if isinstance(t, torch.Tensor)]
    inputs = [(dtype_name(t.dtype), to_numpy(t)) for t in leaves]
    weights = []
    taken = {f"in{i}" for i in range(len(inputs))}
    if isinstance(model, torch.nn.Module):
        for key, value in model.state_dict().items():
            name = sanitize(key)
            while name in taken:
                name += "_"
            taken.add(name)
            weights.append((name, key, dtype_name(value.dtype), to_numpy(value)))
    with torch.no_grad():
        result = model(*args)
    outs = [t for t in pytree.tree_leaves(result) if isinstance(t, torch.Tensor)]
    return inputs, weights, [(dtype_name(t.dtype), to_numpy(t)) for t in outs]
