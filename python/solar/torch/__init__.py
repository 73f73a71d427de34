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
from dataclasses import dataclass
from typing import Any

import numpy as np

from solar._modelfile import framework_of
from solar.options import DEFAULT_HW, AnalysisError, Options
from solar.stages import Report, run
from solar.verify.float64 import NO_FLOAT64_MODEL, Float64UnavailableError
from solar.verify.per_op import OpConfig

__all__ = [
    "TorchCaptured",
    "analyze",
    "analyze_capture",
    "analyze_file",
    "capture_file",
    "measure_file",
    "program_data",
]


@dataclass
class TorchCaptured:
    """A PyTorch capture (``solar.torch.capture.Capture`` or ``TrainCapture``) with what makes its
    golden data: the ``model`` and ``inputs`` it traced (real, or FakeTensors), ``build()`` that
    builds them for real (a model file), or ``given`` golden data (a dict or a function of the
    wanted intermediates). ``recapture(model, inputs)``: the same program captured again (the
    float64 rebuild, a capture of the real model)."""

    capture: Any
    recapture: Callable[[Any, tuple], Any]
    model: Any = None
    inputs: tuple = ()
    build: Callable[[], tuple[Any, tuple]] | None = None
    given: Any = None
    agent: list[dict] | None = None  # --llm-fallback: the nodes the LLM agent wrote
    default_policy: str | None = None
    translation: Any = None
    rechecks_in_float64: bool = True
    # A model built without weights: its reduced twin's step, ``() -> (TorchCaptured, what)``,
    # verified in its place (``solar.stages.verify``; ``solar.torch.serve.twin_step``).
    twin: Callable[[], tuple[Any, str]] | None = None
    # A benchmark workload: the same definition at a reduced workload, ``() -> (TorchCaptured,
    # what)``, verified whole where the whole program is over the verification budgets
    # (``solar.stages.verify``; ``solar.torch.definition.reduced_workload``).
    reduced: Callable[[], tuple[Any, str]] | None = None

    @property
    def document(self) -> dict:
        return self.capture.document

    @property
    def golden_notes(self) -> list[str]:
        return self.capture.golden_notes

    def to_json(self) -> str:
        return self.capture.to_json()

    def _real(self) -> bool:
        from solar.torch.capture import is_fake

        return self.model is not None and not is_fake(self.inputs)

    @property
    def has_data(self) -> bool:
        return self.given is not None or self.build is not None or self._real()

    def golden(self, wanted: list[str]) -> dict[str, np.ndarray]:
        if self.given is not None:
            return self.given(wanted) if callable(self.given) else self.given
        if self._real():
            return self.capture.golden(self.model, self.inputs, wanted)
        from solar.torch.capture import check_real_build, real_build_bytes

        source = str(self.document.get("source"))
        need = real_build_bytes(self.model)
        per_op = f"a --verify-budget-mb under {need / 1e6:.0f} to verify it per op"
        if self.model is not None and getattr(self.model, "config", None) is not None:
            per_op += " (--serve verifies a reduced twin of the same architecture)"
        check_real_build(source, need, "whole-program verification", per_op)
        model, inputs = self.build()  # a model file built with FakeTensors: now for real
        real = self.capture
        if self.capture.holds_fake_values():  # lifted constants were captured as FakeTensors
            real = self.recapture(model, inputs)
            if real.to_json() != self.capture.to_json():
                source = self.document.get("source")
                raise AnalysisError(
                    f"{source}: the model captures differently when built for real "
                    f"({differing_nodes(self.document, real.document)}); give a larger "
                    "--verify-budget-mb to capture the real model from the start"
                )
        data = real.golden(model, inputs, wanted)
        self.capture.golden_notes = real.golden_notes
        return data

    def in_float64(self) -> TorchCaptured:
        from solar.torch.capture import to_float64

        if self.build is not None:
            model, inputs = self.build()
        elif self._real():
            model, inputs = self.model, self.inputs
        else:
            raise Float64UnavailableError(NO_FLOAT64_MODEL)
        model64, inputs64 = to_float64(model), to_float64(inputs)
        return TorchCaptured(self.recapture(model64, inputs64), self.recapture, model64, inputs64)

    def per_op_cases(self, skip: set[str], budget_bytes: int) -> list[OpConfig]:
        from solar.torch._per_op import per_op_configs

        return per_op_configs(self.document, skip, budget_bytes)


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
    from solar.torch.capture import capture, capture_train

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


def differing_nodes(fake: dict, real: dict) -> str:
    """Which nodes of two captures of one model differ: the count and the first three, each
    as ``name (op)`` in the first capture against the second; or how the tensors differ."""

    def key(node: dict) -> str:
        return f"{node['name']} ({node['op']})"

    a, b = fake["nodes"], real["nodes"]
    differ = [(x, y) for x, y in zip(a, b, strict=False) if x != y]
    if not differ and len(a) == len(b):
        return "the same nodes; their tensors differ"
    shown = ", ".join(f"{key(x)} / {key(y)}" for x, y in differ[:3])
    more = f" and {len(differ) - 3} more" if len(differ) > 3 else ""
    counts = f"{len(a)} node(s) built with FakeTensors, {len(b)} built for real"
    if not differ:
        return counts
    return f"{counts}; {len(differ)} differ: {shown}{more} (FakeTensors / real)"


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

    from solar.torch.capture import is_fake

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
