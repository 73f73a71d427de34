"""``solar calibrate`` (docs/calibrate.md): the device file it writes is accepted by SOLAR's
loader, every figure is positive and says it was measured, and the rates a policy asks for are
at least the fastest measured for that work; and the zero-violation check: on this machine's
calibrated CPU, no measured run of the test models is faster than its SOL."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from solar import cli
from solar.ir import run_cli_captured
from solar.timing import calibrate
from solar.torch.measure import local_device_name

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "tests" / "python" / "models"


@pytest.fixture(scope="module")
def cpu_device(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("calibrate") / "cpu.yaml"
    assert calibrate.main(["-o", str(path), "--device", "cpu", "--quick"]) == 0
    return path


def device_json(path: Path) -> dict:
    rc, out, err = run_cli_captured(["hw", "show", str(path), "--json"])
    assert rc == 0, err
    return json.loads(out)


def test_calibrated_file_loads_with_positive_measured_figures(cpu_device):
    d = device_json(cpu_device)
    assert d["name"] == local_device_name("cpu")
    vector = d["peak_flops_per_s"]["vector"]
    tensor = d["peak_flops_per_s"]["tensor"]
    assert vector["fp32"] > 0 and vector["fp64"] > 0
    # The CPU has no TF32: fp32 convolutions (tf32 under the default policy) run at the fp32
    # GEMM rate, which the fp32 vector rate is at least.
    assert 0 < tensor["tf32"] <= vector["fp32"]
    dram = [m for m in d["memory"] if m["level"] == "DRAM"][0]
    assert dram["bandwidth_bytes_per_s"] > 0 and dram["capacity_bytes"] > 0
    for key, source in d["sources"].items():
        assert source.startswith(("measured", "sysfs", "torch.")), (key, source)
    assert "copy of" in d["sources"]["memory.DRAM.bandwidth_bytes_per_s"]
    # The warm cache state's figure and the kernel floor's (docs/cache-state.md), when sysfs
    # gives the last-level cache's size.
    l2 = [m for m in d["memory"] if m["level"] == "L2"]
    if l2:
        assert l2[0]["bandwidth_bytes_per_s"] > 0
        assert "half the cache" in d["sources"]["memory.L2.bandwidth_bytes_per_s"]
    assert 0 < d["min_kernel_s"] < 1e-2
    assert "torch.add" in d["sources"]["min_kernel_s"]


def test_yaml_writer_round_trips_through_the_loader(tmp_path):
    d = {
        "name": "test-device",
        "vendor": 'Quote "Corp"',
        "description": "a test",
        "tensor": {"bf16": calibrate.Figure(1.5e12, "measured: test")},
        "vector": {"fp32": calibrate.Figure(2.25e11, "measured: test")},
        "memory": [("DRAM", calibrate.Figure(16e9, "test"), calibrate.Figure(5e10, "test"))],
        "compute_units": calibrate.Figure(8, "test"),
    }
    path = tmp_path / "t.yaml"
    calibrate.write_device_file(str(path), calibrate.to_yaml(d))
    j = device_json(path)
    assert j["vendor"] == 'Quote "Corp"'
    assert j["peak_flops_per_s"] == {"tensor": {"bf16": 1.5e12}, "vector": {"fp32": 2.25e11}}
    assert j["memory"] == [{"level": "DRAM", "capacity_bytes": 16e9, "bandwidth_bytes_per_s": 5e10}]
    assert j["compute_units"] == 8


def test_bad_output_is_a_one_line_error(tmp_path, capsys):
    assert calibrate.main(["-o", str(tmp_path / "x.txt"), "--quick"]) == 1
    assert capsys.readouterr().err.strip() == "solar calibrate: error: -o must name a .yaml file"
    assert not (tmp_path / "x.txt").exists()


@pytest.mark.parametrize("model", ["mlp.py", "cnn.py", "transformer.py"])
def test_zero_violations_on_the_calibrated_cpu(cpu_device, model, tmp_path):
    out = tmp_path / "r.json"
    args = ["analyze", str(MODELS / model), "--hw", str(cpu_device), "--measure"]
    assert cli.main([*args, "--measure-device", "cpu", "--json", str(out)]) == 0
    r = json.loads(out.read_text())
    h = r["headroom"]
    assert h["what_if"] is False  # measured on the device the file describes
    assert h["measured_on"] == local_device_name("cpu")
    sol = {f: r["sol"][f + "_s"] for f in r["bytes"]}
    ratios = {f: h["measured_s"] / t for f, t in sol.items()}
    print(f"{model}: measured {h['measured_s'] * 1e3:.4g} ms; measured / SOL: {ratios}")
    print(f"{model}: tightest ratio {min(ratios.values()):.4g} ({min(ratios, key=ratios.get)})")
    assert h["violation"] is False
    for f, t in sol.items():
        assert t <= h["measured_s"], f"{model}: {f} SOL {t} s is above the measured time"


def test_a_convolution_faster_than_the_matrix_multiply_sets_the_rate(monkeypatch):
    # A convolution library can beat the matrix multiply (oneDNN's direct 3x3 convolutions on
    # this CPU reached 219 GFLOP/s where torch.mm reached 200), and convolutions are bounded at
    # the same rate: the rate recorded is the faster of the two. Timing every run at 1 s (the
    # elementwise multiply then reaches 1,024 ops/s, below both):
    #   torch.mm 256x256 (quick): 2 x 256^3 = 33,554,432 FLOP/s
    #   conv2d 4x64x14x14 * 64x64x3x3: 2 x 4 x 64 x 14 x 14 x 64 x 9 = 57,802,752 FLOP/s
    monkeypatch.setattr(calibrate, "_best_time", lambda fn, device, repeats: 1.0)
    monkeypatch.setattr(
        calibrate,
        "settings",
        lambda device, quick: calibrate.Settings((256,), 1, 1 << 12, 1 << 10, 10.0),
    )
    d = calibrate.calibrate("cpu", quick=True)
    assert d["vector"]["fp32"].value == 2 * 4 * 64 * 14 * 14 * 64 * 9 == 57_802_752
    assert d["tensor"]["tf32"].value == 57_802_752
    assert "conv2d 4x64x14x14 * 64x64x3x3 fp32" in d["vector"]["fp32"].source
    assert "faster than torch.mm 256x256 (3.355e+07 FLOP/s)" in d["vector"]["fp32"].source


# --- CUDA, every GPU call mocked (no GPU here) ---------------------------------------------------
#
# The measure_* functions, torch.cuda.is_available, get_device_properties and get_device_name are
# replaced; calibrate.calibrate and main then run as on a GPU. Each mocked measurement is a best
# time and the work done in it (calibrate.Timed): the figure is work / time.

N = 8192
MATMUL_S = {  # the best time of one 8192^3 product per precision; int8 has no kernel
    "fp32": 22e-3,
    "fp64": 20e-3,
    "fp16": 1.4e-3,
    "bf16": 1.4e-3,
    "tf32": 2.75e-3,
    "fp8": 0.8e-3,
}
L2 = 60 * 2**20


def _timed(seconds, work, what):
    return calibrate.Timed(seconds, work, what)


def _matmul(device, kind, s):
    assert device == "cuda"
    if kind not in MATMUL_S:
        raise RuntimeError(f"no kernel for {kind} here\nsecond line of the error")
    name = {"fp8": "torch._scaled_mm", "int8": "torch._int_mm"}.get(kind, "torch.mm")
    return _timed(MATMUL_S[kind], 2.0 * N**3, f"{name} {N}x{N}")


def _elementwise(device, s, kind="fp32"):
    # fp32 and fp16: 2^29 ops in 1 ms (5.4e11 ops/s, below the fp32 GEMM); bf16: 1e8 ops in
    # 1 us (1e14 ops/s, above it)
    if kind == "bf16":
        return _timed(1e-6, 1e8, "torch.mul of 2097152 bf16 elements")
    return _timed(1e-3, 2.0**29, f"torch.mul of 2097152 {kind} elements")


@pytest.fixture
def fake_gpu(monkeypatch):
    import torch

    def use(gpu_name="NVIDIA H200", read_s=1e-3):
        props = SimpleNamespace(
            total_memory=150_000_000_000, L2_cache_size=L2, multi_processor_count=132
        )
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i=0: props)
        monkeypatch.setattr(torch.cuda, "get_device_name", lambda i=0: gpu_name)
        monkeypatch.setattr(calibrate, "measure_matmul", _matmul)
        monkeypatch.setattr(  # 1 FLOP/s: slower than every matrix multiply
            calibrate, "measure_conv", lambda device, kind, s, quick: _timed(1.0, 1.0, "conv2d x")
        )
        monkeypatch.setattr(calibrate, "measure_elementwise", _elementwise)
        monkeypatch.setattr(  # 2 GiB (1 GiB read + 1 GiB written) in 1 ms
            calibrate,
            "measure_copy",
            lambda device, s: _timed(1e-3, 2.0 * 2**30, "copy of 1073741824 bytes"),
        )
        monkeypatch.setattr(  # 4 GiB read in 1 ms
            calibrate,
            "measure_read",
            lambda device, s: _timed(read_s, 4 * 2**30, "torch.sum of 4294967296 bytes (fp32)"),
        )
        monkeypatch.setattr(  # 1,000 copies of 15 MiB (read + written) in 2 ms
            calibrate,
            "measure_cache_copy",
            lambda device, cache, s: _timed(2e-3, 2.0 * (cache // 4) * 1000, "copy repeated"),
        )
        monkeypatch.setattr(  # 1,024 kernels in 2 ms
            calibrate, "measure_min_kernel", lambda device, s: _timed(2e-3, 1024, "1024 kernels")
        )

    return use


def expected_cuda_figures() -> dict[str, float]:
    """Every figure a mocked H200 gives, by its `hw show --json` path, the arithmetic by hand."""
    return {
        "peak_flops_per_s.tensor.fp64": 2 * 8192**3 / 20e-3,  # 5.498e13
        "peak_flops_per_s.tensor.tf32": 2 * 8192**3 / 2.75e-3,  # 3.998e14
        "peak_flops_per_s.tensor.fp16": 2 * 8192**3 / 1.4e-3,  # 7.854e14
        "peak_flops_per_s.tensor.bf16": 2 * 8192**3 / 1.4e-3,
        "peak_flops_per_s.tensor.fp8": 2 * 8192**3 / 0.8e-3,  # 1.374e15
        "peak_flops_per_s.vector.fp64": 2 * 8192**3 / 20e-3,
        # the fp32 GEMM (4.998e13) beats the elementwise multiply (2^29 / 1e-3 = 5.369e11)
        "peak_flops_per_s.vector.fp32": 2 * 8192**3 / 22e-3,
        "peak_flops_per_s.vector.bf16": 1e8 / 1e-6,  # the bf16 multiply beats fp32: 1e14
        "peak_flops_per_s.vector.fp16": 2 * 8192**3 / 22e-3,  # the fp16 multiply does not
        # the read (4 GiB / 1 ms = 4.295e12) beats the copy (2 GiB / 1 ms)
        "memory.DRAM.bandwidth_bytes_per_s": 4 * 2**30 / 1e-3,
        "memory.DRAM.capacity_bytes": 150e9,
        "memory.L2.capacity_bytes": 60 * 2**20,
        "memory.L2.bandwidth_bytes_per_s": 2 * 15 * 2**20 * 1000 / 2e-3,  # 1.573e13
        "min_kernel_s": 2e-3 / 1024,  # 1.953 us
        "compute_units": 132,
    }


def json_figure(d: dict, path: str) -> float:
    parts = path.split(".")
    if parts[0] == "memory":
        level = [m for m in d["memory"] if m["level"] == parts[1]][0]
        return level[parts[2]]
    node = d
    for p in parts:
        node = node[p]
    return node


def test_cuda_calibration_writes_every_figure_measured(fake_gpu, tmp_path, capsys):
    import torch

    fake_gpu()
    out = tmp_path / "h200.yaml"
    assert calibrate.main(["-o", str(out), "--device", "cuda"]) == 0
    text = out.read_text()
    # int8 raised a RuntimeError: left out, the reason's first line in a comment
    assert "# not measured: int8 matrix multiply: no kernel for int8 here\n" in text
    d = device_json(out)
    assert d["name"] == "NVIDIA-H200" and d["vendor"] == "NVIDIA"
    assert "int8" not in d["peak_flops_per_s"]["tensor"]
    assert set(d["peak_flops_per_s"]["tensor"]) == {"fp64", "tf32", "fp16", "bf16", "fp8"}
    assert set(d["peak_flops_per_s"]["vector"]) == {"fp64", "fp32", "bf16", "fp16"}
    expected = expected_cuda_figures()
    for path, value in expected.items():
        # the file holds 6 significant digits
        assert json_figure(d, path) == pytest.approx(value, rel=1e-5), path
    for path, source in d["sources"].items():
        if path.startswith(("peak_flops_per_s", "min_kernel_s")) or "bandwidth" in path:
            assert source.startswith("measured: "), (path, source)
            assert "best of 10, CUDA events" in source and f"torch {torch.__version__}" in source
        else:
            assert source.startswith("torch.cuda.get_device_properties"), (path, source)
    src = d["sources"]
    assert src["peak_flops_per_s.tensor.bf16"].startswith("measured: torch.mm 8192x8192 bf16,")
    assert src["peak_flops_per_s.tensor.fp8"].startswith(
        "measured: torch._scaled_mm 8192x8192 float8_e4m3fn (per-tensor scales, second operand "
        "column-major, bf16 out), best of 10"
    )
    assert src["peak_flops_per_s.tensor.tf32"].startswith(
        "measured: torch.mm 8192x8192 fp32 with TF32 allowed,"
    )
    assert "faster than a copy of 1073741824 bytes" in src["memory.DRAM.bandwidth_bytes_per_s"]
    assert "falls back to" in src["peak_flops_per_s.vector.fp16"]
    assert src["min_kernel_s"].startswith("measured: 1024 kernels, time per kernel")


def test_cuda_calibration_figures_exactly(fake_gpu):
    fake_gpu()
    d = calibrate.calibrate("cuda")
    assert d["tensor"]["fp8"].value == 2 * 8192**3 / 0.8e-3
    assert d["vector"]["bf16"].value == 1e8 / 1e-6
    assert d["memory"][0][2].value == 4 * 2**30 / 1e-3
    assert d["attainable_dram"].value == 4 * 2**30 / 1e-3  # the read-only rate
    assert d["min_kernel_s"].value == 2e-3 / 1024
    assert d["skipped"] == {"int8": "int8 matrix multiply: no kernel for int8 here"}


def attainable_block(text: str) -> tuple[str, str]:
    head, sep, block = text.partition("attainable:")
    assert sep
    return head, block


def test_attainable_appends_the_measured_block_to_the_datasheet(fake_gpu, tmp_path):
    fake_gpu("NVIDIA H200")
    out = tmp_path / "h200.yaml"
    assert calibrate.main(["-o", str(out), "--attainable", "H200-SXM"]) == 0
    datasheet = (ROOT / "data" / "hardware" / "H200-SXM.yaml").read_text()
    # The built-in file's own block (S67) is replaced by the one measured here: the file up to
    # it, byte for byte, then the new block.
    shipped = datasheet.index("\nattainable:\n") + 1
    head, block = attainable_block(out.read_text())
    assert head == datasheet[:shipped]
    assert calibrate.without_attainable(datasheet) == datasheet[:shipped]
    lines = block.split("\n")
    assert lines[0] == "" and lines[-1] == ""  # "attainable:\n" ... "\n"
    assert lines[1].startswith("  # measured on NVIDIA-H200 by `solar calibrate`")
    assert lines[2] == "  # not measured: int8 matrix multiply: no kernel for int8 here"
    # The fake vector fp64 rate, 2 x 8192^3 / 20e-3 = 5.49756e13 FLOP/s, is above H200-SXM's
    # 34e12 (the peak would be no bound), and its datasheet has no vector fp16 or bf16 peak for
    # the measured 2 x 8192^3 / 22e-3 = 4.99778e13 and 1e8 / 1e-6 = 1e14 FLOP/s (as
    # expected_cuda_figures): each named, not written.
    assert lines[3] == (
        "  # not written: vector fp64 5.49756e+13 FLOP/s, above the datasheet's 3.4e+13"
    )
    assert lines[4] == (
        "  # not written: vector fp16 4.99778e+13 FLOP/s (the datasheet has no peak for it)"
    )
    assert lines[5] == (
        "  # not written: vector bf16 1e+14 FLOP/s (the datasheet has no peak for it)"
    )
    keys = [line.split(":")[0] for line in lines[6:-1]]
    assert keys == [
        "  dram_bandwidth_bytes_per_s",
        "  peak_flops_per_s",
        "    tensor",
        *(f"      {p}" for p in ("fp64", "tf32", "fp16", "bf16", "fp8")),
        "    vector",
        "      fp32",
    ]
    # 4 GiB read in 1 ms: 4 x 2^30 / 1e-3 = 4,294,967,296,000 B/s
    assert lines[6].startswith(
        '  dram_bandwidth_bytes_per_s: {value: 4294967296000, source: "measured: torch.sum of '
        "4294967296 bytes (fp32), bytes read / time, best of 10, CUDA events; solar calibrate"
    )
    # bf16: 2 x 8192^3 / 1.4e-3 = 1,099,511,627,776 / 1.4e-3 = 785,365,448,411,428.6 FLOP/s,
    # 6 significant digits
    assert '      bf16: {value: 7.85365e+14, source: "measured: torch.mm 8192x8192 bf16' in block
    # fp32 vector: 1,099,511,627,776 / 22e-3 = 49,977,801,262,545.5 FLOP/s
    assert '      fp32: {value: 4.99778e+13, source: "measured: torch.mm 8192x8192 fp32' in block


def test_attainable_file_loads_through_the_loader(fake_gpu, tmp_path):
    fake_gpu("NVIDIA H200")
    out = tmp_path / "h200.yaml"
    assert calibrate.main(["-o", str(out), "--attainable", "H200-SXM"]) == 0
    d = device_json(out)
    assert d["name"] == "H200-SXM"
    assert d["peak_flops_per_s"]["tensor"]["bf16"] == 989.5e12  # the datasheet's, unchanged
    # The block as the loader read it: 2 x 8192^3 / 1.4e-3 = 7.85365e14 (6 digits written),
    # 4 x 2^30 / 1e-3 = 4.294967296e12 B/s.
    assert d["attainable"]["peak_flops_per_s"]["tensor"]["bf16"] == 7.85365e14
    assert d["attainable"]["dram_bandwidth_bytes_per_s"] == 4294967296000
    assert "fp16" not in d["attainable"]["peak_flops_per_s"]["vector"]


def test_attainable_above_the_datasheet_is_named_not_written(fake_gpu, tmp_path, capsys):
    # A fake GPU faster than H200-SXM's DRAM: 4 GiB read in 0.5 ms = 4 x 2^30 / 0.5e-3 =
    # 8.58993e12 B/s > 4.8e12.
    fake_gpu("NVIDIA H200", read_s=0.5e-3)
    out = tmp_path / "h200.yaml"
    assert calibrate.main(["-o", str(out), "--attainable", "H200-SXM"]) == 0
    text = out.read_text()
    assert "  # not written: DRAM 8.58993e+12 B/s, above the datasheet's 4.8e+12\n" in text
    assert "dram_bandwidth_bytes_per_s: {value: 8589934592000" not in text
    assert (
        "solar calibrate: warning: DRAM: measured 8.58993e+12 B/s, above the datasheet's peak "
        "4.8e+12: check the datasheet figure\n" in capsys.readouterr().err
    )
    assert "attainable" in device_json(out)  # the rates measured still load


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--attainable", "H200-SXM"],
            "--attainable H200-SXM: this GPU is 'NVIDIA H100 80GB HBM3', whose name lacks "
            "H200-SXM's model 'H200' (--force writes the file anyway)",
        ),
        (
            ["--attainable", "H200"],
            "--attainable: unknown device 'H200' (did you mean 'H200-SXM'?); built-in devices: ",
        ),
        (["--attainable", "my.yaml"], "--attainable takes a built-in device's name"),
        (["--force"], "--force goes with --attainable"),
        (
            ["--attainable", "H200-SXM", "--device", "cpu"],
            "--attainable measures a GPU against its datasheet; the CPU has no datasheet device",
        ),
    ],
)
def test_attainable_refusals_are_one_line_and_leave_no_file(
    fake_gpu, tmp_path, capsys, args, message
):
    fake_gpu("NVIDIA H100 80GB HBM3")
    out = tmp_path / "d.yaml"
    assert calibrate.main(["-o", str(out), *args]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("solar calibrate: error: " + message), err
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_attainable_force_writes_a_mismatched_gpu(fake_gpu, tmp_path):
    fake_gpu("NVIDIA H100 80GB HBM3")
    out = tmp_path / "d.yaml"
    assert calibrate.main(["-o", str(out), "--attainable", "H200-SXM", "--force"]) == 0
    assert "\nattainable:\n  # measured on NVIDIA-H100-80GB-HBM3 " in out.read_text()


@pytest.mark.parametrize(
    "name, gpu, plausible",
    [
        ("H200-SXM", "NVIDIA H200", True),
        ("H200-SXM", "NVIDIA H100 80GB HBM3", False),
        ("H100-PCIe", "NVIDIA H100 PCIe", True),
        ("A100-SXM-80GB", "NVIDIA A100-SXM4-80GB", True),
        ("RTX-4090", "NVIDIA GeForce RTX 4090", True),
        ("RTX-4090", "NVIDIA RTX A6000", False),
        ("L4", "NVIDIA L40S", False),
        ("Jetson-AGX-Orin-64GB", "Orin", True),
        ("MI300X", "AMD Instinct MI300X", True),
    ],
)
def test_a_gpu_plausibly_matches_a_builtin_device_by_its_model_token(name, gpu, plausible):
    assert calibrate.plausible_gpu(name, gpu) is plausible


def test_the_gpu_only_torch_calls_run_on_cpu_tensors():
    # What only CUDA runs (fp8 _scaled_mm with a column-major second operand, _int_mm, the
    # read-only sum, a bf16 multiply), on tiny CPU tensors: the calls and their arguments are
    # valid torch (the CUDA timing itself is not exercised here). A torch without a CPU kernel
    # raises RuntimeError, which calibrate records as a skipped precision.
    s = calibrate.Settings((32,), 1, 1 << 12, 1 << 8, 10.0)
    for kind in ("fp8", "int8", "tf32"):
        try:
            t = calibrate.measure_matmul("cpu", kind, s)
        except RuntimeError:
            continue
        assert t.work == 2 * 32**3 and t.seconds > 0
    assert calibrate.measure_read("cpu", s).work == 1 << 12
    assert calibrate.measure_elementwise("cpu", s, "bf16").what == "torch.mul of 256 bf16 elements"


def test_cuda_repeats_fall_back_to_launches_when_graph_capture_fails(monkeypatch):
    # Capture refused: the calls are launched back to back, and their count grows by 4x until
    # a timing lasts 1 ms. At 2 us a call: 16, 64, 256 (0.512 ms), 1,024 calls (2.048 ms).
    import torch

    def no_stream():
        raise RuntimeError("no graphs here")

    calls = []

    def fake_time(fn, repeats, flush=None):
        before = len(calls)
        fn()
        return (len(calls) - before) * 2e-6

    monkeypatch.setattr(torch.cuda, "Stream", no_stream)
    monkeypatch.setattr(calibrate, "_cuda_time", fake_time)
    t, count, how = calibrate._cuda_repeated(lambda: calls.append(1), 3)
    assert (count, t) == (1024, pytest.approx(1024 * 2e-6))
    assert how == "launched back to back (CUDA graph capture failed: no graphs here)"
