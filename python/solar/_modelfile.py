"""Running the user's code in a model file (docs/capture.md, docs/jax.md): importing it and
calling ``get_inputs()``, ``get_init_inputs()`` and ``Model(...)``. Whatever that code raises
(a syntax error, a missing import, an exception, ``sys.exit``) becomes one ``error(message)``
that names the file and line, e.g. ``m.py:6: get_inputs() failed: RuntimeError: boom``; the
original exception is chained. No torch or jax here."""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import traceback
from collections.abc import Callable
from types import ModuleType
from typing import Any

_JAX_IMPORT = re.compile(r"^\s*(import|from)\s+(jax|flax)\b", re.MULTILINE)


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
    return module


def call_model_code(path: str, what: str, error: type[Exception], fn: Callable[..., Any]) -> Any:
    """``fn()``; what it raises becomes ``error`` naming ``what`` (e.g. ``get_inputs()``)."""
    try:
        return fn()
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
    line = None
    target = os.path.abspath(path)
    for frame in traceback.extract_tb(e.__traceback__):
        if os.path.abspath(frame.filename) == target:
            line = frame.lineno
    where = f"{path}:{line}" if line is not None else path
    message = " ".join(str(e).split("\n")[0].split())
    return f"{where}: {what} failed: {type(e).__name__}" + (f": {message}" if message else "")
