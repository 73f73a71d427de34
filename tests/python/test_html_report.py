"""The HTML report loaded in headless Chromium (Debian's ``chromium``, installed by
scripts/install-deps.sh): after its script ran, the roofline has one point per node with
arithmetic, one roof per rate and one marker per fidelity; the node table has every node, sorted
by SOL time; the fidelity cards show the report's SOL times. Content, not existence.

And the page as a person reads it, at 1,400 px wide (Playwright's Python package driving the
same chromium; nothing downloaded, never ``playwright install``): no two texts of a plot
overlap, nor a text and the legend; no number in a table breaks across lines; a screenshot of
the whole page is kept under build/test-artifacts/ to look at."""

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
QUICK_START = ROOT / "examples" / "studies" / "models" / "transformer_block.py"  # README
ARTIFACTS = ROOT / "build" / "test-artifacts"


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


# What the page is checked for, in the browser, after its script ran (layout, not markup):
# - every pair of <text> in a plot, by their rendered boxes (getBoundingClientRect, so that a
#   rotated axis title counts as drawn), and every text outside a legend against the legend's
#   box (a `legend` element: its box, or the union of its entries' boxes);
# - every table cell that holds a number ("67.17 M", "537.4 MB", "1.767 ns", "565.9x",
#   "12.5%"): the line boxes of its text (Range.getClientRects) all on one line.
# Boxes that share less than TOLERANCE px either way touch, they do not overlap.
LAYOUT = r"""
(tolerance) => {
  const NUMBER = /^[-+]?\d[\d.,]*(e[-+]?\d+)?( ?[A-Za-z%/]+)?$/;
  const own = (t) => Array.from(t.childNodes).filter((n) => n.nodeType === Node.TEXT_NODE)
      .map((n) => n.data).join('').trim();
  const overlap = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > tolerance &&
      Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > tolerance;
  const union = (rs) => ({left: Math.min(...rs.map((r) => r.left)),
      right: Math.max(...rs.map((r) => r.right)), top: Math.min(...rs.map((r) => r.top)),
      bottom: Math.max(...rs.map((r) => r.bottom))});
  const out = {plots: 0, texts: 0, overlaps: [], numbers: 0, wrapped: [],
               width: document.documentElement.scrollWidth};
  for (const svg of document.querySelectorAll('svg')) {
    out.plots += 1;
    const texts = Array.from(svg.querySelectorAll('text'))
        .map((t) => ({name: JSON.stringify(own(t)), r: t.getBoundingClientRect(), el: t}))
        .filter((t) => t.r.width > 0 && t.r.height > 0);
    out.texts += texts.length;
    for (let i = 0; i < texts.length; ++i)
      for (let j = i + 1; j < texts.length; ++j)
        if (overlap(texts[i].r, texts[j].r))
          out.overlaps.push(svg.id + ': ' + texts[i].name + ' and ' + texts[j].name);
    const legends = Array.from(svg.querySelectorAll('.legend, [class*="legend"]'))
        .filter((e) => !e.parentElement.closest('.legend'));
    const entries = (l) => l.tagName === 'text' ? [l] : Array.from(l.querySelectorAll('text'));
    const inLegend = new Set(legends.flatMap(entries));
    if (legends.length) {
      const box = union(legends.map((l) => l.getBoundingClientRect()));
      for (const t of texts)
        if (!inLegend.has(t.el) && overlap(t.r, box))
          out.overlaps.push(svg.id + ': ' + t.name + ' and the legend');
    }
  }
  for (const td of document.querySelectorAll('td')) {
    const text = td.textContent.trim();
    if (!NUMBER.test(text)) continue;
    out.numbers += 1;
    const range = document.createRange();
    range.selectNodeContents(td);
    const lines = new Set(Array.from(range.getClientRects()).filter((r) => r.width > 0)
        .map((r) => Math.round(r.top)));
    if (lines.size > 1) {
      const table = td.closest('table');
      out.wrapped.push((table && table.id) + ': ' + JSON.stringify(text) + ' on ' +
                       lines.size + ' lines');
    }
  }
  return out;
}
"""


def playwright():
    """Playwright's sync API, or a failure saying what to install."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail(
            "playwright is not installed: pip install 'playwright==1.65.3' (the test extras; "
            "it drives Debian's chromium, never run `playwright install`)"
        )
    return sync_playwright


def page_layout(html: Path, screenshot: Path) -> dict:
    """LAYOUT's findings on `html` in chromium at 1,400 px wide; a full-page screenshot."""
    with playwright()() as p:
        browser = p.chromium.launch(
            executable_path=chromium(),
            args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
        )
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(html.as_uri())
            page.wait_for_load_state("load")
            found = page.evaluate(LAYOUT, 0.5)
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(screenshot), full_page=True)
        finally:
            browser.close()
    print(f"screenshot: {screenshot}")
    return found


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("quickstart", [str(QUICK_START)]),  # the README's quick start, with --html
        ("serve-decode", [str(MODELS / "serve" / "llama_gqa.py"), "--serve", "decode"]),
    ],
)
def test_html_report_reads_in_a_browser_at_1400px(tmp_path, name, args):
    html = tmp_path / f"{name}.html"
    assert cli.main(["analyze", *args, "--html", str(html)]) == 0
    found = page_layout(html, ARTIFACTS / f"html-report-{name}.png")
    # The checks looked at something: the roofline's texts, the node table's numbers.
    assert found["plots"] >= 1
    assert found["texts"] >= 10
    assert found["numbers"] >= 50
    overlaps, wrapped = found["overlaps"], found["wrapped"]
    assert not overlaps, f"{len(overlaps)} overlapping plot texts:\n" + "\n".join(overlaps)
    assert not wrapped, f"{len(wrapped)} numbers broken across lines:\n" + "\n".join(wrapped[:20])
    assert found["width"] <= 1400, "the page scrolls sideways at 1,400 px"
