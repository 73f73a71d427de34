"""The stages of one ``solar analyze`` (capture, lowering, verification, analysis): the SOL
analysis runs once per analysis (the verification budget reads the FLOPs from ``lift``), and
``solar bench`` records the seconds of each stage per problem in stages.json / stages.csv and
prints their totals (docs/cli.md, "solar bench")."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import solar  # noqa: E402
from solar import _core, cli  # noqa: E402
from solar import torch as solar_torch  # noqa: E402
from solar.suites import bench as suite  # noqa: E402

pytestmark = pytest.mark.skipif(
    not hasattr(solar._core, "lower_capture_detailed"),
    reason="this build of solar._core has no lower_capture_detailed",
)

MODELS = Path(__file__).resolve().parent / "models"
STAGES = ("capture", "lowering", "verification", "analysis")

RELU_MODEL = """import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2.0


def get_inputs():
    return [torch.randn(4, 8)]


def get_init_inputs():
    return []
"""

MATMUL_MODEL = """import torch


class Model(torch.nn.Module):
    def forward(self, a, b):
        return a @ b


def get_inputs():
    return [torch.randn(8, 4), torch.randn(4, 2)]


def get_init_inputs():
    return []
"""


@pytest.fixture
def commands(monkeypatch):
    """The calls into the C++ core's analysis (``_core.analyze``, ``_core.executor_seconds``) and
    command line (``_core.run_cli``), by name, in order."""
    calls: list[str] = []
    for name in ("analyze", "executor_seconds", "run_cli"):
        real = getattr(_core, name)

        def counted(*args, _real=real, _name=name, **kwargs):
            calls.append(_name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(_core, name, counted)
    return calls


def test_solar_analyze_runs_the_sol_analysis_once(commands, tmp_path, capsys):
    out = tmp_path / "r.json"
    assert cli.main(["analyze", str(MODELS / "mlp.py"), "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["verification"]["mode"] == "whole_program"  # chosen by the budgets (auto)
    # one estimate for the budget (the lift alone), one SOL analysis for the report, no
    # command line
    assert commands == ["executor_seconds", "analyze"]


def test_the_time_budget_reads_the_flops_without_the_analysis(commands):
    # a[64, 32] @ b[32, 16]: 64 * 32 * 16 = 32768 MACs = 65536 FLOPs and nothing else, bytes
    # read (64 * 32 + 32 * 16) * 4 = 10240, written 64 * 16 * 4 = 4096; at the executor's
    # 1e8 MAC/s and 5e8 B/s that is 32768 / 1e8 + 14336 / 5e8 = 0.000356352 s, over a budget
    # of 0.0001 s.
    def f(a, b):
        return a @ b

    report = solar_torch.analyze(
        f, (torch.randn(64, 32), torch.randn(32, 16)), verify_budget_s=1e-4
    )
    v = report.verification
    assert v["mode"] == "per_op"
    assert "about 0.000356 s in SOLAR's executor" in v["why"]
    assert "budget of 0.0001 s" in v["why"]
    assert report.data["totals"]["flops"] == 65536
    # estimates for the mode, then for the one per-op check's time (its only size, the real one,
    # is over the budget too: not run), then the one SOL analysis
    assert commands == ["executor_seconds", "executor_seconds", "analyze"]
    assert _core.totals(report.ir)["flops"] == 65536  # the lift's counts, as the report's


def test_bench_records_stage_times(tmp_path, capsys):
    d = tmp_path / "suite"
    d.mkdir()
    (d / "1_relu.py").write_text(RELU_MODEL)
    (d / "2_matmul.py").write_text(MATMUL_MODEL)
    out = tmp_path / "results"
    argv = [str(d), "--hw", "H100-SXM", "--out", str(out), "--jobs", "2"]
    assert suite.main(argv) == 0
    printed = capsys.readouterr().out

    rows = json.loads((out / "stages.json").read_text())
    assert [r["path"] for r in rows] == ["1_relu.py", "2_matmul.py", None]
    *problems, totals = rows
    for r in problems:
        parts = [r[f"{stage}_s"] for stage in STAGES]
        assert all(x >= 0 for x in parts), r
        assert sum(parts) <= r["total_s"], r
        assert r["capture_s"] > 0 and r["analysis_s"] > 0  # both ends were reached
        # other = total - the four stages (process start, imports)
        assert r["other_s"] == pytest.approx(r["total_s"] - sum(parts), abs=1e-12)
    # the "all" row: each column the sum of the two problems' values
    assert totals["level"] == "all" and totals["problems"] == 2
    for key in ("total_s", "other_s", *(f"{stage}_s" for stage in STAGES)):
        assert totals[key] == pytest.approx(problems[0][key] + problems[1][key], rel=1e-12)

    table = list(csv.DictReader((out / "stages.csv").open()))
    assert [r["path"] for r in table] == ["1_relu.py", "2_matmul.py", ""]
    assert float(table[0]["capture_s"]) == problems[0]["capture_s"]  # repr round-trips

    assert "stage times, summed over 2 problem(s):" in printed
    for stage in (*STAGES, "other", "total"):
        assert any(line.startswith(stage + " ") for line in printed.splitlines()), stage

    # measured times stay out of the reproducible outputs
    for name in ("problems.json", "problems.csv", "summary.json", "summary.csv"):
        text = (out / name).read_text()
        assert "total_s" not in text and "capture" not in text, name
    # a second run redoes nothing: the stage times are the recorded ones, the same bytes
    before = (out / "stages.json").read_bytes()
    assert suite.main(argv) == 0
    assert (out / "stages.json").read_bytes() == before


def test_analyze_writes_stage_times_even_when_it_fails(tmp_path, capsys):
    bad = tmp_path / "bad.py"
    bad.write_text(RELU_MODEL.replace("torch.relu(x) * 2.0", "torch.linalg.qr(x)[0]"))
    times = tmp_path / "t.json"
    assert cli.main(["analyze", str(bad), "--stage-times", str(times)]) == 1
    assert capsys.readouterr().err.count("\n") == 1  # one line
    data = json.loads(times.read_text())
    assert sorted(data) == sorted(STAGES)
    assert data["capture"] > 0  # captured, then the lowering refused the op
    assert data["verification"] == 0.0 and data["analysis"] == 0.0


def test_stage_times_are_refused_with_the_llm_agent(tmp_path, capsys):
    argv = ["analyze", str(MODELS / "mlp.py"), "--llm", "--stage-times", str(tmp_path / "t.json")]
    assert cli.main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("solar analyze: error: --stage-times ") and err.count("\n") == 1
    assert "cannot be given with --llm" in err
    assert not (tmp_path / "t.json").exists()
