"""``solar calibrate -o FILE.yaml``: measure this machine's device and write a device file.

Measured with PyTorch on the CPU or on CUDA (docs/calibrate.md):

- compute: a square matrix multiply per precision the device runs (fp64, fp32, bf16, fp16 and, on
  CUDA, tf32), at growing sizes, and a few 3x3 convolutions, the best of several runs: the
  faster FLOP/s of the two (2 x n^3 / time; 2 x N x C_out x H x W x C_in x 9 / time);
- elementwise throughput: ``torch.mul`` on vectors that fit in cache, ops/s, best of several;
- bandwidth: a large copy (``dst.copy_(src)``, several times the last-level cache on the CPU),
  bytes read + written / time, best of several;
- last-level cache bandwidth (the warm cache state, docs/cache-state.md): the same copy of a
  source and a destination that together fill half the cache, repeated inside one timing;
- the minimum kernel duration (``min_kernel_s``, the unfused kernel floor): one-element
  ``torch.add`` calls back to back, the time per call, best of several.

A SOL time must stay a lower bound of every real run on the device, so every figure is the best
(fastest) of its runs, and each rate a precision policy may ask for is at least the fastest rate
measured for that work: the fp32 vector rate is max(fp32 GEMM, elementwise), and on the CPU,
which has no TF32, tf32 "tensor" is the fp32 GEMM rate (so the default policy's fp32
convolutions resolve). Each figure's ``source`` records how it was measured. The file is checked
by SOLAR's own loader before it is written.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from solar.measure import cpu_model, local_device_name, pick_device, sanitize_name


@dataclass
class Figure:
    value: float
    source: str


@dataclass
class Settings:
    gemm_sizes: tuple[int, ...]
    repeats: int
    copy_bytes: int
    elementwise_elements: int
    budget_s: float  # stop growing a GEMM once one run takes this long


def settings(device: str, quick: bool) -> Settings:
    llc = largest_cache_bytes()
    if device == "cuda":
        if quick:
            return Settings((1024, 2048), 3, 256 << 20, 1 << 22, 0.5)
        return Settings((2048, 4096, 8192), 10, 1 << 30, 1 << 24, 2.0)
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


def _sync(device: str) -> None:
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


def _best_time(fn: Callable[[], object], device: str, repeats: int) -> float:
    """The fastest of ``repeats`` timed runs of ``fn`` (after one untimed warm-up run)."""
    fn()
    _sync(device)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        _sync(device)
        best = min(best, time.perf_counter() - t0)
    return max(best, 1e-9)


def measure_gemm(device: str, dtype, s: Settings) -> tuple[float, int]:
    """The best FLOP/s of ``torch.mm`` in ``dtype`` over the sizes (2 x n^3 per product), and the
    size it was reached at."""
    import torch

    best, best_n = 0.0, 0
    for n in s.gemm_sizes:
        a = torch.randn(n, n, device=device).to(dtype)
        b = torch.randn(n, n, device=device).to(dtype)
        c = torch.empty(n, n, device=device, dtype=dtype)
        t = _best_time(lambda a=a, b=b, c=c: torch.mm(a, b, out=c), device, s.repeats)
        rate = 2.0 * n**3 / t
        if rate > best:
            best, best_n = rate, n
        if t > s.budget_s:
            break
    return best, best_n


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


def measure_conv(device: str, dtype, s: Settings, quick: bool) -> tuple[float, str]:
    """The best FLOP/s of ``torch.nn.functional.conv2d`` in ``dtype`` over ``conv_shapes``
    (stride 1, 'same' padding: 2 x N x C_out x H x W x C_in x k x k per convolution), and the
    shape it was reached at, as text."""
    import torch

    best, best_shape = 0.0, ""
    for n, c, hw, k in conv_shapes(device, quick):
        x = torch.randn(n, c, hw, hw, device=device).to(dtype)
        w = torch.randn(c, c, k, k, device=device).to(dtype)
        t = _best_time(
            lambda x=x, w=w, p=k // 2: torch.nn.functional.conv2d(x, w, padding=p),
            device,
            s.repeats,
        )
        rate = 2.0 * n * c * hw * hw * c * k * k / t
        if rate > best:
            best, best_shape = rate, f"{n}x{c}x{hw}x{hw} * {c}x{c}x{k}x{k}"
    return best, best_shape


def measure_elementwise(device: str, s: Settings) -> float:
    """The best ops/s of an fp32 multiply, one op per element, on vectors that fit in cache
    (repeated inside one timing until it lasts 1 ms)."""
    import torch

    n = s.elementwise_elements
    x, y, z = (torch.randn(n, device=device) for _ in range(3))

    def runs(count: int) -> Callable[[], object]:
        return lambda: [torch.mul(x, y, out=z) for _ in range(count)]

    inner = 1
    while _best_time(runs(inner), device, 1) < 1e-3 and inner < 1 << 16:
        inner *= 4
    t = _best_time(runs(inner), device, s.repeats)
    return n * inner / t


def measure_copy(device: str, s: Settings) -> float:
    """The best bytes/s of a copy of ``copy_bytes`` bytes (read + written)."""
    import torch

    n = s.copy_bytes // 4
    src = torch.ones(n, device=device)
    dst = torch.empty(n, device=device)
    t = _best_time(lambda: dst.copy_(src), device, s.repeats)
    return 2.0 * n * 4 / t


def measure_cache_copy(device: str, cache_bytes: int, s: Settings) -> float:
    """The best bytes/s (read + written) of a copy whose source and destination together fill
    half of a ``cache_bytes`` cache, repeated inside one timing until it lasts 1 ms."""
    import torch

    n = max(1, cache_bytes // 16)  # two fp32 buffers of cache_bytes / 4 bytes each
    src = torch.ones(n, device=device)
    dst = torch.empty(n, device=device)

    def runs(count: int) -> Callable[[], object]:
        return lambda: [dst.copy_(src) for _ in range(count)]

    inner = 1
    while _best_time(runs(inner), device, 1) < 1e-3 and inner < 1 << 16:
        inner *= 4
    t = _best_time(runs(inner), device, s.repeats)
    return 2.0 * n * 4 * inner / t


def measure_min_kernel(device: str, s: Settings) -> tuple[float, int]:
    """The best time per call of one-element ``torch.add`` calls issued back to back (each one
    kernel on CUDA), and how many calls were timed together."""
    import torch

    x = torch.ones(1, device=device)
    y = torch.empty(1, device=device)
    count = 1000
    t = _best_time(lambda: [torch.add(x, 1.0, out=y) for _ in range(count)], device, s.repeats)
    return t / count, count


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


def calibrate(device: str, quick: bool = False) -> dict:
    """Measures ``device``; returns the device file's content as a dict of Figures and strings."""
    import torch

    s = settings(device, quick)
    how = f"solar calibrate ({'quick' if quick else 'full'}), torch {torch.__version__}"
    threads = f", {torch.get_num_threads()} threads" if device == "cpu" else ""
    tensor: dict[str, Figure] = {}
    vector: dict[str, Figure] = {}

    def gemm(dtype, label: str) -> tuple[float, str] | None:
        """The best rate of a matrix multiply and a convolution in ``dtype``: both are bounded
        at the same rate, which must cover the faster."""
        try:
            rate, n = measure_gemm(device, dtype, s)
        except RuntimeError:  # the device has no kernel for this dtype
            return None
        source = f"measured: torch.mm {n}x{n} {label}, best of {s.repeats}{threads}; {how}"
        try:
            conv, shape = measure_conv(device, dtype, s, quick)
        except RuntimeError:
            return rate, source
        if conv > rate:
            return conv, (
                f"measured: conv2d {shape} {label}, best of {s.repeats}{threads}, faster than "
                f"torch.mm {n}x{n} ({rate:.4g} FLOP/s); {how}"
            )
        return rate, source + f" (conv2d {shape}: {conv:.4g} FLOP/s)"

    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
    fp32 = gemm(torch.float32, "fp32")
    fp64 = gemm(torch.float64, "fp64")
    if fp32 is None:
        raise ValueError(f"cannot run an fp32 matrix multiply on {device}")
    elementwise = measure_elementwise(device, s)
    ew_source = (
        f"measured: torch.mul of {s.elementwise_elements} fp32 elements, best of {s.repeats}"
        f"{threads}: {elementwise:.4g} ops/s; {how}"
    )
    if elementwise > fp32[0]:
        vector["fp32"] = Figure(elementwise, ew_source)
    else:
        vector["fp32"] = Figure(fp32[0], fp32[1] + f" (elementwise {elementwise:.4g} ops/s)")
    if fp64 is not None:
        vector["fp64"] = Figure(fp64[0], fp64[1])
        if device == "cuda":
            tensor["fp64"] = Figure(fp64[0], fp64[1])
    for dtype, label in ((torch.float16, "fp16"), (torch.bfloat16, "bf16")):
        measured = gemm(dtype, label)
        if measured is not None:
            tensor[label] = Figure(*measured)
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        tf32 = gemm(torch.float32, "fp32 with TF32 allowed")
        torch.backends.cuda.matmul.allow_tf32 = False
        if tf32 is not None:
            tensor["tf32"] = Figure(*tf32)
    else:
        tensor["tf32"] = Figure(
            fp32[0], fp32[1] + " (the CPU has no TF32: fp32 convolutions run at this rate)"
        )
    bandwidth = measure_copy(device, s)
    memory = [
        (
            "DRAM",
            Figure(memory_bytes(device), f"measured: total memory of {device} as the OS reports"),
            Figure(
                bandwidth,
                f"measured: copy of {s.copy_bytes} bytes, (read + written) / time, "
                f"best of {s.repeats}{threads}; {how}",
            ),
        )
    ]
    units = None

    def cache_bandwidth(capacity: int) -> Figure:
        rate = measure_cache_copy(device, capacity, s)
        return Figure(
            rate,
            f"measured: copy of {capacity // 4} bytes (half the cache with its destination), "
            f"repeated, (read + written) / time, best of {s.repeats}{threads}; {how}",
        )

    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        l2 = getattr(props, "L2_cache_size", 0)
        if l2:
            memory.append(
                (
                    "L2",
                    Figure(l2, "torch.cuda.get_device_properties: L2_cache_size"),
                    cache_bandwidth(l2),
                )
            )
        units = Figure(props.multi_processor_count, "torch.cuda.get_device_properties")
        vendor, description = "NVIDIA", torch.cuda.get_device_name(0)
    else:
        llc = largest_cache_bytes()
        if llc:
            memory.append(
                (
                    "L2",
                    Figure(llc, "sysfs: the largest cache of cpu0 (the last level)"),
                    cache_bandwidth(llc),
                )
            )
        units = Figure(torch.get_num_threads(), "torch.get_num_threads()")
        vendor, description = _cpu_vendor(), cpu_model()
    kernel_s, calls = measure_min_kernel(device, s)
    min_kernel = Figure(
        kernel_s,
        f"measured: {calls} one-element torch.add calls back to back, time per call, best of "
        f"{s.repeats}{threads}; {how}",
    )
    return {
        "min_kernel_s": min_kernel,
        "name": local_device_name(device),
        "vendor": vendor,
        "description": f"{description}, calibrated by solar calibrate on this machine",
        "tensor": tensor,
        "vector": vector,
        "memory": memory,
        "compute_units": units,
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


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _figure(f: Figure) -> str:
    value = f"{int(f.value)}" if float(f.value).is_integer() else f"{f.value:.6g}"
    return f"{{value: {value}, source: {_quote(f.source)}}}"


def to_yaml(d: dict) -> str:
    """The device file's text (docs/devices.md)."""
    lines = [
        "# Calibrated by `solar calibrate` (docs/calibrate.md): every figure measured on this",
        "# machine; its source says how.",
        f"name: {d['name']}",
        f"vendor: {_quote(d['vendor'])}",
        f"description: {_quote(d['description'])}",
        "peak_flops_per_s:",
    ]
    order = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8", "fp4")
    for unit in ("tensor", "vector"):
        if d[unit]:
            lines.append(f"  {unit}:")
            for p in order:
                if p in d[unit]:
                    lines.append(f"    {p}: {_figure(d[unit][p])}")
    lines.append("memory:")
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


def write_device_file(path: str, text: str) -> None:
    """Writes ``text`` to ``path`` after SOLAR's loader accepted it (atomically)."""
    from solar import pipeline
    from solar._files import write_atomic

    def loads(tmp: str) -> None:
        rc, _out, err = pipeline.run_cli_captured(["hw", "show", tmp])
        if rc != 0:
            raise RuntimeError(f"solar calibrate wrote a device file its loader refuses: {err}")

    write_atomic(path, text, check=loads, suffix=".yaml")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="solar calibrate",
        description="Measure this machine's device (compute per precision, elementwise "
        "throughput, copy bandwidth) and write a device file (docs/calibrate.md).",
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
    try:
        args = p.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as e:
        return 0 if e.code == 0 else 1
    if not args.output.endswith((".yaml", ".yml")):
        print("solar calibrate: error: -o must name a .yaml file", file=sys.stderr)
        return 1
    try:
        from solar._files import check_output_paths

        check_output_paths(args.output)  # before minutes of measuring
        device = pick_device(args.device)
        text = to_yaml(calibrate(device, args.quick))
        write_device_file(args.output, text)
    except (ValueError, OSError) as e:
        message = " ".join(str(e).split("\n")[0].split()) or type(e).__name__
        print(f"solar calibrate: error: {message}", file=sys.stderr)
        return 1
    sys.stdout.write(text)
    sys.stdout.write(f"\nwrote {args.output}\n")
    return 0
