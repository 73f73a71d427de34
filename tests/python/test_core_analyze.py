"""``solar._core.analyze``: the analysis bound directly (no command line, no files), its report's
outputs, and the report sections every frontend fills with one schema (docs/report.md)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

import solar
from solar import _core, cli
from solar import torch as solar_torch
from solar.ir import run_cli_captured

ROOT = Path(__file__).resolve().parents[2]
MLP_IR = ROOT / "examples" / "mlp.ir"


def test_analyze_gives_the_numbers_of_solar_sol_json(tmp_path):
    out = tmp_path / "r.json"
    rc, _, err = run_cli_captured(
        ["sol", str(MLP_IR), "--hw", "H100-SXM", "--capacity", "64KiB", "--json", str(out)]
    )
    assert rc == 0, err
    report = _core.analyze(
        MLP_IR.read_text(),
        "H100-SXM",
        _core.AnalysisOptions(capacity="64KiB"),
        _core.Provenance(source="mlp.ir"),
    )
    assert report.to_json() == out.read_text()  # byte for byte
    data = json.loads(report.to_json())
    # examples/mlp.ir: 4*16*32 + 4*32*8 = 3072 MACs, 6432 FLOPs (tests/report/test_report.cpp)
    assert (data["totals"]["macs"], data["totals"]["flops"]) == (3072, 6432)
    assert data["verification"]["status"] == "not_verified"
    assert data["capture"]["framework"] == "ir"
    assert "\n  not verified: IR file analysed directly\n" in report.render()


def test_analyze_takes_a_parsed_program_and_reports_errors_as_irerror():
    program = solar.parse(MLP_IR.read_text())
    fused = _core.AnalysisOptions(fidelity="fused")
    data = json.loads(_core.analyze(program, "H100-SXM", fused).to_json())
    assert sorted(data["bytes"]) == ["fused"]
    with pytest.raises(solar.IRError, match="unknown device 'nope'"):
        _core.analyze(program, "nope")
    with pytest.raises(solar.IRError, match="unknown verification status 'fine'"):
        _core.Provenance(verification='{"status": "fine", "detail": ""}')


def test_totals_come_from_the_lift_alone():
    # the same counts as the report's totals, without an analysis
    t = _core.totals(MLP_IR.read_text())
    assert (t["nodes"], t["macs"], t["flops"], t["other_ops"]) == (4, 3072, 6432, 288)


def test_report_outputs_render_without_files(tmp_path):
    report = _core.analyze(
        MLP_IR.read_text(), "H100-SXM", provenance=_core.Provenance(source="mlp.ir")
    )
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


LINEAR_RELU = ROOT / "tests" / "frontend" / "data" / "linear_relu.json"


def test_analysis_options_and_provenance_are_read_only_objects():
    options = _core.AnalysisOptions(fidelity="fused", cache_state="warm", measured_ms=2.0)
    # given values kept, the others at solar sol's defaults
    assert (options.fidelity, options.cache_state, options.measured_ms) == ("fused", "warm", 2.0)
    assert (options.level, options.routing, options.kernel_floor, options.top) == (
        "L2",
        "concentrated",
        "on",  # the kernel floor, on by default (docs/cache-state.md)
        10,
    )
    with pytest.raises(AttributeError):
        options.fidelity = "unfused"
    origin = _core.Provenance(source="dir/m.py", agent=[{"scope": "program", "name": "m"}])
    assert json.loads(origin.agent) == [{"scope": "program", "name": "m"}]
    # no capture section given: an IR file's, its source the name without directories
    capture = json.loads(origin.capture)
    assert (capture["framework"], capture["source"]) == ("ir", "m.py")
    assert json.loads(origin.coverage) is None
    with pytest.raises(AttributeError):
        origin.source = "other.py"


def test_the_lowering_result_is_an_object_with_its_coverage():
    lowered = _core.lower_capture_detailed(
        LINEAR_RELU.read_text(), True, ["aten.relu.default"], "linear_relu.json"
    )
    assert isinstance(lowered.program, solar.Program)
    assert [u["node"] for u in lowered.unsupported] == ["relu"]
    # nodes t (f32[3, 4]: 48 B), addmm (f32[2, 4]: 32 B), relu (f32[2, 4]: 32 B): 112 B in all;
    # relu without its rule: 1 of 3 nodes, 32 of 112 B
    assert (lowered.nodes, lowered.lowered, lowered.node_output_bytes) == (3, 2, 112)
    c = lowered.coverage
    assert (c["nodes"], c["lowered"], c["unsupported_bytes"]) == (3, 2, 32)
    assert c["share_nodes"] == 1 / 3 and c["share_bytes"] == 32 / 112
    assert [u["op"] for u in c["unsupported_ops"]] == ["aten.relu.default"]
    assert "index" not in c["unsupported_ops"][0]  # the report's keys only
    with pytest.raises(AttributeError):
        lowered.ir = ""
    # analysed as a lowering result or as its program: the same report
    by_result = _core.analyze(lowered, "H100-SXM").to_json()
    assert by_result == _core.analyze(lowered.program, "H100-SXM").to_json()


def test_options_build_the_engine_options_once():
    from solar.options import Options

    opts = Options.of(hw="B200", fidelity="fused", cache_state="warm", routing="concentrated")
    core = opts.analysis.core("jax-default")  # no policy given: the adapter's default
    assert (core.policy, core.fidelity, core.cache_state, core.routing) == (
        "jax-default",
        "fused",
        "warm",
        "concentrated",
    )
    assert Options.of(policy="pytorch-cuda-default").analysis.core("jax-default").policy == (
        "pytorch-cuda-default"
    )
    assert Options().analysis.core().policy == ""  # the engine's default


def test_the_analysis_bindings_include_no_command_line_header():
    # the seam (docs/architecture.md): the analysis and lowering bindings call the report and
    # frontend modules; only the command line's own binding (cli.cpp) reaches src/cli
    for name in ("analysis.cpp", "frontend.cpp"):
        text = (ROOT / "python" / "bindings" / name).read_text()
        assert '#include "solar/cli/' not in text, name
    assert '#include "solar/cli/' in (ROOT / "python" / "bindings" / "cli.cpp").read_text()
