"""``solar sol --trace/--csv/--dot`` (docs/report.md, "HTML, trace, CSV, DOT"): each file holds
every node of the report, written only when the analysis succeeds."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from solar.ir import run_cli_captured

ROOT = Path(__file__).resolve().parents[2]


def test_trace_csv_and_dot_hold_every_node(tmp_path):
    files = {ext: tmp_path / f"mlp.{ext}" for ext in ("json", "trace", "csv", "dot")}
    rc, out, err = run_cli_captured(
        ["sol", str(ROOT / "examples" / "mlp.ir"), "--hw", "H100-SXM"]
        + ["--json", str(files["json"]), "--trace", str(files["trace"])]
        + ["--csv", str(files["csv"]), "--dot", str(files["dot"])]
    )
    assert rc == 0, err
    for ext in ("trace", "csv", "dot"):
        assert f"wrote {files[ext]}\n" in out
    report = json.loads(files["json"].read_text())
    names = [n["name"] for n in report["nodes"]]
    assert names == ["fc1", "bias_relu", "fc2", "bias"]  # examples/mlp.ir's kernels, in order

    events = json.loads(files["trace"].read_text())["traceEvents"]
    spans = [e for e in events if e["ph"] == "X"]
    assert [e["name"] for e in spans] == names
    # Back to back, in program order: each starts where the previous ended; the last ends at
    # the unfused SOL (5,920 bytes / 3.35e12 B/s = 1.767 ns = 0.001767 us). Bytes per kernel
    # (f32, 4 bytes): fc1 x 4*16*4 = 256 + w1 16*32*4 = 2,048 + z 4*32*4 = 512 -> 2,816;
    # bias_relu z 512 + b1 32*4 = 128 + a 512 -> 1,152; fc2 1,664 (below); bias u 128 + b2 32
    # + y 128 -> 288; 2,816 + 1,152 + 1,664 + 288 = 5,920.
    for a, b in zip(spans, spans[1:], strict=False):
        assert b["ts"] == a["ts"] + a["dur"]
    assert abs(spans[-1]["ts"] + spans[-1]["dur"] - 5920 / 3.35e12 * 1e6) < 1e-15

    rows = list(csv.DictReader(files["csv"].open()))
    assert [r["name"] for r in rows] == names
    # fc2: 4 x 8 x 32 = 1,024 MACs; reads a 4*32*4 = 512 + w2 32*8*4 = 1,024 bytes, writes u
    # 4*8*4 = 128: 1,664 bytes.
    assert (rows[2]["macs"], rows[2]["bytes_unfused"]) == ("1024", "1664")

    dot = files["dot"].read_text()
    assert dot.startswith("digraph")
    for name in names:
        assert name in dot


def test_nothing_is_written_when_the_analysis_fails(tmp_path):
    html = tmp_path / "x.html"
    rc, _, err = run_cli_captured(
        ["sol", str(ROOT / "examples" / "mlp.ir"), "--hw", "NoSuchDevice", "--html", str(html)]
    )
    assert rc == 1 and "NoSuchDevice" in err
    assert not html.exists()
