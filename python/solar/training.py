"""The training step of a PyTorch program (docs/training.md): ``solar analyze MODEL.py --train
[--optimizer sgd|adam|adamw]`` and ``solar.analyze(model, inputs, train=True, ...)``.

The capture (``solar.capture.capture_train``) is the joint forward + backward graph of the loss,
with the optimizer's update appended, every node tagged with its phase; the rest is the ordinary
pipeline (``solar.pipeline.analyze_capture``): the lowering, whole-program or per-op
verification (the loss, every gradient and every updated tensor against PyTorch's autograd and
torch.optim on the same inputs and weights) and the analysis, whose report gains a ``training``
section (per phase and for the whole step: SOL per fidelity; the activations kept for the
backward), computed by the C++ core (sol/phases.h). torch is imported only when a function here
is called.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from solar.pipeline import DEFAULT_HW, AnalysisError, Report, analyze_capture, timed

__all__ = ["analyze", "analyze_file", "check_options"]


def check_options(train: bool, optimizer: str | None, loss: Any = None) -> None:
    """A one-line error for options that need ``train`` or name no optimizer."""
    from solar.capture._train import OPTIMIZERS

    if not train and optimizer is not None:
        raise AnalysisError("--optimizer needs --train (an optimizer updates a training step)")
    if not train and loss is not None:
        raise AnalysisError("a loss function needs train=True")
    if optimizer is not None and optimizer not in OPTIMIZERS:
        raise AnalysisError(f"unknown optimizer '{optimizer}' (valid: {', '.join(OPTIMIZERS)})")
    if loss is not None and not callable(loss):
        raise AnalysisError(f"the loss must be a function of (output, *inputs), not {loss!r}")


def analyze(
    model: Any,
    example_inputs: Any,
    hw: str = DEFAULT_HW,
    policy: str | None = None,
    source: str | None = None,
    loss: Callable[..., Any] | None = None,
    optimizer: str | None = None,
    **options: Any,
) -> Report:
    """The SOL report of one training step of ``model(*example_inputs)``: the loss
    ``loss(output, *inputs)`` (default: the sum of the outputs), its backward pass, and
    ``optimizer``'s update of every parameter (None: no update)."""
    from solar.capture import capture_train, is_fake
    from solar.capture import to_float64 as _to_float64

    check_options(True, optimizer, loss)
    inputs = (
        tuple(example_inputs) if isinstance(example_inputs, (list, tuple)) else (example_inputs,)
    )
    with timed(options.get("stage_times"), "capture"):
        cap = capture_train(model, inputs, source=source, loss_fn=loss, optimizer=optimizer)
    if is_fake(inputs):
        return analyze_capture(cap, None, hw, policy, **options)

    def float64() -> tuple[Any, Callable[[list[str]], dict]]:
        model64, inputs64 = _to_float64(model), _to_float64(inputs)
        cap64 = capture_train(model64, inputs64, cap.document.get("source"), loss, optimizer)
        return cap64, lambda wanted: cap64.golden(model64, inputs64, wanted)

    options.setdefault("float64_rerun", float64)
    return analyze_capture(
        cap, lambda wanted: cap.golden(model, inputs, wanted), hw, policy, **options
    )


def analyze_file(
    path: str | os.PathLike,
    hw: str = DEFAULT_HW,
    policy: str | None = None,
    optimizer: str | None = None,
    **options: Any,
) -> Report:
    """``analyze`` of a model file's training step; the loss is the file's ``get_loss(output,
    *inputs)`` when it defines one. The model is captured with FakeTensors when it can be built
    so (no memory) and built for real for the golden run."""
    import sys

    from solar.capture import CaptureError, capture_train, is_fake, load_model_file, model_module
    from solar.capture import to_float64 as _to_float64

    check_options(True, optimizer)
    path = os.fspath(path)
    source = os.path.basename(path)
    with timed(options.get("stage_times"), "capture"):
        loss = _file_loss(path, model_module(path))
        try:
            model, inputs = load_model_file(path, fake=True)
            cap = capture_train(model, inputs, source, loss, optimizer)
        except CaptureError:
            raise
        except Exception as e:  # a model that cannot be built with FakeTensors
            print(
                f"solar: note: building {source} with FakeTensors failed ({type(e).__name__});"
                " building the model with real tensors",
                file=sys.stderr,
            )
            model, inputs = load_model_file(path)
            cap = capture_train(model, inputs, source, loss, optimizer)

    def float64() -> tuple[Any, Callable[[list[str]], dict]]:
        model64, inputs64 = load_model_file(path)
        model64, inputs64 = _to_float64(model64), _to_float64(inputs64)
        cap64 = capture_train(model64, inputs64, source, loss, optimizer)
        return cap64, lambda wanted: cap64.golden(model64, inputs64, wanted)

    options.setdefault("float64_rerun", float64)
    if not is_fake(inputs):
        return analyze_capture(
            cap, lambda wanted: cap.golden(model, inputs, wanted), hw, policy, **options
        )

    def golden(wanted: list[str]) -> dict:
        real_model, real_inputs = load_model_file(path)
        real = cap
        if any(b.kind == "constant" for b in cap.traced.placeholders.values()):
            real = capture_train(real_model, real_inputs, source, loss, optimizer)
            if real.to_json() != cap.to_json():
                raise AnalysisError(f"{source}: the model captures differently when built for real")
        return real.golden(real_model, real_inputs, wanted)

    return analyze_capture(cap, golden, hw, policy, **options)


def _file_loss(path: str, module: Any) -> Callable[..., Any] | None:
    loss = getattr(module, "get_loss", None)
    if loss is not None and not callable(loss):
        raise AnalysisError(f"{path}: get_loss is not a function (get_loss(output, *inputs))")
    return loss
