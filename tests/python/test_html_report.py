"""The HTML report loaded in headless Chromium (Debian's ``chromium``, installed by
scripts/install-deps.sh): after its script ran, the roofline has one point per node with
arithmetic, one roof per rate and one marker per fidelity; the node table has every node, sorted
by SOL time; the fidelity cards show the report's SOL times. Content, not existence."""

from __future__ import annotations

import json
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from solar import cli

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "tests" / "python" / "models"


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    pytest.fail("chromium is not installed (scripts/install-deps.sh installs it)")


def dump_dom(path: Path) -> str:
    """The DOM after the page's scripts ran, as headless Chromium serialises it."""
    r = subprocess.run(
        [
            chromium(),
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--disable-dev-shm-usage",
            "--virtual-time-budget=5000",
            "--dump-dom",
            path.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert "<html" in r.stdout, r.stderr[-2000:]
    return r.stdout


class Elements(HTMLParser):
    """Every start tag with its attributes, and the text of each table cell, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.rows: dict[str, list[list[str]]] = {}
        self._table: list[str] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if tag == "table":
            self._table.append(a.get("id", ""))
        elif tag == "tr" and self._table:
            self.rows.setdefault(self._table[-1], []).append([])
        elif tag == "td" and self._table:
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "table" and self._table:
            self._table.pop()
        elif tag == "td" and self._cell is not None:
            self.rows[self._table[-1]][-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)

    def find(self, tag: str, cls: str | None = None) -> list[dict]:
        return [
            a
            for t, a in self.tags
            if t == tag and (cls is None or cls in a.get("class", "").split())
        ]


def format_seconds(s: float) -> str:
    """The report's unit scaling (src/report/format.cpp), written again: 4 significant digits."""
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns"), (1e-12, "ps")):
        if abs(s) >= scale or unit == "ps":
            return f"{s / scale:.4g} {unit}"
    raise AssertionError


def test_html_report_renders_in_chromium(tmp_path):
    html = tmp_path / "mlp.html"
    report_path = tmp_path / "mlp.json"
    rc = cli.main(
        [
            "analyze",
            str(MODELS / "mlp.py"),
            "--hw",
            "H100-SXM",
            "--json",
            str(report_path),
            "--html",
            str(html),
            "--measured-ms",
            "0.05",
        ]
    )
    assert rc == 0
    report = json.loads(report_path.read_text())
    text = html.read_text()
    assert "http://" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in text

    dom = Elements()
    dom.feed(dump_dom(html))
    svg = dom.find("svg")
    assert [a.get("id") for a in svg] == ["roofline-plot"]

    # One point per node that has FLOPs and bytes (the MLP's nodes all do: two matmuls, the
    # bias adds and the relu), one roof per distinct rate, one diamond per fidelity.
    nodes = report["nodes"]
    plottable = [n["name"] for n in nodes if n["flops"] > 0 and n["bytes_unfused"] > 0]
    assert len(plottable) == len(nodes)
    assert [a["data-node"] for a in dom.find("circle", "node")] == plottable
    rates = {(n["precision"], n["rate_flops_per_s"]) for n in nodes if n["rate_flops_per_s"]}
    roofs = dom.find("polyline", "roof")
    assert len(roofs) == len(rates)
    assert {(a["data-precision"], float(a["data-rate"])) for a in roofs} == rates
    fidelities = [m["data-fidelity"] for m in dom.find("path", "fidelity-marker")]
    assert fidelities[:2] == ["unfused", "fused"]
    assert sorted(fidelities) == sorted(report["bytes"])

    # The fidelity cards carry the report's SOL times, side by side.
    cards = dom.find("div", "card")
    assert [c["data-fidelity"] for c in cards] == fidelities
    for c in cards:
        assert float(c["data-sol-s"]) == report["sol"][c["data-fidelity"] + "_s"]

    # The node table: every node once; the script sorted it by SOL time, slowest first.
    table = [a for t, a in dom.tags if t == "table" and a.get("id") == "node-table"][0]
    assert table.get("data-sort-key") == "sol_unfused_s"  # set by the script only
    assert table.get("data-sort-order") == "descending"
    rows = dom.rows["node-table"][1:]  # the header row has no cells
    assert len(rows) == len(nodes)
    by_time = sorted(nodes, key=lambda n: -n["sol_unfused_s"])
    assert [r[0] for r in rows] == [n["name"] for n in by_time]
    assert [r[10] for r in rows] == [format_seconds(n["sol_unfused_s"]) for n in by_time]

    # Headroom: 0.05 ms / SOL per fidelity, in its table with the what-if note absent (no
    # --measured-on: assumed measured on the target).
    head = dom.rows["headroom-table"][1:]
    assert [r[0] for r in head] == fidelities
    for r in head:
        expected = (0.05 / 1e3) / report["sol"][r[0] + "_s"]
        # four significant digits; whole numbers from 10,000 up (report::format_ratio)
        assert r[2] == (f"{expected:.0f}x" if expected >= 1e4 else f"{expected:.4g}x")
    assert "assumes it was H100-SXM" in text

    # Cross-platform: the target and every other built-in device; inverse roofline per fidelity.
    devices = dom.rows["device-table"][1:]
    assert devices[0][0] == "H100-SXM"
    builtin = [p.stem for p in (ROOT / "data" / "hardware").glob("*.yaml")]  # docs/devices.md
    assert sorted(r[0] for r in devices) == sorted(builtin)
    # Inverse roofline: one row per device and fidelity it has a time for (a device without a
    # rate for some node's work has one row, "not analysed"; one without an on-chip level has
    # no cache-aware time).
    prov = dom.rows["provision-table"][1:]
    expected = 0
    for r in devices:
        times = [c for c in r[1 : 1 + len(fidelities)] if c != "n/a"]
        expected += len(times) if times else 1
        assert [p[1] for p in prov if p[0] == r[0]] == (
            [f for f, c in zip(fidelities, r[1:], strict=False) if c != "n/a"] if times else ["-"]
        )
    assert len(prov) == expected
