"""bench/gpu_validate.py (issues 12 and 40): the checks, the device pick, the statistics and the
formatting on hand-made numbers; ``time`` on the CPU (no GPU here) over tiny model files and the
tiny serving decoder, in a Python where importing SOLAR (or yaml) fails, checking the files'
layout; the budgets; and ``compare`` on timings written by hand (numbers checked by hand) and on
``time``'s own files. The GPU path (CUDA events, the L2 flush of a GPU, torch.compile and the
precompile processes on CUDA) is not run by these tests."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "gpu_validate.py"

MODEL = '''"""{doc}"""

import time

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        time.sleep({sleep})

    def forward(self, *xs):
        return {expr}


def get_inputs():
    return [{inputs}]


def get_init_inputs():
    return []
'''


def model(expr: str, inputs: str, sleep: float = 0) -> str:
    return MODEL.format(doc=expr, expr=expr, inputs=inputs, sleep=sleep)


MATMUL = model("xs[0] @ xs[1]", "torch.randn(64, 64), torch.randn(64, 64)")
RELU = model("torch.relu(xs[0])", "torch.randn(64, 64)")
BROKEN = model("xs[0] @ xs[0]", "torch.randn(3, 4)")  # 3x4 @ 3x4: fails when run
SLOW = model("xs[0] + 1", "torch.randn(8)", sleep=30)  # its build outlasts any budget here

# Runs a script with a meta-path finder in front that refuses solar and yaml, and records every
# attempt, so that an import caught by a try is seen too.
BLOCKER = """\
import json, runpy, sys
tried = []
class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("solar", "yaml"):
            tried.append(name)
            raise ImportError(f"blocked by the test: {name}")
        return None
sys.meta_path.insert(0, Blocker())
record, script = sys.argv[1], sys.argv[2]
sys.argv = sys.argv[2:]
try:
    runpy.run_path(script, run_name="__main__")
finally:
    with open(record, "w") as f:
        json.dump(tried, f)
"""


def load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gv = load("gpu_validate", SCRIPT)
gt = load("gpu_time_for_tests", ROOT / "bench" / "gpu_time.py")
MS = 1e-3


def script(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout
    )


def blocked(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, list]:
    """Runs the script with solar and yaml not importable: the result and the imports tried."""
    wrapper, record = tmp_path / "blocker.py", tmp_path / "tried.json"
    wrapper.write_text(BLOCKER)
    cmd = [sys.executable, str(wrapper), str(record), str(SCRIPT), *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    return done, json.loads(record.read_text())


def folder(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


# ---------------------------------------------------------------------------------------------
# Pure functions.


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


def test_records_from_timing_entries_and_summary():
    sol = {"unfused": 2.0 * MS, "fused": 0.5 * MS, "cache_aware": 0.6 * MS}
    # entries in the files' milliseconds: eager min 1 ms (median 3 ms), compile min 0.4 ms
    eager = {"status": "ok", "min": 1.0, "median": 3.0}
    comp = {"status": "ok", "min": 0.4, "median": 0.45}
    row = gv.record("a.py", {"sol_s": sol}, {"eager": eager, "compile": comp}, "min")
    assert row["measured_s"] == pytest.approx({"eager": 1.0 * MS, "compile": 0.4 * MS})
    assert row["ratios"]["eager/unfused"] == pytest.approx(0.5)  # 1 ms / 2 ms
    assert row["ratios"]["compile/fused"] == pytest.approx(0.8)  # 0.4 ms / 0.5 ms
    assert len(row["violations"]) == 3
    # the median: eager 3 ms is above the unfused 2 ms, compile 0.45 still below fused 0.5
    by_median = gv.record("a.py", {"sol_s": sol}, {"eager": eager, "compile": comp}, "median")
    assert [(v["fidelity"], v["timing"]) for v in by_median["violations"]] == [
        ("fused", "compile"),
        ("cache_aware", "compile"),
    ]
    failed = {"status": "failed", "error": "boom"}
    clean = gv.record(
        "b.py", {"sol_s": sol}, {"eager": {**eager, "min": 9.0}, "compile": failed}, "min"
    )
    assert clean["measured_s"] == {"eager": pytest.approx(9 * MS), "compile": None}
    s = gv.summary([row, clean])
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


def test_statistics_and_trials_hand_made():
    # runs of 1, 2, 3 and 4 ms: mean 2.5, median 2.5, population std sqrt(1.25) = 1.118
    s = gt.stats_ms([1e-3, 2e-3, 3e-3, 4e-3])
    assert s == pytest.approx(
        {"status": "ok", "mean": 2.5, "std": 1.25**0.5, "min": 1.0, "max": 4.0, "median": 2.5,
         "num_trials": 4}
    )  # fmt: skip
    # a cold and a warm run of 10 ms plus a 1 ms flush: 21 ms a pair; 90% of 1 s is 900 ms: 42
    assert gt.trials(50, 0.010, 0.001, 1.0) == 42
    assert gt.trials(50, 0.001, 0.0, 100.0) == 50  # at most --iters
    assert gt.trials(50, 1.0, 0.0, 1.0) == 0


def test_serving_steps_and_decoder_copy():
    steps = gt.parse_steps("decode:1:1024, prefill:8:2048,decode:1:1024")
    assert [s["name"] for s in steps] == ["decode_b1_t1024", "prefill_b8_t2048"]
    assert steps[1] == {"phase": "prefill", "batch": 8, "context": 2048, "name": "prefill_b8_t2048"}
    assert gt.parse_steps("none") == []
    for bad in ("decode:0:10", "serve:1:10", "decode:1", "decode:1:x"):
        with pytest.raises(gt.UsageError, match="phase:batch:context"):
            gt.parse_steps(bad)
    text = gt.decoder_source("tiny")
    assert '\nSIZE = "tiny"\n' in text and 'SIZE = "small"' not in text


def test_deadline_stops_a_long_call():
    # the alarm behind --budget-s: 0.05 s into a 5 s sleep
    t0 = time.perf_counter()
    with pytest.raises(gt.BudgetExceeded), gt.deadline(0.05):
        time.sleep(5)
    assert time.perf_counter() - t0 < 4
    with gt.deadline(5):  # ends in time: nothing raised, the alarm is cleared
        pass
    time.sleep(0.01)


def test_usage_errors(tmp_path):
    done = script("time", str(tmp_path), "--out", str(tmp_path / "r"), "--iters", "2")
    assert done.returncode == 1 and "--iters must be at least 3" in done.stderr
    done = script("time", str(tmp_path / "missing"), "--out", str(tmp_path / "r"))
    assert done.returncode == 1 and "not a folder" in done.stderr
    done = script("time", str(tmp_path), "--out", str(tmp_path / "r"), "--serving", "decode:1")
    assert done.returncode == 1 and "phase:batch:context" in done.stderr
    done = script("compare", str(tmp_path))
    assert done.returncode == 1 and "environment.json: missing" in done.stderr
    for args in ((), ("analyse",)):
        done = script(*args)
        assert done.returncode == 1 and "usage: bench/gpu_validate.py time" in done.stderr
    for done in (script("time", str(tmp_path)), script("compare", "--stat", "mean", "x")):
        assert done.returncode == 1 and "Traceback" not in done.stderr


# ---------------------------------------------------------------------------------------------
# time: PyTorch alone.


def test_the_blocker_blocks(tmp_path):
    # the wrapper the time tests run under does refuse solar: a script that imports it fails
    probe = tmp_path / "probe.py"
    probe.write_text("import solar\n")
    wrapper, record = tmp_path / "blocker.py", tmp_path / "tried.json"
    wrapper.write_text(BLOCKER)
    cmd = [sys.executable, str(wrapper), str(record), str(probe)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "blocked by the test: solar" in done.stderr
    assert json.loads(record.read_text()) == ["solar"]


def test_time_on_the_cpu_without_solar(tmp_path):
    problems = folder(
        tmp_path / "problems",
        {"level1/1_matmul.py": MATMUL, "level1/2_relu.py": RELU, "level2/1_broken.py": BROKEN},
    )
    out = tmp_path / "results"
    args = ["time", str(problems), "--out", str(out), "--device", "cpu", "--iters", "7"]
    args += ["--warmup", "2", "--l2-bytes", "65536", "--serving-size", "tiny"]
    args += ["--serving", "decode:2:16,prefill:1:8"]
    done, tried = blocked(tmp_path, *args)
    assert done.returncode == 0, done.stderr
    assert tried == []  # nothing of solar (or yaml) was even asked for
    names = sorted(os.listdir(out))
    assert names == [
        "compile_cold.json",
        "compile_warm.json",
        "eager_cold.json",
        "eager_warm.json",
        "environment.json",
        "serving.json",
        "serving_model.py",
    ]
    stat_keys = [
        "device",
        "hardware",
        "max",
        "mean",
        "median",
        "min",
        "num_trials",
        "status",
        "std",
    ]
    for state in ("cold", "warm"):
        eager = json.loads((out / f"eager_{state}.json").read_text())
        assert sorted(eager) == ["level1", "level2"]  # KernelBench's {level: {file: ...}}
        assert sorted(eager["level1"]) == ["1_matmul.py", "2_relu.py"]
        for entry in eager["level1"].values():
            assert sorted(entry) == stat_keys
            assert entry["status"] == "ok" and entry["num_trials"] == 7 and entry["device"] == "cpu"
            assert 0 < entry["min"] <= entry["median"] <= entry["max"]
            assert entry["min"] <= entry["mean"] <= entry["max"] and entry["std"] >= 0
            assert entry["max"] < 1e3  # milliseconds: a 64x64 matmul takes well under a second
        broken = eager["level2"]["1_broken.py"]
        assert broken["status"] == "failed" and "cannot be multiplied" in broken["error"]
        comp = json.loads((out / f"compile_{state}.json").read_text())
        assert {e["status"] for level in comp.values() for e in level.values()} == {"skipped"}

    serving = json.loads((out / "serving.json").read_text())
    assert serving["model"] == "serving_model.py"
    assert [(s["phase"], s["batch"], s["context"]) for s in serving["steps"]] == [
        ("decode", 2, 16),
        ("prefill", 1, 8),
    ]
    for step in serving["steps"]:
        assert step["eager_cold"]["status"] == step["eager_warm"]["status"] == "ok"
        assert step["eager_cold"]["num_trials"] == 7
        assert step["compile_warm"]["status"] == "skipped"
    assert 'SIZE = "tiny"' in (out / "serving_model.py").read_text()

    env = json.loads((out / "environment.json").read_text())
    assert env["device"] == "cpu" and env["complete"] and env["stopped"] is None
    assert env["l2_bytes"] == 65536 and env["flush_bytes"] == 131072
    assert env["options"]["iters"] == 7 and env["options"]["compile"] is False
    digest = hashlib.sha256((problems / "level1/2_relu.py").read_bytes()).hexdigest()
    assert env["problems"]["level1/2_relu.py"] == digest and len(env["problems"]) == 3
    assert env["timed"]["eager_cold.json"] == 2 and env["timed"]["compile_cold.json"] == 0

    # compare, here: the cold state, the two problems and the serving steps analysed
    md, js = tmp_path / "table.md", tmp_path / "table.json"
    done = script(
        "compare", str(out), "--cache-states", "cold", "--out", str(md), "--json", str(js)
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(js.read_text())
    assert doc["environment"]["hw"] == "H100-SXM" and doc["environment"]["what_if"]
    assert list(doc["cache_states"]) == ["cold"]
    cold = doc["cache_states"]["cold"]
    assert [p["problem"] for p in cold["problems"]] == [
        "level1/1_matmul.py",
        "level1/2_relu.py",
        "level2/1_broken.py",
    ]
    eager = json.loads((out / "eager_cold.json").read_text())
    for p in cold["problems"][:2]:
        assert p["analysis"]["status"] == "ok", p["analysis"]
        level, name = p["problem"].split("/")
        assert p["measured_s"]["eager"] == pytest.approx(eager[level][name]["min"] * MS)
    assert cold["problems"][2]["analysis"]["status"] == "not_run"  # nothing timed
    assert [s["problem"] for s in cold["serving"]] == ["decode_b2_t16", "prefill_b1_t8"]
    for step in cold["serving"]:
        assert step["analysis"]["status"] == "ok", step["analysis"]
        assert sorted(step["analysis"]["sol_s"]) == ["cache_aware", "fused", "unfused"]
    # The tiny decoder's decode step at batch 2, context 16, bf16: weights per layer q 64x64,
    # k and v 64x32, o 64x64, gate, up, down 3 x 64x128, two norms 2 x 64 = 36,992; two
    # layers, a final norm 64 and the head 256x64: 90,432 x 2 B = 180,864 B, and 2 embedding
    # rows of 64 x 2 B = 256 B: 181,120 B. The cache read: 2 layers x (k, v) x 2 x 2 heads x 16
    # x 16 x 2 B = 8,192 B. The cache written in place counts its new rows (256 B) and the
    # logits 2 x 256 x 2 B; a write of the whole cache would add another 8,192 B.
    fused = cold["serving"][0]["analysis"]["bytes"]["fused"]
    assert 181_120 + 8_192 <= fused < 181_120 + 2 * 8_192
    table = md.read_text()
    assert table == done.stdout
    assert "### Serving steps of `serving_model.py`, cold" in table
    assert "| decode_b2_t16 | not_run |" in table


def test_budgets_stop_cleanly(tmp_path):
    problems = folder(tmp_path / "problems", {"a/1_slow.py": SLOW, "a/2_relu.py": RELU})
    common = ["--device", "cpu", "--iters", "3", "--l2-bytes", "4096", "--serving", "none"]
    # the per-problem budget: the slow one times out, the next is timed
    out = tmp_path / "per-problem"
    done = script("time", str(problems), "--out", str(out), "--budget-s", "1", *common)
    assert done.returncode == 0, done.stderr
    eager = json.loads((out / "eager_cold.json").read_text())["a"]
    assert eager["1_slow.py"]["status"] == "timed_out"
    assert "(--budget-s)" in eager["1_slow.py"]["error"]
    assert eager["2_relu.py"]["status"] == "ok"
    assert not (out / "serving.json").exists()
    # the total budget: the slow one is cut off by it, the next is not reached, all files valid
    out = tmp_path / "total"
    # (12 s: room for a loaded machine to import torch before the first problem; the slow one
    # sleeps 30)
    done = script("time", str(problems), "--out", str(out), "--total-budget-s", "12", *common)
    assert done.returncode == 0, done.stderr
    env = json.loads((out / "environment.json").read_text())
    assert env["complete"] is False and "--total-budget-s" in env["stopped"]
    for name in ("eager_cold.json", "eager_warm.json"):
        eager = json.loads((out / name).read_text())["a"]
        assert eager["1_slow.py"]["status"] == "timed_out"
        assert "--total-budget-s" in eager["1_slow.py"]["error"]
        assert eager["2_relu.py"] == {"status": "not_reached"}


# ---------------------------------------------------------------------------------------------
# compare on timings written by hand.


def write_results(root: Path, problems: Path, entries: dict) -> Path:
    """A results folder as ``time`` writes it, on the CPU, with ``entries`` {(kind, state):
    entry} for the one problem ``level1/1_matmul.py``."""
    root.mkdir()
    rel = "level1/1_matmul.py"
    digest = hashlib.sha256((problems / rel).read_bytes()).hexdigest()
    env = {
        "schema_version": 1,
        "dir": str(problems),
        "device": "cpu",
        "device_name": "a CPU",
        "torch_version": "x",
        "timer": "wall clock",
        "l2_bytes": 1,
        "l2_source": "--l2-bytes",
        "flush_bytes": 2,
        "complete": True,
        "stopped": None,
        "wall_s": {"total": 1.0},
        "options": {
            "iters": 5,
            "warmup": 1,
            "min_trials": 3,
            "budget_s": 30.0,
            "total_budget_s": None,
            "compile": True,
        },
        "problems": {rel: digest},
    }
    (root / "environment.json").write_text(json.dumps(env))
    for (kind, state), entry in entries.items():
        (root / f"{kind}_{state}.json").write_text(json.dumps({"level1": {"1_matmul.py": entry}}))
    return root


def test_compare_hand_made_timings(tmp_path):
    problems = folder(tmp_path / "problems", {"level1/1_matmul.py": MATMUL})
    # eager: a fastest run of 1e-9 ms (1 ps), below any SOL; compile: 1 s, above any of a
    # 64x64 matmul. Warm not timed.
    ok = {"status": "ok", "mean": 1.0, "std": 0.0, "max": 1.0, "num_trials": 5}
    entries = {
        ("eager", "cold"): {**ok, "min": 1e-9, "median": 1e3},
        ("compile", "cold"): {**ok, "min": 1e3, "median": 1e3},
        ("eager", "warm"): {"status": "not_reached"},
        ("compile", "warm"): {"status": "not_reached"},
    }
    results = write_results(tmp_path / "results", problems, entries)
    js = tmp_path / "t.json"
    done = script("compare", str(results), "--hw", "H100-SXM", "--json", str(js))
    assert done.returncode == 0, done.stderr
    doc = json.loads(js.read_text())
    assert doc["environment"]["stat"] == "min" and doc["environment"]["hw_source"] == "--hw"
    (row,) = doc["cache_states"]["cold"]["problems"]
    sol = row["analysis"]["sol_s"]
    assert row["analysis"]["status"] == "ok" and all(sol[f] > 1e-12 for f in sol)
    assert row["measured_s"] == pytest.approx({"eager": 1e-12, "compile": 1.0})
    # every eager check fails (1e-12 s below each SOL), no compile check does
    assert [(v["fidelity"], v["timing"]) for v in row["violations"]] == [
        ("unfused", "eager"),
        ("fused", "eager"),
        ("cache_aware", "eager"),
    ]
    for f in ("unfused", "fused", "cache_aware"):
        assert row["ratios"][f"eager/{f}"] == pytest.approx(1e-12 / sol[f])
        assert row["ratios"][f"compile/{f}"] == pytest.approx(1.0 / sol[f])
    (warm,) = doc["cache_states"]["warm"]["problems"]
    assert warm["analysis"]["status"] == "not_run" and warm["violations"] == []
    s = doc["cache_states"]["cold"]["summary"]
    assert s["violations_by_fidelity"] == {"unfused": 1, "fused": 1, "cache_aware": 1}
    cells = next(line for line in done.stdout.splitlines() if line.startswith("| level1/"))
    cells = [c.strip() for c in cells.strip("|").split("|")]
    assert cells[2:5] == [gv.fmt_time(sol[f]) for f in gv.FIDELITIES]
    assert cells[5:7] == [gv.fmt_time(1e-12), "1 s"]
    assert cells[7] == f"**{gv.fmt_ratio(1e-12 / sol['unfused'])}**"
    assert cells[-1] == "unfused > eager, fused > eager, cache-aware > eager"
    assert "INCOMPLETE" not in done.stdout

    # a changed model file is refused, in one line
    (problems / "level1/1_matmul.py").write_text(MATMUL + "\n# changed\n")
    done = script("compare", str(results), "--hw", "H100-SXM")
    assert done.returncode == 1 and "level1/1_matmul.py differs" in done.stderr
    assert "Traceback" not in done.stderr
