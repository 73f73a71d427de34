"""``solar calibrate -o FILE.yaml``: measure this machine's device and write a device file; with
``--attainable NAME``, a built-in GPU's datasheet file followed by the ceilings measured here.

Measured with PyTorch on the CPU or on CUDA (docs/calibrate.md):

- compute: a square matrix multiply per precision the device runs (fp64, fp32, bf16, fp16; on
  CUDA also tf32, fp8 with ``torch._scaled_mm`` and int8 with ``torch._int_mm``), at growing
  sizes, and for the floating-point precisions a few 3x3 convolutions, the best of several
  runs: the faster FLOP/s of the two (2 x n^3 / time; 2 x N x C_out x H x W x C_in x 9 / time);
- elementwise throughput: ``torch.mul`` on vectors that fit in cache, ops/s, best of several
  (fp32; on CUDA also bf16 and fp16);
- bandwidth: a large copy (``dst.copy_(src)``, several times the last-level cache on the CPU),
  bytes read + written / time, best of several; on CUDA also a read-only reduction
  (``torch.sum``), bytes read / time, with the L2 flushed before each timed run;
- last-level cache bandwidth (the warm cache state, docs/cache-state.md): the same copy of a
  source and a destination that together fill half the cache, repeated inside one timing;
- the minimum kernel duration (``min_kernel_s``, the kernel floor): one-element ``torch.add``
  kernels, the time per kernel, best of several: back to back on the CPU; on CUDA replayed from
  a CUDA graph (the GPU time of each), or launched back to back when capture fails.

On CUDA every run is timed with CUDA events. A SOL time must stay a lower bound of every real run
on the device, so every figure is the best (fastest) of its runs, and each rate a precision
policy may ask for is at least the fastest rate measured for that work: the fp32 vector rate is
max(fp32 GEMM, elementwise), a bf16/fp16 vector rate (CUDA) at least the fp32 vector rate, and
on the CPU, which has no TF32, tf32 "tensor" is the fp32 GEMM rate (so the default policy's fp32
convolutions resolve). A precision the device has no kernel for is left out, the reason written
in the file as a comment. Each figure's ``source`` records how it was measured. The file is
checked by SOLAR's own loader before it is written.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from solar.torch.measure import cpu_model, local_device_name, pick_device, sanitize_name


@dataclass
class Figure:
    value: float
    source: str


@dataclass
class Timed:
    """One measurement: the best time of one timed run, the work the run did (FLOPs, ops, bytes
    or kernels) and what ran, as the figure's source names it (``torch.mm 512x512``)."""

    seconds: float
    work: float
    what: str

    @property
    def rate(self) -> float:
        return self.work / self.seconds


@dataclass
class Settings:
    gemm_sizes: tuple[int, ...]
    repeats: int
    copy_bytes: int
    elementwise_elements: int
    budget_s: float  # stop growing a GEMM once one run takes this long


# The matrix precisions and the torch dtype each multiplies in (tf32: fp32 with TF32 allowed;
# fp8 and int8 are torch._scaled_mm and torch._int_mm). The ones measured on each device:
FLOAT_DTYPES = {
    "fp64": "float64",
    "fp32": "float32",
    "tf32": "float32",
    "fp16": "float16",
    "bf16": "bfloat16",
}
CPU_MATRIX = ("fp32", "fp64", "fp16", "bf16")
CUDA_MATRIX = ("fp32", "fp64", "fp16", "bf16", "tf32", "fp8", "int8")
CUDA_ELEMENTWISE = ("fp32", "bf16", "fp16")
PRECISION_ORDER = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8", "fp4")
# What the source adds after the shape, per precision (fp8/int8 name their operands).
LABELS = {
    "tf32": "fp32 with TF32 allowed",
    "fp8": "float8_e4m3fn (per-tensor scales, second operand column-major, bf16 out)",
    "int8": "int8 (int32 out; ops/s)",
}


def settings(device: str, quick: bool) -> Settings:
    llc = largest_cache_bytes()
    if device == "cuda":
        if quick:
            return Settings((1024, 2048), 3, 256 << 20, 1 << 21, 0.5)
        return Settings((2048, 4096, 8192), 10, 1 << 30, 1 << 21, 2.0)
    if quick:
        return Settings((256, 512), 3, max(32 << 20, 2 * llc), 1 << 16, 0.3)
    return Settings((512, 1024, 2048, 4096), 10, max(256 << 20, 4 * llc), 1 << 16, 2.0)


def largest_cache_bytes() -> int:
    """The largest CPU cache of cpu0 (Linux sysfs), in bytes; 0 when unknown."""
    best = 0
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        entries = sorted(os.listdir(base))
    except OSError:
        return 0
    for entry in entries:
        try:
            with open(os.path.join(base, entry, "size")) as f:
                text = f.read().strip()
        except OSError:
            continue
        scale = {"K": 1024, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            best = max(best, int(digits) * scale)
    return best


# --- timing -----------------------------------------------------------------------------------


def _sync(device: str) -> None:
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


def _best_time(fn: Callable[[], object], device: str, repeats: int) -> float:
    """The fastest of ``repeats`` timed runs of ``fn`` (after one untimed warm-up run): the wall
    clock on the CPU, CUDA events on CUDA."""
    if device == "cuda":
        return _cuda_time(fn, repeats)
    fn()
    _sync(device)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        _sync(device)
        best = min(best, time.perf_counter() - t0)
    return max(best, 1e-9)


def _cuda_time(fn: Callable[[], object], repeats: int, flush: object = None) -> float:
    """The fastest of ``repeats`` runs of ``fn`` on the current CUDA stream, timed with CUDA
    events (after one untimed warm-up run). ``flush``: a tensor zeroed before each run, outside
    the timing, to evict the L2 (a DRAM figure)."""
    import torch

    fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(repeats):
        if flush is not None:
            flush.zero_()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        best = min(best, start.elapsed_time(end) / 1e3)  # elapsed_time is in ms
    return max(best, 1e-9)


def _l2_flush_buffer() -> object:
    """A CUDA buffer of 4 x the GPU's L2 (at least 256 MiB): zeroing it evicts the L2."""
    import torch

    l2 = int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0) or 0)
    return torch.empty(max(4 * l2, 256 << 20), dtype=torch.uint8, device="cuda")


def _cuda_repeated(op: Callable[[], object], repeats: int) -> tuple[float, int, str]:
    """``(seconds, count, how)``: the fastest time of ``count`` back-to-back calls of ``op`` (a
    few kernels), ``count`` grown by 4x until one timing lasts 1 ms. The calls are captured in
    a CUDA graph and replayed, so that the time is the GPU's, without the launches between
    kernels; when capture fails, they are launched back to back (the time then includes what
    the launches leave idle)."""
    import torch

    def graph_of(count: int) -> Callable[[], object]:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm up outside the capture, as CUDA graphs ask
            op()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(count):
                op()
        return graph.replay

    def launches(count: int) -> Callable[[], object]:
        return lambda: [op() for _ in range(count)]

    try:
        make, how = graph_of, "replayed from a CUDA graph"
        make(1)
    except RuntimeError as e:
        make, how = launches, f"launched back to back (CUDA graph capture failed: {_line(e)})"
    count = 16
    while _cuda_time(make(count), 1) < 1e-3 and count < 1 << 14:
        count *= 4
    return _cuda_time(make(count), repeats), count, how


def _line(e: BaseException) -> str:
    """An exception's first line, at most 160 characters (a reason in a source or comment)."""
    text = " ".join(str(e).strip().split("\n")[0].split()) or type(e).__name__
    return text if len(text) <= 160 else text[:157] + "..."


@contextlib.contextmanager
def _tf32(device: str, allowed: bool) -> Iterator[None]:
    """On CUDA, TF32 allowed or not in matrix multiplies and cuDNN convolutions, as before
    afterwards; nothing on the CPU."""
    if device != "cuda":
        yield
        return
    import torch

    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = allowed
    torch.backends.cudnn.allow_tf32 = allowed
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


# --- measurements: each returns a Timed -------------------------------------------------------


def _sweep_sizes(device: str, s: Settings, make: Callable[[int], Callable], name: str) -> Timed:
    """The fastest rate over ``s.gemm_sizes`` of ``make(n)``'s run (an n x n x n product, 2 x n^3
    FLOPs or ops), growing n until one run takes ``s.budget_s``."""
    best: Timed | None = None
    for n in s.gemm_sizes:
        t = _best_time(make(n), device, s.repeats)
        run = Timed(t, 2.0 * n**3, f"{name} {n}x{n}")
        if best is None or run.rate > best.rate:
            best = run
        if t > s.budget_s:
            break
    assert best is not None  # gemm_sizes is never empty
    return best


def measure_matmul(device: str, kind: str, s: Settings) -> Timed:
    """The fastest square matrix multiply in precision ``kind`` (a key of FLOAT_DTYPES: torch.mm,
    TF32 allowed for tf32 only; fp8: torch._scaled_mm; int8: torch._int_mm). Raises RuntimeError
    (or AttributeError, a torch without the function) when the device has no kernel for it."""
    import torch

    if kind == "fp8":
        return _sweep_sizes(device, s, lambda n: _scaled_mm_run(device, n), "torch._scaled_mm")
    if kind == "int8":

        def int8(n: int) -> Callable[[], object]:
            a = torch.randint(-64, 64, (n, n), device=device, dtype=torch.int8)
            b = torch.randint(-64, 64, (n, n), device=device, dtype=torch.int8)
            return lambda: torch._int_mm(a, b)

        return _sweep_sizes(device, s, int8, "torch._int_mm")
    dtype = getattr(torch, FLOAT_DTYPES[kind])

    def mm(n: int) -> Callable[[], object]:
        a = torch.randn(n, n, device=device).to(dtype)
        b = torch.randn(n, n, device=device).to(dtype)
        c = torch.empty(n, n, device=device, dtype=dtype)
        return lambda: torch.mm(a, b, out=c)

    with _tf32(device, kind == "tf32"):
        return _sweep_sizes(device, s, mm, "torch.mm")


def _scaled_mm_run(device: str, n: int) -> Callable[[], object]:
    """An fp8 product: float8_e4m3fn operands with per-tensor scales, the second operand
    column-major (as torch._scaled_mm requires), a bf16 result."""
    import torch

    f8 = torch.float8_e4m3fn
    a = torch.randn(n, n, device=device).to(f8)
    b = torch.randn(n, n, device=device).to(f8).t()  # a column-major view
    one = torch.ones((), device=device, dtype=torch.float32)
    return lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)


def conv_shapes(device: str, quick: bool) -> tuple[tuple[int, int, int, int], ...]:
    """(batch, channels, height and width, kernel) of the 3x3-style convolutions timed beside
    the GEMMs: a convolution library may reach a higher rate than the matrix multiply
    (oneDNN's direct convolutions on a CPU), and the rate a convolution is bounded at must
    cover it."""
    if quick:
        return ((4, 64, 14, 3),)
    if device == "cuda":
        return ((64, 256, 28, 3), (64, 512, 14, 3))
    return ((32, 256, 14, 3), (32, 512, 7, 3))


def measure_conv(device: str, kind: str, s: Settings, quick: bool) -> Timed:
    """The fastest ``torch.nn.functional.conv2d`` in precision ``kind`` (a key of FLOAT_DTYPES)
    over ``conv_shapes`` (stride 1, 'same' padding: 2 x N x C_out x H x W x C_in x k x k per
    convolution)."""
    import torch

    dtype = getattr(torch, FLOAT_DTYPES[kind])
    best: Timed | None = None
    with _tf32(device, kind == "tf32"):
        for n, c, hw, k in conv_shapes(device, quick):
            x = torch.randn(n, c, hw, hw, device=device).to(dtype)
            w = torch.randn(c, c, k, k, device=device).to(dtype)
            t = _best_time(
                lambda x=x, w=w, p=k // 2: torch.nn.functional.conv2d(x, w, padding=p),
                device,
                s.repeats,
            )
            run = Timed(
                t, 2.0 * n * c * hw * hw * c * k * k, f"conv2d {n}x{c}x{hw}x{hw} * {c}x{c}x{k}x{k}"
            )
            if best is None or run.rate > best.rate:
                best = run
    assert best is not None
    return best


def measure_elementwise(device: str, s: Settings, kind: str = "fp32") -> Timed:
    """The fastest multiply in precision ``kind`` (fp32, bf16, fp16), one op per element, on
    vectors that fit in cache, repeated inside one timing until it lasts 1 ms (on CUDA,
    replayed from a CUDA graph)."""
    import torch

    n = s.elementwise_elements
    dtype = getattr(torch, FLOAT_DTYPES[kind])
    x, y, z = (torch.randn(n, device=device).to(dtype) for _ in range(3))
    what = f"torch.mul of {n} {kind} elements"
    if device == "cuda":
        t, count, how = _cuda_repeated(lambda: torch.mul(x, y, out=z), s.repeats)
        return Timed(t, n * count, f"{what}, {count} multiplies {how}")

    def runs(count: int) -> Callable[[], object]:
        return lambda: [torch.mul(x, y, out=z) for _ in range(count)]

    inner = 1
    while _best_time(runs(inner), device, 1) < 1e-3 and inner < 1 << 16:
        inner *= 4
    t = _best_time(runs(inner), device, s.repeats)
    return Timed(t, n * inner, what)


def measure_copy(device: str, s: Settings) -> Timed:
    """The fastest copy of ``copy_bytes`` bytes, counted read + written (on CUDA, the L2
    flushed before each run)."""
    import torch

    n = s.copy_bytes // 4
    src = torch.ones(n, device=device)
    dst = torch.empty(n, device=device)
    what = f"copy of {s.copy_bytes} bytes"
    if device == "cuda":
        t = _cuda_time(lambda: dst.copy_(src), s.repeats, flush=_l2_flush_buffer())
        return Timed(t, 2.0 * n * 4, what + ", L2 flushed before each run")
    t = _best_time(lambda: dst.copy_(src), device, s.repeats)
    return Timed(t, 2.0 * n * 4, what)


def measure_read(device: str, s: Settings) -> Timed:
    """The fastest read-only pass over ``copy_bytes`` bytes (an fp32 ``torch.sum`` into one
    element), counted read only (on CUDA, the L2 flushed before each run)."""
    import torch

    n = s.copy_bytes // 4
    src = torch.ones(n, device=device)
    out = torch.empty((), device=device)
    what = f"torch.sum of {n * 4} bytes (fp32)"
    if device == "cuda":
        t = _cuda_time(lambda: torch.sum(src, dim=0, out=out), s.repeats, flush=_l2_flush_buffer())
        return Timed(t, n * 4, what + ", L2 flushed before each run")
    return Timed(_best_time(lambda: torch.sum(src, dim=0, out=out), device, s.repeats), n * 4, what)


def measure_cache_copy(device: str, cache_bytes: int, s: Settings) -> Timed:
    """The fastest copy (read + written) whose source and destination together fill half of a
    ``cache_bytes`` cache, repeated inside one timing until it lasts 1 ms (on CUDA, replayed
    from a CUDA graph)."""
    import torch

    n = max(1, cache_bytes // 16)  # two fp32 buffers of cache_bytes / 4 bytes each
    src = torch.ones(n, device=device)
    dst = torch.empty(n, device=device)
    what = f"copy of {n * 4} bytes (half the cache with its destination), repeated"
    if device == "cuda":
        t, count, how = _cuda_repeated(lambda: dst.copy_(src), s.repeats)
        return Timed(t, 2.0 * n * 4 * count, f"{what} {count} times {how}")

    def runs(count: int) -> Callable[[], object]:
        return lambda: [dst.copy_(src) for _ in range(count)]

    inner = 1
    while _best_time(runs(inner), device, 1) < 1e-3 and inner < 1 << 16:
        inner *= 4
    t = _best_time(runs(inner), device, s.repeats)
    return Timed(t, 2.0 * n * 4 * inner, what)


def measure_min_kernel(device: str, s: Settings) -> Timed:
    """The fastest run of one-element ``torch.add`` calls (each one kernel on CUDA): its time and
    the number of calls in it. On the CPU, 1,000 calls back to back; on CUDA, replayed from a
    CUDA graph (the GPU time per kernel), or launched back to back when capture fails."""
    import torch

    x = torch.ones(1, device=device)
    y = torch.empty(1, device=device)
    if device == "cuda":
        t, count, how = _cuda_repeated(lambda: torch.add(x, 1.0, out=y), s.repeats)
        return Timed(t, count, f"{count} one-element torch.add kernels {how}")
    count = 1000
    t = _best_time(lambda: [torch.add(x, 1.0, out=y) for _ in range(count)], device, s.repeats)
    return Timed(t, count, f"{count} one-element torch.add calls back to back")


def memory_bytes(device: str) -> int:
    if device == "cuda":
        import torch

        return int(torch.cuda.get_device_properties(0).total_memory)
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


# --- the figures ------------------------------------------------------------------------------


@dataclass
class _Run:
    """One calibration: where, how, and the precisions left out with the reason."""

    device: str
    quick: bool
    s: Settings
    how: str  # "solar calibrate (full), torch 2.5.1+cu124"
    timer: str  # ", 2 threads" on the CPU, ", CUDA events" on CUDA
    skipped: dict[str, str] = field(default_factory=dict)

    def source(self, what: str, tail: str = "") -> str:
        return f"measured: {what}, best of {self.s.repeats}{self.timer}{tail}; {self.how}"


def _matrix_figure(r: _Run, kind: str) -> Figure | None:
    """The rate of precision ``kind``: the faster of the matrix multiply and (floating point)
    the convolution, both bounded at the same rate; None, with the reason in ``r.skipped``, when
    the device has no kernel for it."""
    label = LABELS.get(kind, kind)
    try:
        mm = measure_matmul(r.device, kind, r.s)
    except (RuntimeError, AttributeError) as e:  # no kernel for it here, or no such torch function
        r.skipped[kind] = f"{kind} matrix multiply: {_line(e)}"
        return None
    source = r.source(f"{mm.what} {label}")
    if kind not in FLOAT_DTYPES:
        return Figure(mm.rate, source)
    try:
        conv = measure_conv(r.device, kind, r.s, r.quick)
    except RuntimeError:
        return Figure(mm.rate, source)
    if conv.rate > mm.rate:
        faster = f", faster than {mm.what} ({mm.rate:.4g} FLOP/s)"
        return Figure(conv.rate, r.source(f"{conv.what} {label}", faster))
    return Figure(mm.rate, source + f" ({conv.what}: {conv.rate:.4g} FLOP/s)")


def _compute_figures(r: _Run) -> tuple[dict[str, Figure], dict[str, Figure]]:
    """The tensor and vector rates: per precision the matrix rate; fp32 vector at least the
    elementwise rate; on CUDA, bf16 and fp16 vector at least the fp32 vector rate."""
    cuda = r.device == "cuda"
    kinds = CUDA_MATRIX if cuda else CPU_MATRIX  # fp32 and fp64 first, then the elementwise
    m = {kind: _matrix_figure(r, kind) for kind in kinds[:2]}
    fp32 = m["fp32"]
    if fp32 is None:
        raise ValueError(f"cannot run an fp32 matrix multiply on {r.device}: {r.skipped['fp32']}")
    ew = measure_elementwise(r.device, r.s)
    m.update({kind: _matrix_figure(r, kind) for kind in kinds[2:]})
    tensor: dict[str, Figure] = {}
    vector: dict[str, Figure] = {}
    if ew.rate > fp32.value:
        vector["fp32"] = Figure(ew.rate, r.source(ew.what, f": {ew.rate:.4g} ops/s"))
    else:
        vector["fp32"] = Figure(fp32.value, fp32.source + f" (elementwise {ew.rate:.4g} ops/s)")
    if m["fp64"] is not None:
        vector["fp64"] = m["fp64"]
        if cuda:
            tensor["fp64"] = m["fp64"]
    for kind in ("fp16", "bf16", "tf32", "fp8", "int8"):
        if m.get(kind) is not None:
            tensor[kind] = m[kind]
    if not cuda:
        tensor["tf32"] = Figure(
            fp32.value, fp32.source + " (the CPU has no TF32: fp32 convolutions run at this rate)"
        )
        return tensor, vector
    for kind in CUDA_ELEMENTWISE[1:]:
        figure = _half_vector_figure(r, kind, vector["fp32"])
        if figure is not None:
            vector[kind] = figure
    return tensor, vector


def _half_vector_figure(r: _Run, kind: str, fp32: Figure) -> Figure | None:
    """The bf16 or fp16 vector rate on CUDA: the elementwise multiply's, or the fp32 vector rate
    when that is faster (the rate such work falls back to without this figure: a lower figure
    would bound it above the fallback's time)."""
    try:
        ew = measure_elementwise(r.device, r.s, kind)
    except RuntimeError as e:
        r.skipped[f"vector {kind}"] = f"{kind} elementwise multiply: {_line(e)}"
        return None
    if ew.rate > fp32.value:
        return Figure(ew.rate, r.source(ew.what, f": {ew.rate:.4g} ops/s"))
    return Figure(
        fp32.value,
        f"measured: the fp32 vector rate, faster than {ew.what} ({ew.rate:.4g} ops/s, best of "
        f"{r.s.repeats}{r.timer}): {kind} work falls back to it without this figure; {r.how}",
    )


def _dram_figures(r: _Run) -> tuple[Figure, Figure]:
    """(the DRAM bandwidth of the device file, the attainable block's): the copy's rate, and on
    CUDA the read-only sum's too: the file takes the faster, the attainable block the read."""
    copy = measure_copy(r.device, r.s)
    copy_figure = Figure(copy.rate, r.source(f"{copy.what}, (read + written) / time"))
    if r.device != "cuda":
        return copy_figure, copy_figure
    try:
        read = measure_read(r.device, r.s)
    except RuntimeError as e:
        r.skipped["read bandwidth"] = f"read-only bandwidth (torch.sum): {_line(e)}"
        return copy_figure, copy_figure
    read_figure = Figure(read.rate, r.source(f"{read.what}, bytes read / time"))
    if read.rate > copy.rate:
        faster = f", faster than a {copy.what} ({copy.rate:.4g} B/s, read + written)"
        return Figure(read.rate, r.source(f"{read.what}, bytes read / time", faster)), read_figure
    slower = f" (read-only {read.what}: {read.rate:.4g} B/s)"
    return Figure(copy.rate, copy_figure.source + slower), read_figure


def _memory_and_units(r: _Run) -> tuple[list, Figure, str, str]:
    """(memory levels, compute units, vendor, description)."""
    import torch

    memory: list = []
    if r.device == "cuda":
        props = torch.cuda.get_device_properties(0)
        capacity_source = "torch.cuda.get_device_properties: total_memory"
        l2 = int(getattr(props, "L2_cache_size", 0) or 0)
        l2_source = "torch.cuda.get_device_properties: L2_cache_size"
        units = Figure(props.multi_processor_count, "torch.cuda.get_device_properties")
        vendor = "AMD" if getattr(torch.version, "hip", None) else "NVIDIA"
        description = torch.cuda.get_device_name(0)
    else:
        capacity_source = f"measured: total memory of {r.device} as the OS reports"
        l2 = largest_cache_bytes()
        l2_source = "sysfs: the largest cache of cpu0 (the last level)"
        units = Figure(torch.get_num_threads(), "torch.get_num_threads()")
        vendor, description = _cpu_vendor(), cpu_model()
    memory.append(("DRAM", Figure(memory_bytes(r.device), capacity_source), None))
    if l2:
        cached = measure_cache_copy(r.device, l2, r.s)
        bandwidth = Figure(cached.rate, r.source(f"{cached.what}, (read + written) / time"))
        memory.append(("L2", Figure(l2, l2_source), bandwidth))
    return memory, units, vendor, description


def calibrate(device: str, quick: bool = False) -> dict:
    """Measures ``device``; returns the device file's content as a dict of Figures and strings,
    with ``skipped`` (what was left out, and why) and ``attainable_dram`` (CUDA: the DRAM
    figure of an ``attainable:`` block; None on the CPU)."""
    import torch

    cuda = device == "cuda"
    r = _Run(
        device,
        quick,
        settings(device, quick),
        f"solar calibrate ({'quick' if quick else 'full'}), torch {torch.__version__}",
        ", CUDA events" if cuda else f", {torch.get_num_threads()} threads",
    )
    tensor, vector = _compute_figures(r)
    dram, attainable_dram = _dram_figures(r)
    memory, units, vendor, description = _memory_and_units(r)
    memory[0] = ("DRAM", memory[0][1], dram)
    kernels = measure_min_kernel(device, r.s)
    per = "time per kernel" if cuda else "time per call"
    return {
        "min_kernel_s": Figure(kernels.seconds / kernels.work, r.source(f"{kernels.what}, {per}")),
        "name": local_device_name(device),
        "vendor": vendor,
        "description": f"{description}, calibrated by solar calibrate on this machine",
        "tensor": tensor,
        "vector": vector,
        "memory": memory,
        "compute_units": units,
        "skipped": r.skipped,
        "attainable_dram": attainable_dram if cuda else None,
    }


def _cpu_vendor() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("vendor_id"):
                    return sanitize_name(line.split(":", 1)[1])
    except OSError:
        pass
    return "unknown"


# --- the files --------------------------------------------------------------------------------


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _figure(f: Figure) -> str:
    value = f"{int(f.value)}" if float(f.value).is_integer() else f"{f.value:.6g}"
    return f"{{value: {value}, source: {_quote(f.source)}}}"


def _rate_lines(d: dict, indent: str) -> list[str]:
    """The ``tensor:`` and ``vector:`` blocks of a ``peak_flops_per_s`` mapping."""
    lines = []
    for unit in ("tensor", "vector"):
        if d[unit]:
            lines.append(f"{indent}{unit}:")
            for p in PRECISION_ORDER:
                if p in d[unit]:
                    lines.append(f"{indent}  {p}: {_figure(d[unit][p])}")
    return lines


def to_yaml(d: dict) -> str:
    """The device file's text (docs/devices.md)."""
    lines = [
        "# Calibrated by `solar calibrate` (docs/calibrate.md): every figure measured on this",
        "# machine; its source says how.",
        *(f"# not measured: {reason}" for reason in (d.get("skipped") or {}).values()),
        f"name: {d['name']}",
        f"vendor: {_quote(d['vendor'])}",
        f"description: {_quote(d['description'])}",
        "peak_flops_per_s:",
        *_rate_lines(d, "  "),
        "memory:",
    ]
    for level, capacity, bandwidth in d["memory"]:
        lines.append(f"  - level: {level}")
        lines.append(f"    capacity_bytes: {_figure(capacity)}")
        if bandwidth is not None:
            lines.append(f"    bandwidth_bytes_per_s: {_figure(bandwidth)}")
    if d.get("compute_units") is not None:
        lines.append(f"compute_units: {_figure(d['compute_units'])}")
    if d.get("min_kernel_s") is not None:
        lines.append(f"min_kernel_s: {_figure(d['min_kernel_s'])}")
    return "\n".join(lines) + "\n"


def attainable_yaml(d: dict, datasheet: dict) -> tuple[str, list[str]]:
    """The ``attainable:`` block of a datasheet file (docs/devices.md) and the warnings to print:
    the DRAM figure and the rates measured here that the datasheet (``solar hw show --json``
    of it) has a peak for and does not exceed. The loader refuses any other (a rate the datasheet
    lacks has no peak to measure against; one above its peak means the peak is no bound): those
    are named in comments instead, with the precisions left out, and one above its peak also
    in a warning."""
    lines = [
        "attainable:",
        f"  # measured on {d['name']} by `solar calibrate` (docs/calibrate.md); sources say how",
        *(f"  # not measured: {reason}" for reason in (d.get("skipped") or {}).values()),
    ]
    warnings: list[str] = []

    def above(what: str, value: float, unit: str, peak: float) -> None:
        lines.append(
            f"  # not written: {what} {value:.6g} {unit}, above the datasheet's {peak:.6g}"
        )
        warnings.append(
            f"{what}: measured {value:.6g} {unit}, above the datasheet's peak "
            f"{peak:.6g}: check the datasheet figure"
        )

    peaks = datasheet.get("peak_flops_per_s", {})
    kept: dict = {"tensor": {}, "vector": {}}
    for unit in ("tensor", "vector"):
        for p in PRECISION_ORDER:
            if p not in d[unit]:
                continue
            f = d[unit][p]
            peak = peaks.get(unit, {}).get(p)
            if peak is None:
                lines.append(
                    f"  # not written: {unit} {p} {f.value:.6g} FLOP/s (the datasheet has "
                    "no peak for it)"
                )
            elif f.value > peak:
                above(f"{unit} {p}", f.value, "FLOP/s", peak)
            else:
                kept[unit][p] = f
    dram = d.get("attainable_dram")
    if dram is not None:
        peak = datasheet["memory"][0]["bandwidth_bytes_per_s"]  # DRAM comes first
        if dram.value > peak:
            above("DRAM", dram.value, "B/s", peak)
        else:
            lines.append(f"  dram_bandwidth_bytes_per_s: {_figure(dram)}")
    if kept["tensor"] or kept["vector"]:
        lines += ["  peak_flops_per_s:", *_rate_lines(kept, "    ")]
    return "\n".join(lines) + "\n", warnings


def without_attainable(text: str) -> str:
    """``text`` without its ``attainable:`` block (a re-measurement replaces it): the line
    ``attainable:`` and the indented, comment and blank lines under it."""
    out, inside = [], False
    for line in text.splitlines(keepends=True):
        if re.match(r"attainable:", line):
            inside = True
        elif inside and (line[:1] in (" ", "\t") or not line.strip()):
            pass
        else:
            inside = False
            out.append(line)
    return "".join(out)


def _loader_refusal(path: str) -> str | None:
    """SOLAR's loader's message on the device file at ``path``; None when it loads."""
    from solar.ir import run_cli_captured

    rc, _out, err = run_cli_captured(["hw", "show", path])
    return None if rc == 0 else err.strip()


def write_device_file(path: str, text: str) -> None:
    """Writes ``text`` to ``path`` after SOLAR's loader accepted it (atomically)."""
    from solar._files import write_atomic

    def loads(tmp: str) -> None:
        err = _loader_refusal(tmp)
        if err is not None:
            raise RuntimeError(f"solar calibrate wrote a device file its loader refuses: {err}")

    write_atomic(path, text, check=loads, suffix=".yaml")


def write_attainable_file(path: str, text: str) -> None:
    """Writes ``text`` (a datasheet file and its ``attainable:`` block) to ``path`` after SOLAR's
    loader accepted it (atomically): a measured figure above its datasheet peak is refused."""
    from solar._files import write_atomic

    def loads(tmp: str) -> None:
        err = _loader_refusal(tmp)
        if err is not None:
            raise ValueError(f"solar calibrate wrote an attainable block its loader refuses: {err}")

    write_atomic(path, text, check=loads, suffix=".yaml")


# --- --attainable NAME ------------------------------------------------------------------------


def model_token(name: str) -> str:
    """The word of a built-in device's name that names the chip: the first with a digit that
    is not a memory size (``H200`` of ``H200-SXM``, ``4090`` of ``RTX-4090``, ``A100`` of
    ``A100-SXM-80GB``), else the last that is not one (``Orin`` of ``Jetson-AGX-Orin-64GB``)."""
    words = [w for w in name.split("-") if w and not re.fullmatch(r"\d+[KMGT]B", w, re.I)]
    for w in words:
        if any(ch.isdigit() for ch in w):
            return w
    return words[-1] if words else name


def plausible_gpu(name: str, gpu: str) -> bool:
    """Whether the GPU torch names ``gpu`` (``NVIDIA H200``) may be the built-in device ``name``
    (``H200-SXM``): ``gpu`` has ``name``'s model token as a word, case aside. A plausibility
    check only: an H100 PCIe card passes for H100-SXM."""
    words = [w.lower() for w in re.split(r"[^A-Za-z0-9]+", gpu) if w]
    return model_token(name).lower() in words


def builtin_file_text(name: str) -> str:
    """The text of the built-in device ``name``'s file, as SOLAR loads it; a one-line ValueError
    when ``name`` is no built-in device."""
    from solar import _core
    from solar.options import check_device

    if name.endswith((".yaml", ".yml")) or "/" in name or os.sep in name:
        raise ValueError(
            f"--attainable takes a built-in device's name (solar hw list), not '{name}'"
        )
    try:
        check_device(name)
    except ValueError as e:
        text = str(e).removesuffix(" (or give a device file ending in .yaml)")
        raise ValueError(f"--attainable: {text}") from None
    # Where the loader looks (docs/devices.md, "Where the built-in files are found").
    env = os.environ.get("SOLAR_DATA_DIR")
    if env:
        folders = [env]
    else:
        here = [os.path.dirname(os.path.abspath(_core.__file__))]
        here.append(os.path.dirname(os.path.realpath("/proc/self/exe")))
        folders = [
            f for d in here for f in (os.path.join(d, "data"), os.path.join(d, "..", "data"))
        ]
        folders.append(os.path.join(os.path.dirname(__file__), "..", "..", "data"))
    expected = _device_json(name)
    for folder in folders:
        path = os.path.normpath(os.path.join(folder, "hardware", name + ".yaml"))
        if os.path.isfile(path) and _device_json(path) == expected:
            with open(path, encoding="utf-8") as f:
                return f.read()
    raise ValueError(
        f"cannot find the file of the built-in device {name} (looked in: "
        f"{', '.join(os.path.normpath(f) for f in folders)})"
    )


def _device_json(spec: str) -> str | None:
    from solar.ir import run_cli_captured

    rc, out, _err = run_cli_captured(["hw", "show", spec, "--json"])
    return out if rc == 0 else None


def datasheet_text(name: str, device: str, force: bool) -> str:
    """The datasheet file that ``--attainable NAME`` writes before its block, after the checks:
    ``name`` is a built-in device, the device measured is a GPU and (unless ``force``) its name
    has ``name``'s model token; an ``attainable:`` block already in the file is left out (the
    one measured here replaces it)."""
    import torch

    text = builtin_file_text(name)
    if device != "cuda":
        raise ValueError(
            "--attainable measures a GPU against its datasheet; the CPU has no datasheet device "
            "(torch sees no CUDA device here, or --device cpu was given)"
        )
    gpu = torch.cuda.get_device_name(0)
    if not force and not plausible_gpu(name, gpu):
        raise ValueError(
            f"--attainable {name}: this GPU is '{gpu}', whose name lacks {name}'s model "
            f"'{model_token(name)}' (--force writes the file anyway)"
        )
    text = without_attainable(text)
    return text if text.endswith("\n") else text + "\n"


# --- the command ------------------------------------------------------------------------------


def _parse(argv: Sequence[str] | None) -> argparse.Namespace | int:
    p = argparse.ArgumentParser(
        prog="solar calibrate",
        description="Measure this machine's device (compute per precision, elementwise "
        "throughput, bandwidth, the kernel floor) and write a device file, or with --attainable "
        "a built-in GPU's datasheet file followed by the ceilings measured here "
        "(docs/calibrate.md).",
    )
    p.add_argument(
        "-o", "--output", required=True, metavar="FILE.yaml", help="write the device file here"
    )
    p.add_argument(
        "--device",
        choices=("cpu", "cuda"),
        help="the device to measure (default: cuda when present, else cpu)",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="small sizes, few repeats: a rough file in seconds (for tests)",
    )
    p.add_argument(
        "--attainable",
        metavar="NAME",
        help="write the built-in device NAME's datasheet file (solar hw list) followed by an "
        "'attainable:' block of the ceilings measured on this GPU",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="with --attainable: write it even when this GPU's name does not match NAME",
    )
    try:
        args = p.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as e:
        return 0 if e.code == 0 else 1
    if not args.output.endswith((".yaml", ".yml")):
        return _error("-o must name a .yaml file")
    if args.force and args.attainable is None:
        return _error("--force goes with --attainable")
    return args


def _error(message: str) -> int:
    print(f"solar calibrate: error: {message}", file=sys.stderr)
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    if isinstance(args, int):
        return args
    try:
        from solar._files import check_output_paths

        check_output_paths(args.output)  # before minutes of measuring
        device = pick_device(args.device)
        datasheet = None
        if args.attainable is not None:  # refused before measuring
            datasheet = datasheet_text(args.attainable, device, args.force)
        d = calibrate(device, args.quick)
        if datasheet is None:
            text = to_yaml(d)
            write_device_file(args.output, text)
        else:
            block, warnings = attainable_yaml(d, json.loads(_device_json(args.attainable) or "{}"))
            for w in warnings:
                sys.stderr.write(f"solar calibrate: warning: {w}\n")
            text = datasheet + block
            write_attainable_file(args.output, text)
    except (ValueError, OSError) as e:
        return _error(" ".join(str(e).split("\n")[0].split()) or type(e).__name__)
    sys.stdout.write(text)
    sys.stdout.write(f"\nwrote {args.output}\n")
    return 0
