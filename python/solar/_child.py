"""The pieces ``solar bench`` (solar.suite) and ``solar sweep`` (solar.sweep) share: one
``solar analyze`` (or ``solar sol``) run in a child process with a timeout (``run_child``),
result files written atomically (``write_json_atomic``), a thread pool of such children
(``run_local``) and the progress bar (``Progress``). No torch or jax here: the children import
them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from solar._files import write_atomic

# The stages of one ``solar analyze`` (solar.pipeline.STAGES; not imported: it needs numpy).
STAGES = ("capture", "lowering", "verification", "analysis")


def run_analyze(
    model: str, options: Sequence[str], timeout_s: float, stage_times: bool = False
) -> dict[str, Any]:
    """``solar analyze MODEL --json REPORT [--stage-times T] OPTIONS...`` in a child process
    (run_child)."""
    return run_child("analyze", model, options, timeout_s, stage_times)


def run_child(
    command: str, target: str, options: Sequence[str], timeout_s: float, stage_times: bool = False
) -> dict[str, Any]:
    """Runs ``solar COMMAND TARGET --json REPORT [--stage-times T] OPTIONS...`` in a child
    process (this Python, ``-m solar``; COMMAND ``analyze`` for a model file, ``sol`` for an IR
    file, which imports no torch) and returns what came of it:

    - ``status``: ``analysed`` (the child wrote its report), ``failed`` (no report, exit code 1:
      the user's error, e.g. a model file that fails or an unknown option), ``crashed`` (no
      report, any other exit: SOLAR's internal error, a signal) or ``timeout`` (killed after
      ``timeout_s`` seconds);
    - ``report``: the JSON report (None without one);
    - ``error``: the child's last line on stderr, or what stopped it (None when analysed);
    - ``returncode``, ``total_s`` (the child's wall-clock seconds) and ``stages_s`` (with
      ``stage_times``: ``{stage: seconds}``, None when the child wrote none).
    """
    with tempfile.TemporaryDirectory(prefix="solar-analyze-") as tmp:
        report_path = os.path.join(tmp, "report.json")
        stages_path = os.path.join(tmp, "stages.json")
        cmd = [sys.executable, "-m", "solar", command, target, "--json", report_path]
        if stage_times:
            cmd += ["--stage-times", stages_path]
        cmd += list(options)
        start = time.perf_counter()
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return {
                "status": "timeout",
                "report": None,
                "error": f"timed out after {timeout_s:g} s",
                "returncode": None,
                "total_s": time.perf_counter() - start,
                "stages_s": None,
            }
        result: dict[str, Any] = {
            "returncode": done.returncode,
            "total_s": time.perf_counter() - start,
            "stages_s": read_stage_times(stages_path) if stage_times else None,
        }
        if os.path.exists(report_path):
            with open(report_path) as f:
                result.update(status="analysed", report=json.load(f), error=None)
            return result
    lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
    if lines:
        error = " ".join(lines[-1].split())
    elif done.returncode < 0:
        error = f"solar {command} was killed by signal {-done.returncode}"
    else:
        error = f"solar {command} exited {done.returncode}"
    result.update(status="failed" if done.returncode == 1 else "crashed", report=None, error=error)
    return result


def read_stage_times(path: str) -> dict | None:
    """The ``solar analyze --stage-times`` file: ``{stage: seconds}`` (None when the child
    wrote none: it crashed, or failed before it could)."""
    if not os.path.exists(path):
        return None
    with open(path) as f:
        data = json.load(f)
    return {stage: float(data.get(stage, 0.0)) for stage in STAGES}


def write_json_atomic(path: str, data: object) -> None:
    """``data`` as JSON (sorted keys, one space of indent, no NaN) written atomically to
    ``path``, its folders made."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    write_atomic(path, json.dumps(data, sort_keys=True, indent=1, allow_nan=False) + "\n")


def run_local(items: Iterable[Any], one: Callable[[Any], Any], jobs: int) -> list[Any]:
    """``one(item)`` for every item, ``jobs`` at once on threads (each ``one`` waits on its own
    child process); the results in the items' order."""
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(one, items))


class Progress:
    """A plain-text progress bar on stderr: ``[#####.....] 5/10 level1/a.py``."""

    def __init__(self, total: int, stream=None) -> None:
        self.total, self.done, self.lock = total, 0, threading.Lock()
        self.stream = stream or sys.stderr
        self.width = 0

    def step(self, label: str) -> None:
        with self.lock:
            self.done += 1
            width = 30
            filled = width * self.done // max(self.total, 1)
            bar = "#" * filled + "." * (width - filled)
            line = f"[{bar}] {self.done}/{self.total} {label}"
            self.stream.write("\r" + line.ljust(self.width))
            self.width = max(self.width, len(line))  # spaces wipe a longer previous label
            if self.done == self.total:
                self.stream.write("\n")
            self.stream.flush()
