"""``solar bench --isolation fork|process`` (docs/cli.md, "solar bench"): a warm parent that
forks a child per problem gives the same files, byte for byte, as a new Python per problem; a
crash (``os._exit``, a segfault) or a hang (``--timeout-s``) ends its own problem only; the run
reports its wall time. The suites run as ``python -m solar bench``, as on the command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from test_bench_stages import MATMUL_MODEL as MATMUL  # noqa: E402
from test_bench_stages import RELU_MODEL as RELU  # noqa: E402

from solar.suites import _child  # noqa: E402

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork on this system")

CONV = """import torch


class Model(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = torch.nn.Conv2d(c, 4, 3, padding=1)

    def forward(self, x):
        return torch.sigmoid(self.conv(x))


def get_inputs():
    return [torch.randn(2, 3, 8, 8)]


def get_init_inputs():
    return [3]
"""

EXITS = "import os\n\nos._exit(3)\n"  # no report, exit code 3: crashed
SEGFAULT = "import ctypes\n\nctypes.string_at(0)\n"  # a read of address 0: SIGSEGV
HANGS = "import time\n\ntime.sleep(600)\n"  # killed at --timeout-s


def bench(suite: Path, out: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "solar", "bench", str(suite), "--hw", "H100-SXM"]
    cmd += ["--out", str(out), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


def write_suite(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_fork_and_process_write_the_same_bytes(tmp_path):
    suite = write_suite(
        tmp_path / "suite",
        {"level1/relu.py": RELU, "level1/matmul.py": MATMUL, "level2/conv.py": CONV},
    )
    runs = {}
    for isolation in ("process", "fork"):
        out = tmp_path / isolation
        done = bench(suite, out, "--jobs", "2", "--isolation", isolation)
        assert done.returncode == 0, done.stderr
        runs[isolation] = out
        # The run's wall time: printed, and in the all row of stages.json with what ran.
        assert f"--isolation {isolation}" in done.stdout
        *problems, totals = json.loads((out / "stages.json").read_text())
        assert (totals["run"], totals["jobs"], totals["isolation"]) == (3, 2, isolation)
        # The suite cannot take less than its longest problem, nor than the imports it made
        # before the first one (none in a process run: each child imports for itself).
        assert totals["wall_s"] >= max(p["total_s"] for p in problems) > 0
        assert 0 <= totals["preload_s"] <= totals["wall_s"]
        assert (totals["preload_s"] == 0) == (isolation == "process")
        # Each child's CPU seconds (os.wait4's, of the fork or the new process): some were spent
        # (each imported the model file and ran torch.export), and the all row sums them.
        assert all(p["cpu_s"] > 0 for p in problems), problems
        assert totals["cpu_s"] == pytest.approx(sum(p["cpu_s"] for p in problems))
    for name in ("problems.json", "problems.csv", "summary.json", "summary.csv"):
        assert (runs["fork"] / name).read_bytes() == (runs["process"] / name).read_bytes(), name
    records = json.loads((runs["fork"] / "problems.json").read_text())
    assert [r["status"] for r in records] == ["ok", "ok", "ok"]
    # Each problem's own file too, but for its times (measurements:
    # solar.suites.bench.TIMING_FIELDS).
    for rel in ("level1/relu", "level1/matmul", "level2/conv"):
        a, b = (json.loads((runs[k] / "problems" / f"{rel}.json").read_text()) for k in runs)
        for r in (a, b):
            r.pop("total_s"), r.pop("cpu_s"), r.pop("stages_s")
        assert a == b, rel


def test_a_crash_or_a_hang_ends_its_own_problem_only(tmp_path):
    suite = write_suite(
        tmp_path / "suite",
        {"a_ok.py": RELU, "b_exits.py": EXITS, "c_segfault.py": SEGFAULT, "d_hangs.py": HANGS},
    )
    out = tmp_path / "out"
    done = bench(suite, out, "--jobs", "2", "--isolation", "fork", "--timeout-s", "20")
    assert done.returncode == 0, done.stderr
    records = {r["path"]: r for r in json.loads((out / "problems.json").read_text())}
    assert records["a_ok.py"]["status"] == "ok"
    assert records["a_ok.py"]["verification"] == "passed"
    assert records["b_exits.py"]["error"] == "solar analyze exited 3"
    assert records["c_segfault.py"]["error"] == "solar analyze was killed by signal 11"
    assert records["d_hangs.py"]["error"] == "timed out after 20 s"
    assert all(records[p]["status"] == "failed" for p in records if p != "a_ok.py")
    s = json.loads((out / "summary.json").read_text())
    assert (s["."]["problems"], s["."]["analysed"], s["."]["failed"]) == (4, 1, 3)


def test_run_children_statuses_in_this_process(tmp_path):
    # The runner alone, in this test process (which has run torch operations and may run other
    # threads: the fork server, a new Python, forks the children): a crash, a segfault, a hang
    # and a failure as the user's error (exit code 1, its last line on stderr).
    with pytest.raises(ValueError, match="unknown isolation 'thread'"):
        _child.run_children([], 1, "thread")
    files = {"exits.py": EXITS, "segfault.py": SEGFAULT, "hangs.py": HANGS}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "broken.py").write_text("raise RuntimeError('this problem is broken')\n")
    names = ["exits.py", "segfault.py", "hangs.py", "broken.py"]
    requests = [
        _child.Request("analyze", str(tmp_path / n), ("--hw", "H100-SXM"), 10.0, True)
        for n in names
    ]
    order: list[int] = []
    server = _child.ForkServer(["torch"])
    try:
        results = _child.run_children(requests, 2, "fork", lambda i, _r: order.append(i), server)
    finally:
        server.close()
    assert sorted(order) == [0, 1, 2, 3]
    statuses = [(r["status"], r["returncode"]) for r in results]
    assert statuses == [("crashed", 3), ("crashed", -11), ("timeout", None), ("failed", 1)]
    assert "this problem is broken" in results[3]["error"]
    assert results[2]["total_s"] >= 10.0  # killed after its 10 s, not before
    assert results[3]["stages_s"] is not None  # written also when the analysis fails


def test_every_module_the_fork_server_preloads_exists():
    """``preload`` skips a framework whose imports fail (it may not be installed), so a module
    renamed away would silently turn the warm parent cold: each of torch's names must import."""
    import importlib

    from solar.adapters import PRELOAD

    for name in PRELOAD["torch"]:
        importlib.import_module(name)  # ModuleNotFoundError names a stale entry


def test_the_fork_server_preloads_ml_dtypes_when_installed():
    """``solar.ir.run`` imports ml_dtypes on its first call; the fork server imports it once,
    so that a child does not (5.1 s of import on the loaded development machine)."""
    pytest.importorskip("ml_dtypes")
    code = (
        "import sys; from solar.adapters import preload; preload(['torch']); "
        "print('ml_dtypes' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
