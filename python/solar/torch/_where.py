"""Where a captured node comes from: its op's name and the user's line that called it (shared by
the tracer's refusals and the serializer's messages)."""

from __future__ import annotations

import functools
import os
import re
import sysconfig
from typing import Any

import torch


def _dirs(*paths: str) -> tuple[str, ...]:
    """Each path absolute and resolved, with a trailing separator (``torch`` is not a prefix
    of ``torchgen``)."""
    found = {os.path.abspath(p) for p in paths if p} | {os.path.realpath(p) for p in paths if p}
    return tuple(sorted(d.rstrip(os.sep) + os.sep for d in found))


_PATHS = sysconfig.get_paths()
# torch and SOLAR, wherever each is installed (a venv, an editable checkout, the system Python)
_LIBRARIES = _dirs(
    os.path.dirname(os.path.abspath(torch.__file__)),
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
)
# The standard library, but not the site-packages inside it (a Python without a venv installs
# packages there: transformers' modeling code is a model's own line).
_STDLIB = _dirs(os.path.dirname(os.path.abspath(os.__file__)), _PATHS.get("stdlib", ""))
_SITE = _dirs(_PATHS.get("purelib", ""), _PATHS.get("platlib", ""))


@functools.lru_cache(maxsize=4096)
def is_library_file(filename: str) -> bool:
    """Whether a frame's file is torch's, SOLAR's or the standard library's, not the user's
    (a file name in angle brackets, ``<frozen os>`` or ``<string>``, is never the user's)."""
    if filename.startswith("<"):
        return True
    for path in {os.path.abspath(filename), os.path.realpath(filename)}:
        if path.startswith(_LIBRARIES):
            return True
        if path.startswith(_STDLIB) and not path.startswith(_SITE):
            return True
    return False


def user_location(filename: str, line: int | str, function: str) -> str:
    """``file:line in function`` when the frame is the user's code (``is_library_file`` is
    false), else empty."""
    if is_library_file(filename):
        return ""
    return f"{os.path.basename(filename)}:{line} in {function}"


_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')


def _op_name(target: Any) -> str:
    if isinstance(target, torch._ops.OpOverload):
        return str(target)  # "aten.addmm.default"
    return f"{getattr(target, '__module__', '')}.{getattr(target, '__name__', str(target))}"


def _location(node: torch.fx.Node, source: str | None) -> str | None:
    """``file:line in function`` of the innermost frame of the user's code (not torch's,
    SOLAR's or the standard library's)."""
    frames = _FRAME.findall(node.meta.get("stack_trace") or "")
    user = [f for f in frames if not is_library_file(f[0])]
    if source:
        mine = [f for f in user if os.path.basename(f[0]) == os.path.basename(source)]
        user = mine or user
    if not user:
        return None
    path, line, func = user[-1]
    return f"{os.path.basename(path)}:{line} in {func}"
