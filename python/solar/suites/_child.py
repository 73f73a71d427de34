"""The pieces ``solar bench`` (solar.suites.bench) and ``solar sweep`` (solar.suites.sweep) share:
``solar analyze`` (or ``solar sol``) runs in child processes with a timeout each (``run_children``,
``jobs`` at once), result files written atomically (``write_json_atomic``) and the progress bar
(``Progress``). No torch or jax here: the children import them, or the fork server did
(``solar.adapters.preload``).

Two isolations (``ISOLATIONS``), the same outputs byte for byte:

- ``process``: each child is a new Python (``python -m solar COMMAND ...``), which imports its
  framework itself (torch: seconds);
- ``fork`` (the default where ``os.fork`` exists): a fork server (``ForkServer``: a new Python
  started once per run, ``python -m solar.suites._child FRAMEWORKS``) imports the frameworks once
  (``solar.adapters.preload``), then forks one child per request, which runs ``solar.cli.main``
  with the same arguments. The server runs one thread and no tensor operation (a fork of a
  process whose OpenMP pool has started hangs at the child's first parallel operation), whatever
  the process that asks for the children has done (a test runner, a program that used torch).

Either way a child is its own process group: a crash (a signal, ``os._exit``) or a timeout (the
group killed) ends that child only, and the parent, which waits on its children in its one
thread, goes on with the next.
"""

from __future__ import annotations

import faulthandler
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from solar._files import write_atomic

# The stages of one ``solar analyze`` (solar.stages.STAGES; not imported: it needs numpy).
STAGES = ("capture", "lowering", "verification", "analysis")
ISOLATIONS = ("fork", "process")
POLL_S = 0.005  # how often the parent looks at its running children


def default_isolation() -> str:
    """``fork`` where the system has it (POSIX), else ``process``."""
    return "fork" if hasattr(os, "fork") else "process"


@dataclass(frozen=True)
class Request:
    """One child: ``solar COMMAND TARGET --json REPORT [--stage-times T] OPTIONS...``, killed
    after ``timeout_s`` seconds."""

    command: str
    target: str
    options: tuple[str, ...]
    timeout_s: float
    stage_times: bool = False


def run_analyze(
    model: str, options: Sequence[str], timeout_s: float, stage_times: bool = False
) -> dict[str, Any]:
    """``solar analyze MODEL --json REPORT [--stage-times T] OPTIONS...`` in a new process
    (run_child)."""
    return run_child("analyze", model, options, timeout_s, stage_times)


def run_child(
    command: str, target: str, options: Sequence[str], timeout_s: float, stage_times: bool = False
) -> dict[str, Any]:
    """One child, a new process (``run_children`` with ``process`` isolation; a Ray worker of
    ``solar sweep`` runs its task so)."""
    request = Request(command, target, tuple(options), timeout_s, stage_times)
    return run_children([request], 1, "process")[0]


def run_children(
    requests: Sequence[Request],
    jobs: int,
    isolation: str,
    done: Callable[[int, dict[str, Any]], None] | None = None,
    server: ForkServer | None = None,
) -> list[dict[str, Any]]:
    """Runs each request in a child process, ``jobs`` at once, and returns what came of each, in
    the requests' order (``done(index, result)`` is called in this thread as each ends):

    - ``status``: ``analysed`` (the child wrote its report), ``failed`` (no report, exit code 1:
      the user's error, e.g. a model file that fails or an unknown option), ``crashed`` (no
      report, any other exit: SOLAR's internal error, a signal) or ``timeout`` (killed after
      ``timeout_s`` seconds);
    - ``report``: the JSON report (None without one);
    - ``error``: the child's last line on stderr, or what stopped it (None when analysed);
    - ``returncode``, ``total_s`` (the child's wall-clock seconds, from its start, or its fork,
      to its exit), ``cpu_s`` (the CPU seconds, user and system, of the child and the processes
      it waited for, from its start or fork to its exit; None where the system cannot say or
      the child was killed) and ``stages_s`` (with ``stage_times``: ``{stage: seconds}``, None
      when the child wrote none).

    ``server``: the fork server of ``fork`` isolation (one started, with no framework preloaded,
    and closed here when None)."""
    if isolation not in ISOLATIONS:
        raise ValueError(f"unknown isolation '{isolation}' (valid: {', '.join(ISOLATIONS)})")
    if jobs < 1:
        raise ValueError("jobs must be at least 1")
    results: list[dict[str, Any] | None] = [None] * len(requests)
    pending = deque(enumerate(requests))
    running: dict[int, _Child] = {}
    if server is None and isolation == "fork" and requests:
        server = own_server = ForkServer(())
    else:
        own_server = None
    try:
        while pending or running:
            while pending and len(running) < jobs:
                index, request = pending.popleft()
                running[index] = _Child(request, server if isolation == "fork" else None)
            ended = [index for index, child in running.items() if child.ended()]
            for index in ended:
                child = running.pop(index)
                results[index] = child.result()
                child.remove()
                if done is not None:
                    done(index, results[index])
            if not ended:
                time.sleep(POLL_S)
    finally:  # an interrupt (or a failing ``done``): no child outlives the parent
        for child in running.values():
            child.kill()
            child.remove()
        if own_server is not None:
            own_server.close()
    return results  # type: ignore[return-value]


def single_threaded() -> bool:
    """Whether this process runs one Python thread (``threading``): the fork server forks only
    then, so that no lock of another thread is held in a child. Native pools are not Python's:
    numpy's OpenBLAS pool is shut down before a fork by its own ``pthread_atfork`` handler, and
    torch starts its OpenMP pool only at its first parallel operation, which the server never
    runs."""
    return threading.active_count() == 1


class _Child:
    """One running child and its temporary folder (the report, the stage times and its
    standard output and error, as files: no pipe for the parent to drain)."""

    def __init__(self, request: Request, server: ForkServer | None) -> None:
        self.request = request
        self.tmp = tempfile.mkdtemp(prefix="solar-analyze-")
        self.report_path = os.path.join(self.tmp, "report.json")
        self.stages_path = os.path.join(self.tmp, "stages.json")
        out, err = os.path.join(self.tmp, "stdout"), os.path.join(self.tmp, "stderr")
        self.err_path = err
        argv = [request.command, request.target, "--json", self.report_path]
        if request.stage_times:
            argv += ["--stage-times", self.stages_path]
        argv += list(request.options)
        self.returncode: int | None = None
        self.cpu_s: float | None = None
        self.timed_out = False
        self.start = time.perf_counter()
        self.popen: subprocess.Popen | None = None
        self.server = server
        if server is None:
            with open(out, "wb") as o, open(err, "wb") as e:
                self.popen = subprocess.Popen(
                    [sys.executable, "-m", "solar", *argv],
                    stdout=o,
                    stderr=e,
                    start_new_session=True,  # its own process group, killed as one
                )
            self.pid = self.popen.pid
        else:
            self.pid = server.fork(argv, out, err)
        self.end = self.start

    def ended(self) -> bool:
        """Whether the child has exited (reaped here); one past its timeout is killed first."""
        if self.returncode is not None:
            return True
        if self.popen is not None:
            code = self._poll_process()
        else:
            assert self.server is not None
            code = self.server.exit_code(self.pid, block=False)
            if code is not None:
                self.cpu_s = self.server.cpu_s.pop(self.pid, None)
        if code is None and time.perf_counter() - self.start > self.request.timeout_s:
            self.timed_out = True
            self.kill()
            return True
        if code is not None:
            self.returncode, self.end = code, time.perf_counter()
        return code is not None

    def _poll_process(self) -> int | None:
        """The new process's exit code (None while it runs), reaped with its CPU time where the
        system gives it (``os.wait4``), else by ``Popen.poll``."""
        assert self.popen is not None
        if not hasattr(os, "wait4") or self.popen.returncode is not None:
            return self.popen.poll()
        pid, status, usage = os.wait4(self.popen.pid, os.WNOHANG)
        if pid == 0:
            return None
        self.popen.returncode = os.waitstatus_to_exitcode(status)
        self.cpu_s = usage.ru_utime + usage.ru_stime
        return self.popen.returncode

    def kill(self) -> None:
        """Kills the child's process group and reaps the child."""
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (OSError, AttributeError):  # gone, not a group leader yet, or no killpg (Windows)
            try:
                os.kill(self.pid, signal.SIGKILL)
            except OSError:
                pass
        if self.popen is not None:
            self.returncode = self.popen.wait()
        elif self.returncode is None:
            assert self.server is not None
            self.returncode = self.server.exit_code(self.pid, block=True)
        self.end = time.perf_counter()

    def remove(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    def result(self) -> dict[str, Any]:
        request = self.request
        total_s = self.end - self.start
        if self.timed_out:
            return {
                "status": "timeout",
                "report": None,
                "error": f"timed out after {request.timeout_s:g} s",
                "returncode": None,
                "total_s": total_s,
                "cpu_s": None,
                "stages_s": None,
            }
        result: dict[str, Any] = {
            "returncode": self.returncode,
            "total_s": total_s,
            "cpu_s": self.cpu_s,
            "stages_s": read_stage_times(self.stages_path) if request.stage_times else None,
        }
        if os.path.exists(self.report_path):
            with open(self.report_path) as f:
                result.update(status="analysed", report=json.load(f), error=None)
            return result
        with open(self.err_path, encoding="utf-8", errors="replace") as f:
            lines = [line for line in f.read().strip().splitlines() if line.strip()]
        code = self.returncode
        assert code is not None
        if lines:
            error = " ".join(lines[-1].split())
        elif code < 0:
            error = f"solar {request.command} was killed by signal {-code}"
        else:
            error = f"solar {request.command} exited {code}"
        result.update(status="failed" if code == 1 else "crashed", report=None, error=error)
        return result


class ForkServer:
    """A new Python (``python -m solar.suites._child FRAMEWORKS``) that imports the frameworks once
    (``solar.adapters.preload``) and forks the children asked of it: on its standard input one
    JSON line per child (``[argv, out, err]``), answered on its standard output by ``fork PID``;
    ``exit PID CODE CPU`` as each child ends (CODE as ``subprocess``'s: negative for a signal;
    CPU: its user and system seconds, ``os.wait4``'s)."""

    def __init__(self, frameworks: Iterable[str]) -> None:
        start = time.perf_counter()
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "solar.suites._child", *sorted(set(frameworks))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        self.lines = _Lines(self.popen.stdout.fileno())  # type: ignore[union-attr]
        self.codes: dict[int, int] = {}
        self.cpu_s: dict[int, float] = {}  # of each child that exited
        self.forked: deque[int] = deque()
        self.ready = False
        self._wait(lambda: self.ready)
        self.preload_s = time.perf_counter() - start  # the server's start and imports

    def fork(self, argv: list[str], out: str, err: str) -> int:
        """Asks for a child; returns its pid."""
        assert self.popen.stdin is not None
        self.popen.stdin.write((json.dumps([argv, out, err]) + "\n").encode())
        self.popen.stdin.flush()
        self._wait(lambda: bool(self.forked))
        return self.forked.popleft()

    def exit_code(self, pid: int, block: bool) -> int | None:
        """The exit code of the child ``pid`` (None while it runs, unless ``block``)."""
        if pid not in self.codes:
            self._read(0.0)
        if block:
            self._wait(lambda: pid in self.codes)
        return self.codes.pop(pid, None)

    def close(self) -> None:
        """Ends the server (it kills any child still running)."""
        if self.popen.poll() is None:
            assert self.popen.stdin is not None
            self.popen.stdin.close()
            try:
                self.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        self.popen.stdout.close()  # type: ignore[union-attr]

    def _wait(self, until: Callable[[], bool]) -> None:
        while not until():
            self._read(1.0)

    def _read(self, timeout: float) -> None:
        for line in self.lines.read(timeout):
            word, *rest = line.split()
            if word == "ready":
                self.ready = True
            elif word == "fork":
                self.forked.append(int(rest[0]))
            elif word == "exit":
                self.codes[int(rest[0])] = int(rest[1])
                self.cpu_s[int(rest[0])] = float(rest[2])
        if self.lines.closed:
            raise RuntimeError(f"the fork server exited ({self.popen.wait()})")


class _Lines:
    """The complete lines that have arrived on a file descriptor (unbuffered reads, so that
    ``select`` sees every byte not yet taken)."""

    def __init__(self, fd: int) -> None:
        self.fd, self.buffer, self.closed = fd, b"", False

    def read(self, timeout: float) -> list[str]:
        """The lines ready now, after waiting up to ``timeout`` s for the first bytes."""
        import select

        while not self.closed and select.select([self.fd], [], [], timeout)[0]:
            data = os.read(self.fd, 65536)
            self.closed = not data
            self.buffer += data
            timeout = 0.0
        *lines, self.buffer = self.buffer.split(b"\n")
        return [line.decode() for line in lines]


def serve(frameworks: Sequence[str]) -> int:
    """The fork server's loop (``ForkServer``): preloads, says ``ready``, then forks a child per
    request line and reports each child's exit, until its standard input closes."""
    from solar.adapters import preload

    preload(frameworks)
    out = sys.stdout.buffer

    def say(text: str) -> None:
        out.write(text.encode() + b"\n")
        out.flush()

    say("ready")
    children: set[int] = set()
    requests = _Lines(sys.stdin.fileno())
    try:
        while True:
            for pid in sorted(children):
                done, status, usage = os.wait4(pid, os.WNOHANG)
                if done:
                    children.discard(pid)
                    cpu = usage.ru_utime + usage.ru_stime
                    say(f"exit {pid} {os.waitstatus_to_exitcode(status)} {cpu!r}")
            for line in requests.read(POLL_S):
                argv, out_path, err_path = json.loads(line)
                pid = _fork(argv, out_path, err_path)
                children.add(pid)
                say(f"fork {pid}")
            if requests.closed:
                return 0
    finally:
        for pid in children:
            try:
                os.killpg(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except OSError:
                pass


def _fork(argv: list[str], out: str, err: str) -> int:
    """Forks a child that runs ``solar.cli.main(argv)`` with its standard output and error
    written to the files ``out`` and ``err`` and exits with its code (``os._exit``: no exit
    handler of the parent runs twice); returns its pid."""
    if not single_threaded():
        raise RuntimeError(
            "fork isolation needs a single-threaded parent: "
            f"{threading.active_count()} Python threads run here"
        )
    sys.stdout.flush()  # nothing buffered here is written twice
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        try:
            os.setpgid(pid, pid)  # (the child does it too: whichever runs first)
        except OSError:
            pass
        return pid
    code = 2
    try:
        os.setpgid(0, 0)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        for fd, path in ((1, out), (2, err)):
            target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(target, fd)
            os.close(target)
        # Python's streams on those descriptors (the parent's may be another object: a test
        # runner's capture), as a new Python's would be.
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
        if faulthandler.is_enabled():  # a new Python has it only when the environment asks
            faulthandler.disable()
            if os.environ.get("PYTHONFAULTHANDLER"):
                faulthandler.enable(sys.stderr)
        from solar.cli import main

        code = main(argv)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException as e:  # noqa: BLE001 - one line, as solar.cli.main writes it
        text = " ".join(str(e).split()) or type(e).__name__
        print(f"solar {argv[0]}: internal error: {type(e).__name__}: {text}", file=sys.stderr)
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)
    return 0  # not reached


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
    """``one(item)`` for every item, ``jobs`` at once on threads; the results in the items'
    order."""
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


if __name__ == "__main__":
    sys.exit(serve(sys.argv[1:]))
