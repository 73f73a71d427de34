"""Timing real runs of a PyTorch model (docs/calibrate.md, "Measuring").

- On a CUDA device: CUDA events around each run, after warm-up runs, synchronised.
- On the CPU: wall clock (``solar.timing.clock.wall_clock``: ``time.perf_counter`` after warm-up
  runs; a run shorter than the timer's useful resolution is repeated inside one sample).

Each of ``repeats`` samples gives one time per run; the result is their median, with the
minimum, the maximum and the spread (interquartile range / median). torch is imported only when a
function here is called. ``Timing`` and the device names are ``solar.timing.clock``'s
(framework-free).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from solar.timing.clock import (
    MIN_SAMPLE_S,
    Timing,
    cpu_device_name,
    cpu_model,
    same_device,
    sanitize_name,
    wall_clock,
)

__all__ = [
    "MIN_SAMPLE_S",
    "Timing",
    "cpu_model",
    "local_device_name",
    "measure_model",
    "pick_device",
    "same_device",
    "sanitize_name",
    "time_function",
]


def local_device_name(device: str) -> str:
    """The name under which this machine's ``device`` ("cpu" or "cuda") measures and calibrates:
    ``cpu-<model>`` or the GPU's name, sanitised (``solar calibrate`` uses it as the device
    file's name, so a headroom measured here against that file is not a what-if)."""
    if device == "cuda":
        import torch

        return sanitize_name(torch.cuda.get_device_name(0))
    return cpu_device_name()


def pick_device(requested: str | None = None) -> str:
    """``requested`` ("cpu"/"cuda"), else "cuda" when torch sees a GPU, else "cpu"."""
    import torch

    if requested not in (None, "cpu", "cuda"):
        raise ValueError(f"unknown device '{requested}' (cpu or cuda)")
    if requested == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda: torch sees no CUDA device")
    return requested or ("cuda" if torch.cuda.is_available() else "cpu")


def time_function(
    fn: Callable[[], object], device: str = "cpu", warmup: int = 3, repeats: int = 20
) -> Timing:
    """Times ``fn()`` (on ``device``): ``warmup`` untimed runs, then ``repeats`` samples."""
    if warmup < 0 or repeats < 1:
        raise ValueError("warm-up must be >= 0 and repeats >= 1")
    import torch

    if device == "cuda":
        for _ in range(warmup):
            fn()
        samples = []
        torch.cuda.synchronize()
        for _ in range(repeats):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) * 1e-3)
        method = f"CUDA events, {warmup} warm-up runs"
    else:
        samples, inner = wall_clock(fn, warmup, repeats)
        method = (
            f"wall clock, {warmup} warm-up runs, {inner} run(s) per sample, "
            f"{torch.get_num_threads()} thread(s)"
        )
    return Timing(samples, local_device_name(device), method)


def measure_model(
    build: Callable[[], tuple[Any, tuple]],
    device: str | None = None,
    warmup: int = 3,
    repeats: int = 20,
) -> Timing:
    """Times one forward pass of the model ``build()`` returns with its inputs (a model file
    built by the PyTorch adapter, ``solar.torch.measure_file``) under ``torch.no_grad()``, in
    the mode it was built in (as captured), on ``device`` (default: CUDA when available, else
    the CPU)."""
    import torch

    dev = pick_device(device)
    model, inputs = build()
    if hasattr(model, "to"):
        model = model.to(dev)
    inputs = tuple(x.to(dev) if isinstance(x, torch.Tensor) else x for x in inputs)

    def run() -> object:
        with torch.no_grad():
            return model(*inputs)

    return time_function(run, dev, warmup, repeats)
