"""The PyTorch adapter (docs/capture.md): a torch module or function -> capture
(``solar.capture``) -> ``solar.pipeline.analyze_capture`` (lower, verify, analyse, report).
torch is imported only when a function here is called; ``solar.dispatch`` sends PyTorch
programs here and JAX ones to ``solar.jax``.

- ``analyze(model, example_inputs, hw="H100-SXM", **options)``: a ``solar.pipeline.Report`` for
  ``model(*example_inputs)``.
- ``analyze_file(path, hw=..., **options)``: the same for a benchmark-style model file.

``options``: those of ``solar.pipeline.analyze_capture`` (``solar.dispatch.OPTIONS``). With real
inputs, PyTorch runs once for the golden data (when the whole program is verified) and a failed
check is rechecked in float64 (the model rebuilt with float64 weights and inputs).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from solar._modelfile import framework_of
from solar.pipeline import DEFAULT_HW, AnalysisError, Report, analyze_capture, timed

__all__ = ["analyze", "analyze_file", "capture_file"]


def analyze(
    model: Any,
    example_inputs: Any,
    hw: str = DEFAULT_HW,
    policy: str | None = None,
    source: str | None = None,
    **options: Any,
) -> Report:
    """Captures ``model(*example_inputs)``, lowers it, verifies it against PyTorch and returns
    its SOL report on device ``hw``. ``model`` is an nn.Module or a function of tensors. With
    real inputs PyTorch runs once for the golden data (when the whole program is verified);
    with FakeTensor inputs (and a model built under the same FakeTensorMode) nothing is
    allocated, and verification is per op at reduced size. ``options``: see the module doc."""
    from solar.capture import capture, is_fake

    if options.pop("train", False):  # a training step (docs/training.md)
        from solar import training

        return training.analyze(model, example_inputs, hw, policy, source, **options)
    if options.get("optimizer") is not None or options.get("loss") is not None:
        from solar.training import check_options

        check_options(False, options.get("optimizer"), options.get("loss"))
    options.pop("optimizer", None)
    options.pop("loss", None)
    inputs = (
        tuple(example_inputs) if isinstance(example_inputs, (list, tuple)) else (example_inputs,)
    )
    with timed(options.get("stage_times"), "capture"):
        cap = capture(model, inputs, source=source)
    if is_fake(inputs):
        return analyze_capture(cap, None, hw, policy, **options)

    def float64() -> tuple[Any, Callable[[list[str]], dict]]:
        model64, inputs64 = _to_float64(model), _to_float64(inputs)
        cap64 = capture(model64, inputs64, source=cap.document.get("source"))
        return cap64, lambda wanted: cap64.golden(model64, inputs64, wanted)

    options.setdefault("float64_rerun", float64)
    return analyze_capture(
        cap, lambda wanted: cap.golden(model, inputs, wanted), hw, policy, **options
    )


def _to_float64(value: Any) -> Any:
    """``solar.capture.to_float64``."""
    from solar.capture import to_float64

    return to_float64(value)


def analyze_file(
    path: str | os.PathLike, hw: str = DEFAULT_HW, policy: str | None = None, **options: Any
) -> Report:
    """``analyze`` on a benchmark-style model file (``Model``, ``get_inputs``,
    ``get_init_inputs``), built after ``torch.manual_seed(0)``. The model is first built with
    FakeTensors and captured (no memory); it is built for real only when the whole program is
    verified."""
    from solar.capture import capture, capture_model_file, is_fake, load_model_file

    source = os.path.basename(path)
    if os.path.isfile(path) and framework_of(path) == "jax":
        raise AnalysisError(f"{source} is a JAX model file: solar.analyze_file analyses it")
    if options.pop("loss", None) is not None:
        raise TypeError("analyze_file takes the loss from the model file's get_loss: no 'loss'")
    if options.pop("train", False):  # a training step (docs/training.md)
        from solar import training

        return training.analyze_file(path, hw, policy, **options)
    if options.pop("optimizer", None) is not None:
        raise AnalysisError("--optimizer needs --train (an optimizer updates a training step)")
    with timed(options.get("stage_times"), "capture"):
        cap, model, inputs = capture_model_file(path)

    def float64() -> tuple[Any, Callable[[list[str]], dict]]:
        model64, inputs64 = load_model_file(path)
        model64, inputs64 = _to_float64(model64), _to_float64(inputs64)
        cap64 = capture(model64, inputs64, source=source)
        return cap64, lambda wanted: cap64.golden(model64, inputs64, wanted)

    options.setdefault("float64_rerun", float64)
    if not is_fake(inputs):  # built for real: FakeTensors could not build it
        return analyze_capture(
            cap, lambda wanted: cap.golden(model, inputs, wanted), hw, policy, **options
        )

    def golden(wanted: list[str]) -> dict[str, np.ndarray]:
        model, inputs = load_model_file(path)
        real = cap
        if _holds_fake_values(cap):  # lifted constants were captured as FakeTensors
            real = capture(model, inputs, source=source)
            if real.to_json() != cap.to_json():
                raise AnalysisError(f"{source}: the model captures differently when built for real")
        data = real.golden(model, inputs, wanted)
        cap.golden_notes = real.golden_notes
        return data

    return analyze_capture(cap, golden, hw, policy, **options)


def _holds_fake_values(cap: Any) -> bool:
    if cap.method != "torch.export":
        return True  # make_fx keeps constants as attributes of its graph module
    return any(b.kind == "constant" for b in cap.traced.placeholders.values())


def capture_file(
    path: str | os.PathLike, golden: bool = False, prog: str = "solar"
) -> tuple[Any, Callable[[], dict]]:
    """``(capture, golden)`` of a model file: with ``golden``, the model is built for real and
    ``golden()`` runs it once; without, it is built with FakeTensors when it can be (no memory;
    a note on stderr, prefixed with ``prog``, when it must be built for real)."""
    from solar.capture import capture, capture_model_file, load_model_file

    if golden:
        model, inputs = load_model_file(path)
        cap = capture(model, inputs, source=os.path.basename(path))
    else:
        cap, model, inputs = capture_model_file(path, prog=prog)
    return cap, lambda: cap.golden(model, inputs)
