"""``solar._core.analyze``: the analysis bound directly (no command line, no files), its report's
outputs, and the report sections every frontend fills with one schema (docs/report.md)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

import solar
from solar import _core, cli, pipeline
from solar import torch as solar_torch

ROOT = Path(__file__).resolve().parents[2]
MLP_IR = ROOT / "examples" / "mlp.ir"


def test_analyze_gives_the_numbers_of_solar_sol_json(tmp_path):
    out = tmp_path / "r.json"
    rc, _, err = pipeline.run_cli_captured(
        ["sol", str(MLP_IR), "--hw", "H100-SXM", "--capacity", "64KiB", "--json", str(out)]
    )
    assert rc == 0, err
    report = _core.analyze(MLP_IR.read_text(), "H100-SXM", source="mlp.ir", capacity="64KiB")
    assert report.to_json() == out.read_text()  # byte for byte
    data = json.loads(report.to_json())
    # examples/mlp.ir: 4*16*32 + 4*32*8 = 3072 MACs, 6432 FLOPs (tests/report/test_report.cpp)
    assert (data["totals"]["macs"], data["totals"]["flops"]) == (3072, 6432)
    assert data["verification"]["status"] == "not_verified"
    assert data["capture"]["framework"] == "ir"
    assert "not verified: IR file analysed directly" in report.render()


def test_analyze_takes_a_parsed_program_and_reports_errors_as_irerror():
    program = solar.parse(MLP_IR.read_text())
    data = json.loads(_core.analyze(program, "H100-SXM", fidelity="fused").to_json())
    assert sorted(data["bytes"]) == ["fused"]
    with pytest.raises(solar.IRError, match="unknown device 'nope'"):
        _core.analyze(program, "nope")
    with pytest.raises(solar.IRError, match="unknown verification status 'fine'"):
        _core.analyze(program, "H100-SXM", verification='{"status": "fine", "detail": ""}')


def test_totals_come_from_the_lift_alone():
    # the same counts as the report's totals, without an analysis
    t = _core.totals(MLP_IR.read_text())
    assert (t["nodes"], t["macs"], t["flops"], t["other_ops"]) == (4, 3072, 6432, 288)


def test_report_outputs_render_without_files(tmp_path):
    report = _core.analyze(MLP_IR.read_text(), "H100-SXM", source="mlp.ir")
    rows = list(csv.DictReader(report.render_output("csv").splitlines()))
    assert [r["name"] for r in rows] == ["fc1", "bias_relu", "fc2", "bias"]
    assert report.render_output("dot").startswith("digraph")
    paths = [("html", str(tmp_path / "r.html")), ("trace", str(tmp_path / "t.json"))]
    report.write(paths)
    assert (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>")
    trace = json.loads((tmp_path / "t.json").read_text())
    assert trace["otherData"]["verification"] == "not verified: IR file analysed directly"
    with pytest.raises(solar.IRError, match="unknown report output 'pdf'"):
        report.render_output("pdf")


UNSUPPORTED_MODEL = """
import torch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        return torch.digamma(self.fc(x).abs() + 1.0)


def get_inputs():
    return [torch.randn(2, 8)]


def get_init_inputs():
    return []
"""


def test_html_csv_and_trace_of_allow_unsupported_list_the_unsupported_ops(tmp_path, capsys):
    pytest.importorskip("torch")
    model = tmp_path / "digamma.py"
    model.write_text(UNSUPPORTED_MODEL)
    files = {k: tmp_path / f"r.{k}" for k in ("html", "csv", "trace", "json")}
    argv = ["analyze", str(model), "--allow-unsupported"]
    for kind, path in files.items():
        argv += [f"--{kind}", str(path)]
    assert cli.main(argv) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert out.startswith("UNSUPPORTED: 1 of ")
    for path in files.values():
        assert f"wrote {path}\n" in out
    (u,) = json.loads(files["json"].read_text())["coverage"]["unsupported_ops"]
    assert u["op"] == "aten.digamma.default"
    html = files["html"].read_text()
    assert "Unsupported operators" in html and "<td>aten.digamma.default</td>" in html
    rows = [r for r in csv.DictReader(files["csv"].open()) if r["kind"] == "unsupported"]
    assert [(r["name"], r["op"], r["macs"]) for r in rows] == [
        (u["node"], "aten.digamma.default", "")
    ]
    other = json.loads(files["trace"].read_text())["otherData"]
    assert other["unsupported_ops"] == [f"aten.digamma.default (node '{u['node']}'): {u['reason']}"]


def test_jax_and_torch_reports_have_one_verification_schema():
    pytest.importorskip("torch")
    pytest.importorskip("jax")
    from solar import jax as solar_jax

    torch_report = solar_torch.analyze_file(ROOT / "tests" / "python" / "models" / "mlp.py")
    jax_report = solar_jax.analyze_file(ROOT / "tests" / "python" / "jax_models" / "mlp.py")
    t, j = torch_report.data, jax_report.data
    assert sorted(t) == sorted(j)
    for section in ("capture", "coverage", "verification"):
        assert sorted(t[section]) == sorted(j[section]), section
    assert sorted(t["verification"]["outputs"][0]) == sorted(j["verification"]["outputs"][0])
    assert (t["capture"]["framework"], j["capture"]["framework"]) == ("torch", "jax")
    assert t["verification"]["status"] == j["verification"]["status"] == "passed"
    assert t["schema_version"] == j["schema_version"] == 2
