"""The Affine Loop IR on numpy arrays (docs/ir.md), the core's own functions: ``parse``,
``format_ir``, ``check``, ``run`` and ``random_inputs``; ``import solar`` re-exports them.
Framework-free: imports numpy and ``solar._core`` only.

``source`` is a ``Program``, a lowering's ``LoweringResult`` (its program, parsed and checked
once), a path (``os.PathLike``, or a one-line ``str`` ending in ``.ir``) or IR text. Every user
error raises ``IRError`` (a ``ValueError`` with a one-line message).
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Mapping

import numpy as np

from solar import _core
from solar._core import LoweringResult, Program

Source = Program | LoweringResult | str | os.PathLike

# IR dtypes exchanged as raw bits, and the ml_dtypes names of the same types.
_BITS_DTYPES = {"bf16": np.uint16, "f8e4m3": np.uint8, "f8e5m2": np.uint8}
_ML_DTYPES_NAMES = {"bf16": "bfloat16", "f8e4m3": "float8_e4m3fn", "f8e5m2": "float8_e5m2"}


def parse(source: Source) -> Program:
    """Parses a program from a path or from IR text; raises IRError at the first error."""
    if isinstance(source, Program):
        return source
    if isinstance(source, LoweringResult):
        return source.program
    if isinstance(source, os.PathLike) or (
        isinstance(source, str) and "\n" not in source and source.endswith(".ir")
    ):
        return _core.parse_file(os.fspath(source))
    if isinstance(source, str):
        return _core.parse(source)
    raise TypeError(f"expected a Program, a path or IR text, not {type(source).__name__}")


def format_ir(source: Source) -> str:
    """The canonical text of a program (what ``solar ir fmt`` prints)."""
    return _core.print(parse(source))


def check(source: Source, sizes: Mapping[str, int] | None = None) -> dict[str, int]:
    """Checks a program with optional size overrides; returns the value of every size.

    Raises IRError listing every problem (``err.diagnostics``)."""
    return _core.check(parse(source), dict(sizes or {}))


def run(
    source: Source,
    inputs: Mapping[str, np.ndarray],
    sizes: Mapping[str, int] | None = None,
    memory_limit: int | None = None,
    fast_paths: bool = True,
) -> dict[str, np.ndarray]:
    """Runs a program on numpy arrays and returns its outputs by name.

    ``inputs`` holds every input and weight. An array whose dtype differs from the declared one is
    converted when every value is exactly representable (e.g. int64 indices for an ``i32``
    input), and refused otherwise. ``memory_limit`` (bytes, default 8 GiB) makes runs whose
    tensors would need more fail before allocating; ``fast_paths=False`` runs every kernel on the
    generic interpreter. A ``LoweringResult`` is not checked again (at no ``sizes``)."""
    program = parse(source)
    checked = source if isinstance(source, LoweringResult) else program
    outputs = _core.run(
        checked, _to_core(program, inputs), dict(sizes or {}), memory_limit, fast_paths
    )
    return _from_core(program, outputs)


def random_inputs(
    source: Source, sizes: Mapping[str, int] | None = None, seed: int = 0
) -> dict[str, np.ndarray]:
    """The seeded random inputs ``solar ir run --random-inputs --seed SEED`` uses."""
    program = parse(source)
    return _from_core(program, _core.random_inputs(program, dict(sizes or {}), seed))


def _declared_dtypes(program: Program) -> dict[str, str]:
    return {name: dtype for name, _role, dtype in program.tensors}


def _to_core(program: Program, inputs: Mapping[str, object]) -> dict[str, np.ndarray]:
    """The arrays handed to the core: C-contiguous, bf16/f8 as raw bits; no copy when possible."""
    declared = _declared_dtypes(program)
    arrays = {}
    for name, value in inputs.items():
        array = np.asarray(value)
        dtype = declared.get(name)
        if dtype in _BITS_DTYPES and array.dtype.name == _ML_DTYPES_NAMES[dtype]:
            array = array.view(_BITS_DTYPES[dtype])  # a view: no copy
        if not array.flags.c_contiguous:
            array = np.ascontiguousarray(array)  # (which would also make a 0-d array 1-d)
        arrays[name] = array
    return arrays


def _input_addresses(source: Source, inputs: Mapping[str, object]) -> dict[str, int]:
    """For tests: the address of the memory each input is run from, imported exactly as run()
    imports it; it equals the caller's ``array.ctypes.data`` when the input is not copied."""
    program = parse(source)
    return _core._input_addresses(program, _to_core(program, inputs))


def _from_core(program: Program, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    declared = _declared_dtypes(program)
    ml_dtypes = _ml_dtypes()
    result = {}
    for name, array in arrays.items():
        dtype = declared.get(name)
        if ml_dtypes is not None and dtype in _ML_DTYPES_NAMES:
            array = array.view(getattr(ml_dtypes, _ML_DTYPES_NAMES[dtype]))  # a view: no copy
        result[name] = array
    return result


def _ml_dtypes():
    try:
        import ml_dtypes
    except ImportError:
        return None
    return ml_dtypes


def run_cli_captured(args: list[str]) -> tuple[int, str, str]:
    """``_core.run_cli(args)`` with its stdout and stderr captured (run_cli writes them to
    ``sys.stdout`` / ``sys.stderr`` when the command is done)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = _core.run_cli(args)
    return rc, out.getvalue(), err.getvalue()
