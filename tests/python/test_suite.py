"""``solar bench`` (docs/calibrate.md, "Suites"): a two-level suite with one failing problem and
a timings file; per-problem records, the per-level summary checked against numbers recomputed
here from the records, and a second run that redoes nothing."""

from __future__ import annotations

import csv
import json
import math
import os
import shutil
from pathlib import Path

from solar.suites import bench as suite

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "tests" / "python" / "models"


def make_suite(root: Path) -> Path:
    d = root / "suite"
    (d / "level1").mkdir(parents=True)
    (d / "level2").mkdir()
    shutil.copy(MODELS / "mlp.py", d / "level1" / "1_mlp.py")
    shutil.copy(MODELS / "cnn.py", d / "level1" / "2_cnn.py")
    shutil.copy(MODELS / "mlp.py", d / "level2" / "1_mlp_again.py")
    (d / "level2" / "2_broken.py").write_text("raise RuntimeError('this problem is broken')\n")
    return d


def test_suite_two_levels_failure_timings_resume(tmp_path, capsys):
    d = make_suite(tmp_path)
    timings = tmp_path / "times.json"
    # 1_mlp: 0.5 ms, 2_cnn: 2 ms, level2's mlp: 0.25 ms, the broken one: 1 ms (never analysed).
    timings.write_text(
        json.dumps(
            {
                "level1": {"1_mlp.py": {"mean": 0.5, "std": 0.1}, "2_cnn.py": {"mean": 2.0}},
                "level2": {"1_mlp_again.py": {"mean": 0.25}, "2_broken.py": {"mean": 1.0}},
            }
        )
    )
    out = tmp_path / "results"
    args = [str(d), "--hw", "H100-SXM", "--timings", str(timings), "--jobs", "2"]
    assert suite.main([*args, "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "4/4" in captured.err  # the progress bar reached the end

    records = {r["path"]: r for r in json.loads((out / "problems.json").read_text())}
    assert sorted(records) == [
        "level1/1_mlp.py",
        "level1/2_cnn.py",
        "level2/1_mlp_again.py",
        "level2/2_broken.py",
    ]
    broken = records["level2/2_broken.py"]
    assert broken["status"] == "failed"
    assert "this problem is broken" in broken["error"]
    for path, ms in (("level1/1_mlp.py", 0.5), ("level1/2_cnn.py", 2.0)):
        r = records[path]
        assert r["status"] == "ok" and r["verification"] == "passed"
        assert r["measured_ms"] == ms
        for f, t in r["sol_s"].items():
            assert r["headroom"][f] == (ms / 1e3) / t
        assert r["violation"] is False
        assert r["macs"] > 0 and r["nodes"] > 0
    # The same model, times 0.5 and 0.25 ms: headroom halves.
    a, b = records["level1/1_mlp.py"], records["level2/1_mlp_again.py"]
    assert a["sol_s"] == b["sol_s"]
    assert math.isclose(b["headroom"]["fused"], a["headroom"]["fused"] / 2, rel_tol=1e-15)

    s = json.loads((out / "summary.json").read_text())
    # level1: 2 problems, both analysed and timed. geomean of two = sqrt(h1 * h2); median of two
    # = their mean.
    h1 = records["level1/1_mlp.py"]["headroom"]
    h2 = records["level1/2_cnn.py"]["headroom"]
    l1 = s["level1"]
    assert (l1["problems"], l1["analysed"], l1["failed"], l1["timed"], l1["violations"]) == (
        2,
        2,
        0,
        2,
        0,
    )
    for f in h1:
        assert math.isclose(l1["geomean_headroom"][f], math.sqrt(h1[f] * h2[f]), rel_tol=1e-12)
        assert math.isclose(l1["median_headroom"][f], (h1[f] + h2[f]) / 2, rel_tol=1e-12)
    # level2: 2 problems, 1 analysed, 1 failed; one timed: geomean = median = its headroom.
    l2 = s["level2"]
    assert (l2["problems"], l2["analysed"], l2["failed"], l2["timed"]) == (2, 1, 1, 1)
    hb = records["level2/1_mlp_again.py"]["headroom"]
    for f in hb:
        assert math.isclose(l2["geomean_headroom"][f], hb[f], rel_tol=1e-12)
        assert l2["median_headroom"][f] == hb[f]
    # all: 4 problems, 3 analysed; median of three = the middle one.
    al = s["all"]
    assert (al["problems"], al["analysed"], al["failed"], al["timed"]) == (4, 3, 1, 3)
    for f in h1:
        assert al["median_headroom"][f] == sorted([h1[f], h2[f], hb[f]])[1]

    rows = list(csv.DictReader((out / "problems.csv").open()))
    assert [r["path"] for r in rows] == sorted(records)
    assert rows[3]["status"] == "failed"
    summary_rows = {r["level"]: r for r in csv.DictReader((out / "summary.csv").open())}
    assert summary_rows["level2"]["failed"] == "1"

    # Resume: every problem is finished (the failure too), so nothing is redone: the result
    # files keep their modification times and the outputs are the same bytes.
    stamps = {p: os.stat(p).st_mtime_ns for p in (out / "problems").rglob("*.json")}
    before = (out / "problems.json").read_bytes(), (out / "summary.json").read_bytes()
    assert suite.main([*args, "--out", str(out)]) == 0
    assert "4 problem(s) already done, 0 to run" in capsys.readouterr().err
    assert {p: os.stat(p).st_mtime_ns for p in (out / "problems").rglob("*.json")} == stamps
    assert ((out / "problems.json").read_bytes(), (out / "summary.json").read_bytes()) == before

    # An interrupted run: delete one result, and only that problem runs again.
    os.remove(out / "problems" / "level1" / "2_cnn.json")
    assert suite.main([*args, "--out", str(out)]) == 0
    assert "3 problem(s) already done, 1 to run" in capsys.readouterr().err
    assert (out / "problems.json").read_bytes() == before[0]


def test_bad_suite_arguments_are_one_line_errors(tmp_path, capsys):
    assert suite.main([str(tmp_path / "nope"), "--hw", "H100-SXM", "--out", str(tmp_path)]) == 1
    assert capsys.readouterr().err.strip().endswith("nope: not a folder")
    (tmp_path / "empty").mkdir()
    assert suite.main([str(tmp_path / "empty"), "--hw", "H100-SXM", "--out", str(tmp_path)]) == 1
