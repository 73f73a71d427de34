"""Timing real runs of a model (docs/calibrate.md, "Measuring").

- On a CUDA device: CUDA events around each run, after warm-up runs, synchronised.
- On the CPU: wall clock (``time.perf_counter``) after warm-up runs; a run shorter than the
  timer's useful resolution is repeated inside one sample (the sample's time divided by the
  count).

Each of ``repeats`` samples gives one time per run; the result is their median, with the
minimum, the maximum and the spread (interquartile range / median). torch is imported only when a
function here is called.
"""

from __future__ import annotations

import os
import re
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

# A sample shorter than this is repeated inside one timing (CPU): perf_counter's resolution is
# well below it, so the per-run time it gives is exact to about 0.1%.
MIN_SAMPLE_S = 1e-3


@dataclass
class Timing:
    """Per-run times of ``repeats`` samples, in seconds."""

    samples_s: list[float]
    device: str  # the device that ran it, as ``local_device_name`` names it
    method: str  # one line: how it was timed

    @property
    def median_s(self) -> float:
        return statistics.median(self.samples_s)

    @property
    def min_s(self) -> float:
        return min(self.samples_s)

    @property
    def max_s(self) -> float:
        return max(self.samples_s)

    @property
    def spread(self) -> float:
        """Interquartile range / median (0 with fewer than 4 samples)."""
        if len(self.samples_s) < 4:
            return 0.0
        q = statistics.quantiles(self.samples_s, n=4)
        return (q[2] - q[0]) / self.median_s

    def describe(self) -> str:
        return (
            f"{self.method}, median of {len(self.samples_s)}, min {self.min_s * 1e3:.4g} ms, "
            f"max {self.max_s * 1e3:.4g} ms, spread (IQR/median) {100 * self.spread:.3g}%"
        )


def sanitize_name(text: str) -> str:
    """A device name SOLAR's device files accept: letters, digits and ``- _ . +``."""
    name = re.sub(r"[^A-Za-z0-9_.+-]+", "-", text.strip()).strip("-")
    return name or "unknown"


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (Linux), else the platform's processor string."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine() or "cpu"


def local_device_name(device: str) -> str:
    """The name under which this machine's ``device`` ("cpu" or "cuda") measures and calibrates:
    ``cpu-<model>`` or the GPU's name, sanitised (``solar calibrate`` uses it as the device
    file's name, so a headroom measured here against that file is not a what-if)."""
    if device == "cuda":
        import torch

        return sanitize_name(torch.cuda.get_device_name(0))
    return sanitize_name("cpu-" + cpu_model())


def same_device(hw_name: str, measured_on: str) -> bool:
    """Whether a run measured on ``measured_on`` ran on the device ``hw_name`` describes: the same
    name, or a GPU name that contains the built-in name's first word (``H200`` of ``H200-SXM``
    in ``NVIDIA-H200``). A heuristic for built-in names; calibrated files match exactly."""
    if hw_name == measured_on:
        return True
    first = hw_name.split("-")[0]
    return len(first) >= 2 and first.lower() in [w.lower() for w in measured_on.split("-")]


def pick_device(requested: str | None = None) -> str:
    """``requested`` ("cpu"/"cuda"), else "cuda" when torch sees a GPU, else "cpu"."""
    import torch

    if requested not in (None, "cpu", "cuda"):
        raise ValueError(f"unknown device '{requested}' (cpu or cuda)")
    if requested == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda: torch sees no CUDA device")
    return requested or ("cuda" if torch.cuda.is_available() else "cpu")


def time_function(
    fn: Callable[[], object],
    device: str = "cpu",
    warmup: int = 3,
    repeats: int = 20,
    threads: bool = True,
) -> Timing:
    """Times ``fn()`` (on ``device``): ``warmup`` untimed runs, then ``repeats`` samples.
    ``threads``: the method names torch's CPU thread count (False: fn is not torch's, and torch
    is not imported for a CPU timing)."""
    if warmup < 0 or repeats < 1:
        raise ValueError("warm-up must be >= 0 and repeats >= 1")
    if device == "cuda" or threads:
        import torch

    for _ in range(warmup):
        fn()
    samples = []
    if device == "cuda":
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
        t0 = time.perf_counter()
        fn()
        one = time.perf_counter() - t0
        inner = max(1, int(MIN_SAMPLE_S / max(one, 1e-9)))
        for _ in range(repeats):
            t0 = time.perf_counter()
            for _ in range(inner):
                fn()
            samples.append((time.perf_counter() - t0) / inner)
        method = f"wall clock, {warmup} warm-up runs, {inner} run(s) per sample"
        if threads:
            method += f", {torch.get_num_threads()} thread(s)"
    return Timing(samples, local_device_name(device), method)


def measure_model_file(
    path: str | os.PathLike, device: str | None = None, warmup: int = 3, repeats: int = 20
) -> Timing:
    """Times one forward pass of a benchmark-style model file (``Model``, ``get_inputs``,
    ``get_init_inputs``) under ``torch.no_grad()``, in the mode it was built in (as captured),
    on ``device`` (default: CUDA when available, else the CPU)."""
    import torch

    from solar.capture import load_model_file

    dev = pick_device(device)
    model, inputs = load_model_file(path)
    if hasattr(model, "to"):
        model = model.to(dev)
    inputs = tuple(x.to(dev) if isinstance(x, torch.Tensor) else x for x in inputs)

    def run() -> object:
        with torch.no_grad():
            return model(*inputs)

    return time_function(run, dev, warmup, repeats)
