"""The memory a PyTorch program needs, found without the memory: the program run on fake tensors
(torch's ``FakeTensorMode``: shapes and dtypes, no data) while a dispatch mode keeps the bytes of
the tensors alive. ``peak_of(fn)`` says how high they went and which operation made the largest.

A program whose sizes depend on its values (``nonzero``, ``.item()``, ``.tolist()``) cannot run
on fake tensors to its end: the run stops there, and the peak seen up to that point is still a
lower bound on the real one (``Peak.complete`` is false). A caller refuses a run whose lower bound
is already past the memory it has; it never refuses on a guess above the real need.

Only the storage an operation creates is counted: a view, or an in-place or ``out=`` operation
(an output that aliases an input, by the op's schema) adds nothing. A tensor's bytes are freed
when its last Python reference goes (``weakref.finalize``), as the caching-free CPU allocator
does.
"""

from __future__ import annotations

import logging
import traceback
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves


@dataclass
class Peak:
    """The most bytes alive at once (``bytes``), the largest tensor an operation called from
    ``where_file`` made (``largest``: its bytes, the op, and "line N" of that file; (0, "", "")
    when none was), and whether the run went to its end."""

    bytes: int = 0
    largest: tuple[int, str, str] = (0, "", "")
    complete: bool = True
    stopped: str = ""  # why the run stopped before its end (complete: "")


class _Live(TorchDispatchMode):
    def __init__(self, where_file: str) -> None:
        super().__init__()
        self.where_file = where_file
        self.live = 0
        self.peak = Peak()

    def _freed(self, nbytes: int) -> None:
        self.live -= nbytes

    def _where(self) -> str:
        for frame in reversed(traceback.extract_stack()):
            if frame.filename == self.where_file:
                return f"line {frame.lineno}"
        return ""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        out = func(*args, **(kwargs or {}))
        returns = func._schema.returns
        aliased = any(r.alias_info is not None for r in returns)
        if aliased:
            return out
        for t in tree_leaves(out):
            if not isinstance(t, torch.Tensor):
                continue
            try:
                nbytes = int(t.untyped_storage().nbytes())
            except Exception:  # noqa: BLE001 - a size that depends on values: not counted
                continue
            self.live += nbytes
            weakref.finalize(t, self._freed, nbytes)
            if self.live > self.peak.bytes:
                self.peak.bytes = self.live
            if nbytes > self.peak.largest[0] and (where := self._where()):
                self.peak.largest = (nbytes, str(func.overloadpacket.__name__), where)
        return out


def peak_of(fn: Callable[[], Any], where_file: str = "") -> Peak:
    """The peak bytes of ``fn()`` run on fake tensors (module doc): every tensor it creates is
    fake, tensors it is given that are real are read as fake ones. ``where_file``: the source
    file whose line is named for the largest tensor."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    live = _Live(where_file)
    # A reference that fails on fake tensors (a shape mismatch the real run reports in one line)
    # makes torch's fake-tensor module log the failure with its traceback at ERROR level: quiet
    # here, the failure is this function's result (the fuzz run's defect 001-traceback).
    quiet = logging.getLogger("torch._subclasses.fake_tensor")
    level = quiet.level
    quiet.setLevel(logging.CRITICAL)
    try:
        with FakeTensorMode(allow_non_fake_inputs=True), live:
            result = fn()
            del result
    except Exception as e:  # noqa: BLE001 - data-dependent sizes, a fake-only failure: a lower bound
        live.peak.complete = False
        live.peak.stopped = f"{type(e).__name__}"
    finally:
        quiet.setLevel(level)
    return live.peak
