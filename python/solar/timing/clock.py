"""Timing a run, framework-free (docs/calibrate.md, "Measuring"): ``Timing`` (per-run times of
several samples, their median and spread), ``wall_clock`` (warm-up runs, then samples; a run
shorter than the timer's useful resolution is repeated inside one sample), and the names of the
devices that measure. No torch or jax here: ``solar.torch.measure`` times PyTorch models (CUDA
events on a GPU), ``solar.jax.measure_file`` JAX ones.
"""

from __future__ import annotations

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


def cpu_device_name() -> str:
    """The name under which this machine's CPU measures and calibrates: ``cpu-<model>``,
    sanitised."""
    return sanitize_name("cpu-" + cpu_model())


def same_device(hw_name: str, measured_on: str) -> bool:
    """Whether a run measured on ``measured_on`` ran on the device ``hw_name`` describes: the same
    name, or a GPU name that contains the built-in name's first word (``H200`` of ``H200-SXM``
    in ``NVIDIA-H200``). A heuristic for built-in names; calibrated files match exactly."""
    if hw_name == measured_on:
        return True
    first = hw_name.split("-")[0]
    return len(first) >= 2 and first.lower() in [w.lower() for w in measured_on.split("-")]


def wall_clock(
    fn: Callable[[], object], warmup: int = 3, repeats: int = 20
) -> tuple[list[float], int]:
    """``(samples, inner)``: ``warmup`` untimed runs of ``fn()``, then ``repeats`` samples of
    ``inner`` runs each (``inner`` makes a sample at least ``MIN_SAMPLE_S`` long), each sample's
    time divided by ``inner`` (``time.perf_counter``)."""
    if warmup < 0 or repeats < 1:
        raise ValueError("warm-up must be >= 0 and repeats >= 1")
    for _ in range(warmup):
        fn()
    t0 = time.perf_counter()
    fn()
    one = time.perf_counter() - t0
    inner = max(1, int(MIN_SAMPLE_S / max(one, 1e-9)))
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - t0) / inner)
    return samples, inner
