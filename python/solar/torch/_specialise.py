"""Capture specialised on the values of real inputs, by tracing on them (docs/capture.md,
"Values that decide the program").

A program whose sizes or control flow depend on its data (an MoE layer's dispatch: which tokens
go to which expert, a loop over ``.tolist()`` counts, ``if mask.any():``, ``x[mask]``) has no
graph that holds for every input. ``trace_real`` traces it with make_fx on the real inputs
(``tracing_mode="real"``): every op runs on the data while it is recorded, so each value the
program reads into Python (``.item()``, ``int()``, ``bool()``, ``.tolist()``, ``.numpy()``) is
the real one and the graph is the one these inputs run. The ops whose *output size* depends on
the data are replaced, while tracing, by ops of fixed sizes that compute the same values, given
the one number each depends on (read from the data, untraced, and named in the capture's
notes):

- ``nonzero(m)`` with ``c`` non-zero elements: the positions of the non-zero elements of the
  flattened ``m`` are scattered to their rank (a running count, ``cumsum``), the others to a
  spare slot ``c``; the first ``c`` slots are the flat positions, unravelled per dimension. The
  work of finding them stays in the program (read the mask, scan, scatter), so the SOL counts it;
- indexing and writing with a boolean mask (``x[m]``, ``x[m] = v``, ``masked_select``): the mask
  is turned into its ``nonzero`` positions, then indexed as integer indices are;
- ``bincount(x, weights, minlength)`` with ``max(x) + 1`` bins: an ``index_add`` of ones (or of
  the weights) into that many bins;
- ``repeat_interleave(repeats)`` with ``sum(repeats)`` outputs: marks at each group's start,
  added up by a running sum;
- ``one_hot(x)`` (its C++ form writes in place, which make_fx's functionalisation does not see
  on real tensors; replaced where the program calls it): a comparison with the class numbers,
  ``max(x) + 1`` of them unless given.

The capture holds for these inputs only (``Traced.specialised``) and its notes list every
value it was specialised on, with the user's line.
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch

aten = torch.ops.aten

_INDEX_DTYPES = (torch.bool, torch.uint8)


class Specialising:
    """The values a real-mode trace read from the data: ``(what, value, where)`` each, where
    is the user's line (``where()``, set by the tracer, gives it at the time of a read)."""

    def __init__(self) -> None:
        self.values: list[tuple[str, str, str]] = []
        self.where: Any = lambda: ""

    def note(self, what: str, value: str) -> None:
        self.values.append((what, value, self.where()))

    def summary(self) -> str:
        """The values, one entry per kind of read and line, in the order first read:
        ``what at WHERE: VALUE`` or ``what at WHERE, N times: V1, V2, ...`` (at most 8 shown)."""
        groups: dict[tuple[str, str], list[str]] = {}
        for what, value, where in self.values:
            groups.setdefault((what, where), []).append(value)
        parts = []
        for (what, where), values in groups.items():
            at = f" at {where}" if where else ""
            shown = ", ".join(values[:8]) + (", ..." if len(values) > 8 else "")
            times = f", {len(values)} times" if len(values) > 1 else ""
            parts.append(f"{what}{at}{times}: {shown}")
        return "; ".join(parts)


_current: list[Specialising] = []


def _note(what: str, value: str) -> None:
    if _current:
        _current[-1].note(what, value)


def _untraced() -> Any:
    """A context in which torch ops run on the real tensors without being recorded."""
    from torch.utils._python_dispatch import _disable_current_modes

    return _disable_current_modes()


def _nonzero(m: torch.Tensor) -> torch.Tensor:
    with _untraced():
        count = int(torch.count_nonzero(m))
    _note(f"nonzero of a {_shape(m)} tensor (elements found)", str(count))
    if m.dim() == 0:
        return torch.zeros((count, 0), dtype=torch.int64)
    n = m.numel()
    flat = m.reshape(-1) != 0
    rank = torch.cumsum(flat.to(torch.int64), 0) - 1
    slot = torch.where(flat, rank, torch.full((n,), count, dtype=torch.int64))
    slots = torch.zeros(count + 1, dtype=torch.int64)
    slots = aten.index_put.default(slots, [slot], torch.arange(n, dtype=torch.int64))
    positions = slots[:count]
    if m.dim() == 1:
        return positions.unsqueeze(1)
    columns = []
    stride = n
    for size in m.shape:
        stride //= size
        columns.append(torch.remainder(torch.div(positions, stride, rounding_mode="floor"), size))
    return torch.stack(columns, 1)


def _integer_indices(indices: list) -> list | None:
    """``indices`` with each boolean mask replaced by the integer positions of its true
    elements (one index per mask dimension); None when there is no mask."""
    if not any(i is not None and i.dtype in _INDEX_DTYPES for i in indices):
        return None
    out: list = []
    for index in indices:
        if index is not None and index.dtype in _INDEX_DTYPES:
            out.extend(aten.nonzero.default(index).unbind(1))
        else:
            out.append(index)
    return out


def _index(x: torch.Tensor, indices: list) -> Any:
    converted = _integer_indices(list(indices))
    if converted is None:
        return NotImplemented
    return aten.index.Tensor(x, converted)


def _index_put_with(op: Any) -> Any:
    """``op`` (``index_put`` or ``index_put_``) with its boolean masks as integer indices."""

    def index_put(x: torch.Tensor, indices: list, values: torch.Tensor, accumulate=False):
        converted = _integer_indices(list(indices))
        if converted is None:
            return NotImplemented
        return op(x, converted, values, accumulate)

    return index_put


def _masked_select(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    shape = torch.broadcast_shapes(x.shape, mask.shape)
    return _index(x.expand(shape), [mask.expand(shape)])


def _bincount(x: torch.Tensor, weights: Any = None, minlength: int = 0) -> torch.Tensor:
    with _untraced():
        largest = int(x.max()) if x.numel() else -1
    bins = max(largest + 1, minlength)
    _note(f"bincount of a {_shape(x)} tensor (bins)", str(bins))
    if weights is None:
        counts = torch.zeros(bins, dtype=torch.int64)
        return counts.index_add(0, x.to(torch.int64), torch.ones_like(x, dtype=torch.int64))
    # PyTorch's: float32 and float64 weights keep their dtype, any other sums in float64
    dtype = weights.dtype if weights.dtype in (torch.float32, torch.float64) else torch.float64
    sums = torch.zeros(bins, dtype=dtype)
    return sums.index_add(0, x.to(torch.int64), weights.to(dtype))


def _repeat_interleave(repeats: torch.Tensor, output_size: Any = None) -> torch.Tensor:
    with _untraced():
        total = int(repeats.sum()) if output_size is None else int(output_size)
    _note(f"repeat_interleave of a {_shape(repeats)} tensor (outputs)", str(total))
    k = repeats.shape[0]
    ends = torch.cumsum(repeats.to(torch.int64), 0)
    marks = torch.zeros(total + 1, dtype=torch.int64)
    if k > 1:  # group i (i >= 1) starts where group i - 1 ends
        marks = marks.index_add(0, ends[:-1], torch.ones(k - 1, dtype=torch.int64))
    return torch.cumsum(marks, 0)[:total]


def one_hot(x: torch.Tensor, num_classes: int = -1) -> torch.Tensor:
    if num_classes < 0:
        with _untraced():
            num_classes = int(x.max()) + 1 if x.numel() else 0
        _note(f"one_hot of a {_shape(x)} tensor (classes)", str(num_classes))
    classes = torch.arange(num_classes, dtype=x.dtype)
    return (x.unsqueeze(-1) == classes).to(torch.int64)


def _shape(t: torch.Tensor) -> str:
    return "[" + ", ".join(str(s) for s in t.shape) + "]"


def decompositions() -> dict:
    """The specialising replacements, by ATen op (a table for make_fx)."""
    return {
        aten.nonzero.default: _nonzero,
        aten.index.Tensor: _index,
        aten.index_put.default: _index_put_with(aten.index_put.default),
        aten.index_put_.default: _index_put_with(aten.index_put_.default),
        aten._unsafe_index_put.default: _index_put_with(aten.index_put.default),
        aten.masked_select.default: _masked_select,
        aten.bincount.default: _bincount,
        aten.repeat_interleave.Tensor: _repeat_interleave,
    }


@contextlib.contextmanager
def specialising(state: Specialising):
    """While active, the replacements note the values they read into ``state``."""
    _current.append(state)
    try:
        yield state
    finally:
        _current.pop()
