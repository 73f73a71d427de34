"""bench/gpu_validate.py (issue 12): the checks, the device pick and the formatting on hand-made
numbers, and one end-to-end run on the CPU (no GPU here) over two tiny model files, checking the
table's structure. The GPU path (CUDA events, L2 flush, torch.compile) is not run by this test."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "gpu_validate.py"

MATMUL = '''"""A 64x64 matmul."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(64, 64), torch.randn(64, 64)]


def get_init_inputs() -> list:
    return []
'''

RELU = '''"""A relu of 64x64 elements."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(64, 64)]


def get_init_inputs() -> list:
    return []
'''


def load_script():
    spec = importlib.util.spec_from_file_location("gpu_validate", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gv = load_script()
MS = 1e-3


def test_violations_hand_made_numbers():
    # SOL: unfused 2 ms, fused 0.5 ms, cache-aware 0.6 ms; measured: eager 1 ms, compile 0.4 ms.
    sol = {"unfused": 2.0 * MS, "fused": 0.5 * MS, "cache_aware": 0.6 * MS}
    measured = {"eager": 1.0 * MS, "compile": 0.4 * MS}
    found = gv.violations(sol, measured)
    # unfused 2 > eager 1 (ratio 1/2 = 0.5); fused 0.5 > compile 0.4 (0.4/0.5 = 0.8);
    # cache-aware 0.6 > compile 0.4 (0.4/0.6 = 0.6667). Fused and cache-aware are below eager.
    assert [(v["fidelity"], v["timing"]) for v in found] == [
        ("unfused", "eager"),
        ("fused", "compile"),
        ("cache_aware", "compile"),
    ]
    assert [v["ratio"] for v in found] == pytest.approx([0.5, 0.8, 0.4 / 0.6])
    assert found[0]["sol_s"] == 2.0 * MS and found[0]["measured_s"] == 1.0 * MS


def test_violations_only_the_checked_pairs():
    # unfused 2 ms above compile 1 ms is no violation: compile fuses, unfused does not bound it.
    sol = {"unfused": 2.0 * MS, "fused": 0.5 * MS, "cache_aware": 0.5 * MS}
    assert gv.violations(sol, {"eager": 3.0 * MS, "compile": 1.0 * MS}) == []
    # equal is not above
    assert gv.violations(sol, {"eager": 2.0 * MS, "compile": 0.5 * MS}) == []
    # a missing timing (compile failed) or SOL (no cache fidelity) checks nothing
    found = gv.violations({"fused": 0.5 * MS}, {"eager": None, "compile": 0.1 * MS})
    assert [(v["fidelity"], v["timing"], v["ratio"]) for v in found] == [
        ("fused", "compile", pytest.approx(0.2))
    ]
    assert gv.violations({}, {"eager": 1.0, "compile": 1.0}) == []


def test_ratios_and_summary():
    sol = {"unfused": 2.0 * MS, "fused": 0.5 * MS, "cache_aware": 0.6 * MS}
    r = gv.ratios(sol, {"eager": 1.0 * MS, "compile": None})
    assert r == pytest.approx(
        {"eager/unfused": 0.5, "eager/fused": 2.0, "eager/cache_aware": 1 / 0.6}
    )
    problem = {
        "analysis": {"sol_s": sol},
        "timings": {"eager": {"median_s": 1.0 * MS}, "compile": {"status": "failed"}},
        "violations": gv.violations(sol, {"eager": 1.0 * MS, "compile": 0.4 * MS}),
    }
    clean = {
        "analysis": {"sol_s": sol},
        "timings": {"eager": {"median_s": 9 * MS}, "compile": {"median_s": 8 * MS}},
        "violations": [],
    }
    s = gv.summary([problem, clean])
    assert s["problems"] == 2 and s["analysed"] == 2
    assert s["timed"] == {"eager": 2, "compile": 1}
    assert s["violations"] == {
        "unfused>eager": 1,
        "fused>eager": 0,
        "fused>compile": 1,
        "cache_aware>eager": 0,
        "cache_aware>compile": 1,
    }
    assert s["violations_by_fidelity"] == {"unfused": 1, "fused": 1, "cache_aware": 1}
    assert s["problems_with_violations"] == 1


def test_default_hw_from_gpu_names():
    names = ["H100-SXM", "H100-PCIe", "H200-SXM", "B200", "GB200", "A100-SXM-80GB", "L4", "L40S"]
    assert gv.default_hw("NVIDIA H100 80GB HBM3", names) == "H100-SXM"
    assert gv.default_hw("NVIDIA H100 PCIe", names) == "H100-PCIe"
    assert gv.default_hw("NVIDIA H200", names) == "H200-SXM"
    assert gv.default_hw("NVIDIA B200", names) == "B200"
    assert gv.default_hw("NVIDIA A100-SXM4-80GB", names) == "A100-SXM-80GB"
    assert gv.default_hw("NVIDIA L4", names) == "L4"
    assert gv.default_hw("NVIDIA L40S", names) == "L40S"
    # other memory or no device file: no default (the script asks for --hw)
    for other in ("NVIDIA H100 NVL", "NVIDIA GH200 480GB", "NVIDIA L40", "NVIDIA A100-SXM4-40GB"):
        assert gv.default_hw(other, names) is None, other
    assert gv.default_hw("NVIDIA H200", ["H100-SXM"]) is None  # not a built-in here


def test_formatting():
    assert gv.fmt_time(2.051e-3) == "2.051 ms"
    assert gv.fmt_time(64.34e-9) == "64.34 ns"
    assert gv.fmt_time(1.5) == "1.5 s"
    assert gv.fmt_time(None) == "-"
    assert gv.fmt_ratio(0.5, checked=True) == "**0.5**"
    assert gv.fmt_ratio(0.5) == "0.5"
    assert gv.fmt_ratio(28294.4) == "28294"


def test_deadline_stops_a_long_call():
    # the alarm behind --budget-s: 0.05 s into a 5 s sleep
    t0 = time.perf_counter()
    with pytest.raises(gv.BudgetExceeded), gv.deadline(0.05):
        time.sleep(5)
    assert time.perf_counter() - t0 < 4
    with gv.deadline(5):  # ends in time: nothing raised, the alarm is cleared
        pass
    time.sleep(0.01)


def test_usage_errors(tmp_path):
    def run(*args):
        return subprocess.run(
            [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120
        )

    done = run(str(tmp_path), "--device", "cpu", "--iters", "10")
    assert done.returncode == 1
    assert "--iters must be at least 50" in done.stderr
    done = run(str(tmp_path / "missing"), "--device", "cpu")
    assert done.returncode == 1 and "not a folder" in done.stderr


def test_end_to_end_on_the_cpu(tmp_path):
    problems = tmp_path / "problems"
    problems.mkdir()
    (problems / "matmul64.py").write_text(MATMUL)
    (problems / "relu.py").write_text(RELU)
    md, js = tmp_path / "table.md", tmp_path / "table.json"
    args = [str(problems), "--device", "cpu", "--iters", "50", "--budget-s", "300"]
    args += ["--out", str(md), "--json", str(js)]
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr
    assert md.read_text() == done.stdout

    doc = json.loads(js.read_text())
    env = doc["environment"]
    assert env["device"] == "cpu" and env["hw"] == "H100-SXM" and env["what_if"]
    assert env["iters"] == 50 and env["flush_bytes"] == 0 and not env["compile"]
    assert [p["problem"] for p in doc["problems"]] == ["matmul64.py", "relu.py"]
    for p in doc["problems"]:
        assert p["analysis"]["status"] == "ok", p["analysis"]
        assert p["analysis"]["verification"] == "not_run"  # verification off by default
        sol = p["analysis"]["sol_s"]
        assert sorted(sol) == ["cache_aware", "fused", "unfused"]
        assert all(sol[f] > 0 for f in sol)
        eager = p["timings"]["eager"]
        assert eager["status"] == "ok" and eager["runs"] == 50
        assert 0 < eager["min_s"] <= eager["median_s"] <= eager["max_s"]
        assert p["timings"]["compile"]["status"] == "skipped"
        assert sorted(p["ratios"]) == ["eager/cache_aware", "eager/fused", "eager/unfused"]
        # microseconds of CPU against nanoseconds of an H100's bound
        assert p["violations"] == gv.violations(sol, {"eager": eager["median_s"]}) == []
    assert doc["summary"]["problems"] == 2 and doc["summary"]["timed"] == {"eager": 2, "compile": 0}

    table = done.stdout
    header = next(line for line in table.splitlines() if line.startswith("| problem"))
    for column in ("unfused SOL", "fused SOL", "cache-aware SOL", "eager", "compile"):
        assert f"| {column} |" in header
    rows = {line.split(" | ")[0][2:]: line for line in table.splitlines() if line.startswith("| ")}
    assert set(rows) == {"problem", "matmul64.py", "relu.py"}
    for p in doc["problems"]:
        cells = [c.strip() for c in rows[p["problem"]].strip("|").split("|")]
        sol = p["analysis"]["sol_s"]
        assert cells[1] == "not_run"
        assert cells[2:5] == [gv.fmt_time(sol[f]) for f in gv.FIDELITIES]
        assert cells[5] == gv.fmt_time(p["timings"]["eager"]["median_s"])
        assert cells[6] == "skipped" and cells[-1] == "none"
    assert "Summary: 2 problem(s), 2 analysed, 2 timed eager, 0 timed with torch.compile" in table
    assert "what-if" in table
