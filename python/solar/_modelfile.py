"""Running the user's code in a model file (docs/capture.md, docs/jax.md): importing it and
calling ``get_inputs()``, ``get_init_inputs()`` and ``Model(...)``. Whatever that code raises
(a syntax error, a missing import, an exception, ``sys.exit``) becomes one ``error(message)``
that names the file and line, e.g. ``m.py:6: get_inputs() failed: RuntimeError: boom``; the
original exception is chained. No torch or jax here.

Sizes: ``solar analyze MODEL.py --size N=1024`` (``size_overrides``) sets the file's integer
global ``N`` to 1024 right after it is imported, before ``get_inputs()`` and the others run (code
that reads ``N`` when it is called sees the new value; a global computed from it at import
does not)."""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

_JAX_IMPORT = re.compile(r"^\s*(import|from)\s+(jax|flax)\b", re.MULTILINE)
_SIZES: dict[str, int] = {}  # set by size_overrides, applied by import_model_file
# The seconds the file's own code may run in one call (get_inputs(), get_init_inputs(),
# Model(...)); set by build_budget (solar analyze --build-budget-s).
DEFAULT_BUILD_BUDGET_S = 600.0
_BUILD_BUDGET_S = [DEFAULT_BUILD_BUDGET_S]


class _PastBudget(Exception):  # noqa: N818 - raised inside the user's code when time is up
    pass


@contextmanager
def build_budget(seconds: float) -> Iterator[None]:
    """Within the block, each call of a model file's own code (``call_model_code``) stops after
    ``seconds`` with a one-line error naming the file's line it was running (``solar analyze
    --build-budget-s``): ``nn.RNN(..., num_layers=10**12)`` builds layers for hours."""
    saved = _BUILD_BUDGET_S[0]
    _BUILD_BUDGET_S[0] = seconds
    try:
        yield
    finally:
        _BUILD_BUDGET_S[0] = saved


@contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Raises _PastBudget in the running code after ``seconds`` (a real-time timer; only in the
    main thread, where Python delivers signals; elsewhere no limit)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGALRM"):
        yield
        return

    def past(signum: int, frame: Any) -> None:
        raise _PastBudget()

    previous = signal.signal(signal.SIGALRM, past)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextmanager
def size_overrides(sizes: dict[str, int]) -> Iterator[None]:
    """Within the block, every model file imported gets ``sizes`` (name -> value) set on its
    integer globals (``solar analyze --size``)."""
    saved = dict(_SIZES)
    _SIZES.clear()
    _SIZES.update(sizes)
    try:
        yield
    finally:
        _SIZES.clear()
        _SIZES.update(saved)


def parse_sizes(values: list[str] | None) -> dict[str, int]:
    """``--size N=1024,M=64`` (repeatable) as ``{"N": 1024, "M": 64}``; ValueError naming the bad
    one."""
    sizes: dict[str, int] = {}
    for value in values or []:
        for item in value.split(","):
            name, eq, number = item.partition("=")
            name, number = name.strip(), number.strip()
            if not eq or not name.isidentifier() or not re.fullmatch(r"[0-9]+", number):
                raise ValueError(f"--size '{item}': expected NAME=INTEGER, e.g. N=1024")
            if name in sizes:
                raise ValueError(f"--size: '{name}' is given twice")
            sizes[name] = int(number)
    return sizes


def _apply_sizes(path: str, module: ModuleType, error: type[Exception]) -> None:
    ints = sorted(k for k, v in vars(module).items() if type(v) is int and not k.startswith("_"))
    for name, value in sorted(_SIZES.items()):
        if name not in ints:
            valid = ", ".join(ints) if ints else "none"
            raise error(f"{path}: --size {name}: no integer global '{name}' (valid: {valid})")
        setattr(module, name, value)


def framework_of(path: str | os.PathLike) -> str:
    """The framework of a model file: "jax" when it imports jax or flax, else "torch"."""
    with open(path, encoding="utf-8", errors="replace") as f:
        return "jax" if _JAX_IMPORT.search(f.read()) else "torch"


def import_model_file(path: str, module_name: str, error: type[Exception]) -> ModuleType:
    """Imports ``path`` as module ``module_name`` (kept in sys.modules: inspect and pickle look
    classes up there); raises ``error`` when the file's own code fails."""
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise error(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as e:
        del sys.modules[module_name]
        raise error(describe_failure(path, "import", e)) from e
    if _SIZES:
        try:
            _apply_sizes(path, module, error)
        except BaseException:
            del sys.modules[module_name]
            raise
    return module


def within_build_budget(
    path: str, what: str, error: type[Exception], fn: Callable[..., Any]
) -> Any:
    """``fn()`` (a call of the model file's own code), stopped past the build budget
    (``build_budget``) with ``error`` naming the line of ``path`` it was running; what else it
    raises goes through unchanged."""
    seconds = _BUILD_BUDGET_S[0]
    try:
        with _deadline(seconds):
            return fn()
    except _PastBudget as e:
        where = _where(path, e)
        raise error(
            f"{where}: {what} was still running after {seconds:g} s (the model file's own code; "
            "give it longer with --build-budget-s)"
        ) from None


def call_model_code(path: str, what: str, error: type[Exception], fn: Callable[..., Any]) -> Any:
    """``fn()`` within the build budget; what it raises becomes ``error`` naming ``what`` (e.g.
    ``get_inputs()``) and the file's line."""
    try:
        return within_build_budget(path, what, error, fn)
    except error:
        raise
    except (Exception, SystemExit) as e:
        raise error(describe_failure(path, what, e)) from e


def describe_failure(path: str, what: str, e: BaseException) -> str:
    """``PATH:LINE[:COL]: WHAT failed: TYPE: MESSAGE`` (first line of the message), the line
    being the innermost one of ``path`` in the traceback (for a syntax error, its own)."""
    if isinstance(e, SyntaxError) and e.lineno is not None:
        where = f"{path}:{e.lineno}" + (f":{e.offset}" if e.offset else "")
        return f"{where}: syntax error: {e.msg}"
    if isinstance(e, SystemExit):
        return f"{path}: {what} called sys.exit({e.code!r})"
    where = _where(path, e)
    message = " ".join(str(e).split("\n")[0].split())
    return f"{where}: {what} failed: {type(e).__name__}" + (f": {message}" if message else "")


def _where(path: str, e: BaseException) -> str:
    """``PATH:LINE``, the line being the innermost one of ``path`` in e's traceback (``PATH``
    when it has none)."""
    line = None
    target = os.path.abspath(path)
    for frame in traceback.extract_tb(e.__traceback__):
        if os.path.abspath(frame.filename) == target:
            line = frame.lineno
    return f"{path}:{line}" if line is not None else path
