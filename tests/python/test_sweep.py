"""``solar sweep`` (docs/sweeps.md) on a real Ray cluster of this machine: a head with no CPUs and
one worker node, started with ``ray start`` on loopback. A 3 x 3 sweep (the IR files of
tests/python/models/sweep x three devices: ``solar sol`` children, no torch) runs on it; its worker
node is killed once the first result is written, a fresh one joins, the sweep finishes, and a rerun
of the same command finds every one of the 9 tasks analysed, once, with the report of a direct
``solar sol --json``. The local pool gives the same result files and the same
``sweep.json``/``sweep.csv`` bytes; one PyTorch model file proves the ``solar analyze`` path; an IR
task with ``--parallel tp=2`` records its per-device SOL; a failing model is recorded, not fatal;
bad arguments are one-line errors. Every Ray process started here is killed at the end
(its process groups and their descendants: never a machine-wide ``ray stop``)."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from solar import cli
from solar.suites import sweep

ROOT = Path(__file__).resolve().parents[2]
MODELS = ["tests/python/models/sweep/scale.ir", "tests/python/models/sweep/matvec.ir"]
MODELS.append("tests/python/models/sweep/mlp.ir")
TORCH_MODEL = "tests/python/models/sweep/linear.py"
DEVICES = ["H100-SXM", "A100-SXM-80GB", "B200"]
# A loopback cluster without token authentication, whatever ~/.ray/auth_token holds (a local
# ray.init makes one; a ray start that finds it turns token mode on).
ENV = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="disabled")
# Quick failure detection: a killed node is declared dead in seconds, not half a minute.
ENV.update(RAY_health_check_period_ms="500", RAY_health_check_failure_threshold="4")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def descendants(roots: set[int]) -> set[int]:
    """The processes in the process groups ``roots`` and all their descendants (from /proc)."""
    procs: dict[int, tuple[int, int]] = {}  # pid -> (ppid, pgid)
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        procs[int(entry)] = (int(fields[1]), int(fields[2]))
    found = {pid for pid, (_ppid, pgid) in procs.items() if pgid in roots}
    while True:
        more = {pid for pid, (ppid, _) in procs.items() if ppid in found} - found
        if not more:
            return found
        found |= more


class Cluster:
    """A Ray head (0 CPUs) and worker nodes on 127.0.0.1, each ``ray start`` in its own session."""

    def __init__(self) -> None:
        self.temp = tempfile.mkdtemp(prefix="sr", dir="/tmp")  # short: socket paths
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.groups: list[int] = []
        self.ray = shutil.which("ray") or os.path.join(os.path.dirname(sys.executable), "ray")

    def _start(self, args: list[str]) -> int:
        common = ["--node-ip-address=127.0.0.1", "--disable-usage-stats"]
        common += [f"--dashboard-agent-listen-port={free_port()}", f"--temp-dir={self.temp}"]
        p = subprocess.Popen(
            [self.ray, "start", *args, *common],
            env=ENV,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its daemons keep this process group
        )
        self.groups.append(p.pid)
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err[-2000:]
        return p.pid

    def start_head(self) -> None:
        self._start(
            [
                "--head",
                f"--port={self.port}",
                "--num-cpus=0",
                "--include-dashboard=false",
            ]
        )

    def start_worker(self) -> int:
        return self._start([f"--address={self.address}", "--num-cpus=2"])

    def kill(self, group: int) -> None:
        for pid in descendants({group}):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def stop(self) -> None:
        for pid in descendants(set(self.groups)):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(self.temp, ignore_errors=True)


def solar_sweep(*args: str) -> list[str]:
    return [sys.executable, "-m", "solar", "sweep", *args]


def run_sweep(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        solar_sweep(*args), cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="module")
def ray_sweep(tmp_path_factory):
    """The 3 x 3 sweep on the cluster, its worker killed after the first result, then resumed:
    (results folder, the command's arguments, the resumed run)."""
    pytest.importorskip("ray")
    out = tmp_path_factory.mktemp("ray") / "sweep"
    cluster = Cluster()
    try:
        cluster.start_head()
        worker = cluster.start_worker()
        args = ["--models", *MODELS, "--hw", *DEVICES, "--out", str(out)]
        args += ["--ray", cluster.address, "--timeout-s", "240"]
        driver = subprocess.Popen(
            solar_sweep(*args),
            cwd=ROOT,
            env=ENV,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + 180
            while not list((out / "results").glob("*.json")):
                assert driver.poll() is None, driver.communicate()
                assert time.monotonic() < deadline, "no result after 180 s"
                time.sleep(0.02)
            cluster.kill(worker)  # mid-run: the worker node and the analyses it runs
            assert driver.poll() is None, "the sweep finished before its worker was killed"
            cluster.start_worker()  # the killed node's tasks run again here
            _, err = driver.communicate(timeout=300)
        finally:
            if driver.poll() is None:
                driver.kill()
                driver.wait()
        assert driver.returncode == 0, err
        assert "Traceback" not in err
        resumed = run_sweep(*args)  # the same command: nothing left but crashed tasks, if any
        assert resumed.returncode == 0, resumed.stderr
        yield out, args, resumed
    finally:
        cluster.stop()


def test_killed_worker_then_resume_gives_every_result_once(ray_sweep):
    out, _args, resumed = ray_sweep
    assert "9 task(s): 9 analysed, 0 failed, 0 crashed, 0 timeout" in resumed.stdout
    files = sorted((out / "results").glob("*.json"))
    assert len(files) == 9
    records = [json.loads(p.read_text()) for p in files]
    assert all(r["status"] == "analysed" and r["error"] is None for r in records)
    assert [p.stem for p in files] == sorted(r["id"] for r in records)
    combos = sorted((r["task"]["model"], r["task"]["hw"]) for r in records)
    assert combos == sorted((m, h) for m in MODELS for h in DEVICES)  # each exactly once
    table = json.loads((out / "sweep.json").read_text())["tasks"]
    assert [(t["model"], t["hw"]) for t in table] == [(m, h) for m in MODELS for h in DEVICES]
    rows = list(csv.DictReader((out / "sweep.csv").open()))
    assert len(rows) == 9 and {r["status"] for r in rows} == {"analysed"}
    assert all(float(r["sol_s_fused"]) > 0 and r["bottleneck_fused"] for r in rows)


def test_results_match_a_direct_sol(ray_sweep, tmp_path, monkeypatch):
    out, _args, _ = ray_sweep
    task = sweep.expand(
        {"models": [MODELS[2]], "hw": ["B200"], "policy": [None], "size": [{}], "parallel": [None]}
    )[0]
    record = json.loads((out / "results" / f"{task['id']}.json").read_text())
    direct = tmp_path / "direct.json"
    model = str(ROOT / MODELS[2])  # as the task ran it: its absolute path
    assert cli.main(["sol", model, "--hw", "B200", "--json", str(direct)]) == 0
    report = json.loads(direct.read_text())
    assert record["report"]["sol"] == report["sol"]
    assert record["report"] == report  # the whole report, in fact
    assert set(report["sol"]) >= {"fused_s", "unfused_s", "cache_aware_s", "bottleneck_fused"}


def test_a_pytorch_model_file_runs_solar_analyze(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    out = tmp_path / "out"
    done = run_sweep("--models", TORCH_MODEL, "--hw", "B200", "--size", "N=8", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "1 task(s): 1 analysed" in done.stdout
    (path,) = (out / "results").glob("*.json")
    record = json.loads(path.read_text())
    assert record["status"] == "analysed" and record["report"]["verification"]["status"] == "passed"
    monkeypatch.chdir(ROOT)
    direct = tmp_path / "direct.json"
    args = ["analyze", TORCH_MODEL, "--hw", "B200", "--size", "N=8", "--json", str(direct)]
    assert cli.main(args) == 0
    assert record["report"]["sol"] == json.loads(direct.read_text())["sol"]
    (row,) = json.loads((out / "sweep.json").read_text())["tasks"]
    assert row["sol_s"]["fused"] == record["report"]["sol"]["fused_s"] > 0
    assert row["sizes"] == {"N": 8} and row["parallel_fused_s"] is None


def test_a_parallel_layout_on_an_ir_task_records_the_per_device_sol(tmp_path):
    out = tmp_path / "out"
    args = ["--models", MODELS[2], "--hw", "H100-SXM", "--parallel", "none", "tp=2"]
    # Sizes where the step is above the 0.4 us kernel floor on one device and on two (tp=2
    # halves w1 and w2, 2 MiB each at H = 16,384): B = 16, H = 128 is floored on both.
    done = run_sweep(*args, "--size", "B=4096,H=16384", "--out", str(out), "--jobs", "2")
    assert done.returncode == 0, done.stderr
    assert "2 task(s): 2 analysed, 0 failed" in done.stdout
    rows = json.loads((out / "sweep.json").read_text())["tasks"]
    assert [(r["parallel"], r["sizes"]) for r in rows] == [
        (None, {"B": 4096, "H": 16384}),
        ("tp=2", {"B": 4096, "H": 16384}),
    ]
    one, tp2 = rows
    assert one["parallel_fused_s"] is None and one["sol_s"] == tp2["sol_s"]
    record = json.loads((out / "results" / f"{tp2['id']}.json").read_text())
    parallel = record["report"]["parallel"]
    assert parallel["layout"]["tp"] == 2 and parallel["layout"]["devices"] == 2
    assert tp2["parallel_fused_s"] == parallel["fidelities"]["fused"]["time_s"] > 0
    assert tp2["parallel_fused_s"] < tp2["sol_s"]["fused"]  # two devices beat one
    rows_csv = list(csv.DictReader((out / "sweep.csv").open()))
    assert rows_csv[0]["parallel_fused_s"] == ""
    assert float(rows_csv[1]["parallel_fused_s"]) == tp2["parallel_fused_s"]


def test_local_pool_gives_the_same_bytes(ray_sweep, tmp_path):
    out, args, _ = ray_sweep
    local = tmp_path / "local"
    done = run_sweep("--models", MODELS[0], "--hw", *DEVICES, "--out", str(local), "--jobs", "2")
    assert done.returncode == 0, done.stderr
    assert "3 task(s): 3 analysed" in done.stdout
    # The same three tasks on Ray: their results, aggregated by a rerun that has nothing to run.
    subset = tmp_path / "ray_subset"
    (subset / "results").mkdir(parents=True)
    for p in sorted((local / "results").glob("*.json")):
        assert p.read_bytes() == (out / "results" / p.name).read_bytes(), p.name
        shutil.copy(out / "results" / p.name, subset / "results" / p.name)
    i = args.index("--ray")
    again = run_sweep("--models", MODELS[0], "--hw", *DEVICES, "--out", str(subset), *args[i:])
    assert again.returncode == 0, again.stderr
    assert "3 task(s) already done, 0 to run" in again.stderr
    for name in ("sweep.json", "sweep.csv"):
        assert (local / name).read_bytes() == (subset / name).read_bytes(), name
    # docs/sweeps.md, "An example", shows this sweep.csv.
    shown = re.search(r"```csv\n(.*?)```", (ROOT / "docs" / "sweeps.md").read_text(), re.DOTALL)
    assert shown and shown.group(1) == (local / "sweep.csv").read_text()


def test_a_failing_model_is_recorded_not_fatal(tmp_path):
    broken = tmp_path / "broken.ir"
    broken.write_text("size N = 4\n\nkernel k {\n  oops\n}\n")
    out = tmp_path / "out"
    args = ["--models", str(broken), "--hw", "H100-SXM", "B200", "--out", str(out)]
    done = run_sweep(*args, "--parallel", "none", "tp=2", "--jobs", "2")
    assert done.returncode == 0, done.stderr  # every task has a result: exit 0
    assert "4 task(s): 0 analysed, 4 failed, 0 crashed, 0 timeout" in done.stdout
    assert "Traceback" not in done.stderr
    rows = json.loads((out / "sweep.json").read_text())["tasks"]
    assert [(r["hw"], r["parallel"]) for r in rows] == [
        ("H100-SXM", None),
        ("H100-SXM", "tp=2"),
        ("B200", None),
        ("B200", "tp=2"),
    ]
    for r in rows:
        assert r["status"] == "failed" and r["sol_s"] == {}
        assert r["error"].endswith("broken.ir:4:3: error: unknown name 'oops'"), r["error"]
        assert "\n" not in r["error"]
    rows_csv = list(csv.DictReader((out / "sweep.csv").open()))
    assert [(r["status"], r["error"]) for r in rows_csv] == [
        (r["status"], r["error"]) for r in rows
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--hw", "H100-SXM"], "give the model files: --models A.py"),
        (["--models", MODELS[0]], "give the devices: --hw NAME"),
        (["--models", "nope.py", "--hw", "H100-SXM"], "nope.py: no such model file"),
        (["--models", MODELS[0], "--hw", "NOPE"], "unknown device 'NOPE'"),
        (["--models", MODELS[0], MODELS[0], "--hw", "B200"], f"'{MODELS[0]}' is given twice"),
        (["--models", MODELS[0], "--hw", "B200", "--size", "N=x"], "--size 'N=x': expected"),
        (["--models", MODELS[0], "--hw", "B200", "--jobs", "0"], "--jobs must be at least 1"),
        (["--models", MODELS[0], "--hw", "B200", "--spec", "spec.json"], "unknown key 'devices'"),
        (["--models", MODELS[0], "--hw", "B200", "--bogus"], "unrecognized arguments: --bogus"),
    ],
)
def test_bad_arguments_are_one_line_errors(args, message, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    spec = tmp_path / "spec.json"
    spec.write_text('{"devices": ["B200"]}')
    args = [str(spec) if a == "spec.json" else a for a in args]
    assert cli.main(["sweep", *args, "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert message in err, err
    assert "Traceback" not in err
    assert err.count("\n") == 1 and err.startswith("solar sweep: error: ")
    assert not (tmp_path / "out" / "sweep.json").exists()


def test_task_ids_are_stable_and_readable():
    params = sweep.task_params("m/mlp.py", "H100-SXM", "bf16", {"N": 1024, "B": 2}, "tp=2,dp=4")
    tid = sweep.task_id(params)
    assert tid.startswith("mlp_H100-SXM_bf16_B2-N1024_tp-2-dp-4_") and len(tid.split("_")[-1]) == 8
    assert tid == sweep.task_id(dict(params))  # the same parameters, the same id
    assert tid != sweep.task_id(dict(params, model="other/mlp.py"))
