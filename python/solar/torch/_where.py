"""Where a captured node comes from: its op's name and the user's line that called it (shared by
the tracer's refusals and the serializer's messages)."""

from __future__ import annotations

import os
import re
from typing import Any

import torch

_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))
_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')


def _op_name(target: Any) -> str:
    if isinstance(target, torch._ops.OpOverload):
        return str(target)  # "aten.addmm.default"
    return f"{getattr(target, '__module__', '')}.{getattr(target, '__name__', str(target))}"


def _location(node: torch.fx.Node, source: str | None) -> str | None:
    """``file:line in function`` of the innermost frame of the user's code (not torch's)."""
    frames = _FRAME.findall(node.meta.get("stack_trace") or "")
    user = [f for f in frames if not os.path.abspath(f[0]).startswith(_TORCH_DIR)]
    if source:
        mine = [f for f in user if os.path.basename(f[0]) == os.path.basename(source)]
        user = mine or user
    if not user:
        return None
    path, line, func = user[-1]
    return f"{os.path.basename(path)}:{line} in {func}"
