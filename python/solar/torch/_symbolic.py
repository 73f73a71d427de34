"""One capture with symbolic sizes, re-specialised to each set of concrete inputs without tracing
again (docs/benchmarks.md, "Capture once, bind each workload").

- ``capture_symbolic(module, tensors, dynamic, source)``: ``Symbolic``: ``module(*tensors)``
  traced once by torch.export with the dimensions in ``dynamic`` symbolic (``Dim.AUTO``: export
  keeps a dimension symbolic where the program allows, and fixes it where the program decides on
  its value).
- ``Symbolic.bind(tensors)``: ``(capture, sizes)``: the capture document written for the sizes
  of ``tensors`` (``_serialize.serialize`` with every symbol bound), or a ``NotBoundError``
  naming why the symbolic capture does not hold for them: a dimension export fixed, two
  dimensions it found equal that differ here, or a guard of the trace (torch's ShapeEnv: the
  conditions on the sizes under which the traced graph is the program's) that these sizes
  break.

The IR's lowering reads concrete shapes, so each workload is still lowered, verified and
analysed at its own sizes; only the trace (torch.export and its decompositions, the costly part)
is shared.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from solar.torch._serialize import serialize
from solar.torch._trace import Traced, _first_line, trace
from solar.torch.capture import Capture

__all__ = ["NotBoundError", "Symbolic", "capture_symbolic"]


class NotBoundError(Exception):
    """The symbolic capture does not hold for some inputs (the message says why, one line)."""


@dataclass
class Symbolic:
    traced: Traced
    source: str | None
    names: list[str]  # the tensor inputs' names, in the traced module's order

    def _inputs(self) -> list[tuple[str, torch.Tensor]]:
        """(name, traced value) of each tensor input, in order."""
        by_index = {}
        for node in self.traced.graph.nodes:
            binding = self.traced.placeholders.get(node.name)
            if node.op == "placeholder" and binding is not None and binding.kind == "input":
                by_index[binding.index] = node.meta.get("val")
        return [(self.names[i], by_index[i]) for i in sorted(by_index)]

    def symbols(self) -> dict[Any, str]:
        """Each symbol of the inputs' sizes, and the first dimension it stands for
        (``A.shape[0]``)."""
        out: dict[Any, str] = {}
        for name, value in self._inputs():
            for d, size in enumerate(value.shape):
                if isinstance(size, torch.SymInt) and size.node.expr.is_Symbol:
                    out.setdefault(size.node.expr, f"{name}.shape[{d}]")
        return out

    def bind(self, tensors: tuple) -> tuple[Capture, dict[str, int]]:
        """The capture specialised to ``tensors``' sizes and the bound sizes by dimension
        (``{"A.shape[0]": 16}``); ``NotBoundError`` when it does not hold for them."""
        import sympy

        sizes: dict[Any, int] = {}
        inputs = self._inputs()
        if len(inputs) != len(tensors):
            raise NotBoundError(
                f"{len(tensors)} tensor inputs, the symbolic capture has {len(inputs)}"
            )
        for (name, traced), actual in zip(inputs, tensors, strict=True):
            if not isinstance(actual, torch.Tensor) or actual.dtype != traced.dtype:
                raise NotBoundError(
                    f"input '{name}' is {_kind(actual)}, the symbolic capture's {traced.dtype}"
                )
            if actual.dim() != traced.dim():
                raise NotBoundError(
                    f"input '{name}' has {actual.dim()} dimensions, not {traced.dim()}"
                )
            for d, (size, n) in enumerate(zip(traced.shape, actual.shape, strict=True)):
                expr = size.node.expr if isinstance(size, torch.SymInt) else sympy.Integer(size)
                if expr.is_Symbol and sizes.setdefault(expr, int(n)) != n:
                    raise NotBoundError(
                        f"{name}.shape[{d}] = {n} differs from a dimension the symbolic "
                        f"capture found equal to it ({sizes[expr]})"
                    )
                if expr.is_Integer and int(expr) != n:
                    raise NotBoundError(
                        f"the symbolic capture fixed {name}.shape[{d}] at {expr}, here {n}"
                    )
        dims = self.symbols()
        for (name, traced), actual in zip(inputs, tensors, strict=True):
            for d, (size, n) in enumerate(zip(traced.shape, actual.shape, strict=True)):
                if isinstance(size, torch.SymInt) and not size.node.expr.is_Symbol:
                    if _evaluate(size.node.expr, sizes, dims) != n:
                        raise NotBoundError(f"{name}.shape[{d}] = {n} is not {size.node.expr}")
        shape_env = _shape_env(inputs)
        if shape_env is not None:
            # the symbols export replaced by others (a dimension found equal to another): their
            # values, for the guards written with them
            for symbol, expr in shape_env.replacements.items():
                if symbol not in sizes and expr.free_symbols <= set(sizes):
                    sizes[symbol] = int(_evaluate(expr, sizes, dims))
            for symbol, n in sizes.items():
                ranges = shape_env.var_to_range.get(symbol)
                if ranges is not None and not ranges.lower <= n <= ranges.upper:
                    raise NotBoundError(
                        f"the symbolic capture holds for {dims.get(symbol, symbol)} in "
                        f"{_range(ranges)}, here {n}"
                    )
            for guard in shape_env.guards:
                if not _evaluate(guard.expr, sizes, dims):
                    raise NotBoundError(
                        f"the symbolic capture's guard {_named(guard.expr, dims)} fails here "
                        f"({_bindings(sizes, dims)})"
                    )
        try:
            document, fx_to_name, elements = serialize(self.traced, self.source, sizes)
        except Exception as e:  # a size it cannot write at these sizes: captured alone
            raise NotBoundError(f"{type(e).__name__}: {_first_line(str(e))}") from e
        return Capture(document, self.traced, fx_to_name, elements), {
            dims[s]: n for s, n in sizes.items() if s in dims
        }


def capture_symbolic(
    module: torch.nn.Module, tensors: tuple, dynamic: list[list[int]], source: str | None
) -> Symbolic:
    """``module(*tensors)`` traced once with ``dynamic[i]``, the dimensions of tensor ``i`` to
    keep symbolic (those of size 0 or 1 stay fixed: export fixes them); a CaptureError when
    torch.export cannot (the caller captures each workload alone)."""
    from torch.export import Dim

    shapes = tuple(
        {d: Dim.AUTO for d in dims if t.shape[d] >= 2} or None
        for t, dims in zip(tensors, dynamic, strict=True)
    )
    names = list(_parameter_names(module))
    traced = trace(module, tuple(tensors), dynamic_shapes=shapes)
    return Symbolic(traced, source, names)


def _parameter_names(module: torch.nn.Module) -> list[str]:
    import inspect

    return list(inspect.signature(module.forward).parameters)


def _shape_env(inputs: list[tuple[str, torch.Tensor]]) -> Any:
    for _name, value in inputs:
        for size in value.shape:
            if isinstance(size, torch.SymInt):
                return size.node.shape_env
    return None


def _evaluate(expr: Any, sizes: dict, dims: dict) -> Any:
    """``expr`` under ``sizes`` (Python's semantics); a symbol without a value refuses."""
    from torch.utils._sympy.interp import sympy_interp
    from torch.utils._sympy.reference import PythonReferenceAnalysis

    free = [s for s in expr.free_symbols if s not in sizes]
    if free:
        raise NotBoundError(
            f"the symbolic capture's condition {_named(expr, dims)} depends on more than sizes"
        )
    try:
        return sympy_interp(PythonReferenceAnalysis, sizes, expr)
    except Exception as e:  # a function the reference semantics lacks: not bound
        raise NotBoundError(
            f"the symbolic capture's condition {_named(expr, dims)} cannot be evaluated "
            f"({type(e).__name__})"
        ) from e


def _named(expr: Any, dims: dict) -> str:
    """``expr`` with each symbol written as the dimension it stands for."""
    import sympy

    return str(expr.xreplace({s: sympy.Symbol(dims.get(s, str(s))) for s in expr.free_symbols}))


def _range(ranges: Any) -> str:
    """``[2, 8]``, ``[2, inf)``."""
    import sympy
    from torch.utils._sympy.numbers import int_oo

    if ranges.upper in (int_oo, sympy.oo):
        return f"[{ranges.lower}, inf)"
    return f"[{ranges.lower}, {ranges.upper}]"


def _bindings(sizes: dict, dims: dict) -> str:
    return ", ".join(f"{dims[s]} = {n}" for s, n in sizes.items() if s in dims)


def _kind(value: Any) -> str:
    return str(value.dtype) if isinstance(value, torch.Tensor) else type(value).__name__
