"""SOLAR: speed-of-light analysis of deep-learning programs.

The Python package is a thin layer over SOLAR's C++ core (``solar._core``). This module exposes
the Affine Loop IR (docs/ir.md) on numpy arrays:

- ``parse(source)`` reads a program; ``format_ir(source)`` gives its canonical text;
- ``check(source, sizes)`` checks it and returns the value of every size;
- ``run(source, inputs, ...)`` executes it and returns its outputs.

``analyze(model_or_function, example_inputs, hw="H100-SXM", **options)`` captures a PyTorch (or
JAX) program, lowers it, verifies it and returns its SOL report (``solar.frontend.Report``;
docs/capture.md). torch and jax are imported only when it is called.

``source`` is a ``Program``, a path (``os.PathLike``, or a one-line ``str`` ending in ``.ir``) or
IR text. Every user error (invalid IR, inputs that do not match, a run over the memory limit)
raises ``IRError``, a ``ValueError`` whose message is one line, ``file:line:col: error: ...`` for
problems in a program's text; its ``diagnostics`` attribute lists every diagnostic line.

Arrays are not copied where that can be avoided: an input that is C-contiguous and of its declared
dtype is read in place, and each output array owns the executor's buffer (``out.base`` is the
owner). bf16 and f8 tensors are exchanged as ``ml_dtypes`` arrays when ``ml_dtypes`` is
installed, and otherwise as their raw bits (``uint16`` for bf16, ``uint8`` for f8), which inputs
may use too.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import numpy as np

from solar import _core
from solar._core import IRError, Program

__version__: str = _core.__version__

__all__ = [
    "IRError",
    "Program",
    "__version__",
    "analyze",
    "check",
    "format_ir",
    "parse",
    "random_inputs",
    "run",
]

Source = Program | str | os.PathLike

# IR dtypes exchanged as raw bits, and the ml_dtypes names of the same types.
_BITS_DTYPES = {"bf16": np.uint16, "f8e4m3": np.uint8, "f8e5m2": np.uint8}
_ML_DTYPES_NAMES = {"bf16": "bfloat16", "f8e4m3": "float8_e4m3fn", "f8e5m2": "float8_e5m2"}


def analyze(model_or_function, example_inputs, hw: str = "H100-SXM", **options):
    """The SOL report (``solar.frontend.Report``, ``.to_json()``) of
    ``model_or_function(*example_inputs)`` on device ``hw``: captured, lowered, verified against
    the framework's own run, analysed. A torch module or function goes to
    ``solar.frontend.analyze`` (options: ``policy``, ``source``, ``allow_unsupported``,
    ``verify``, ``verify_mode``, ``verify_budget_mb``, ``verify_budget_s``, ``fidelity``,
    ``sol_options``); a function given JAX arrays to ``solar.jax.analyze`` (option: ``policy``)."""
    if _is_jax_call(model_or_function, example_inputs):
        from solar import jax as solar_jax

        return solar_jax.analyze(
            model_or_function, example_inputs, hw=hw, policy=options.get("policy")
        )
    from solar import frontend

    return frontend.analyze(model_or_function, example_inputs, hw=hw, **options)


def _is_jax_call(fn, example_inputs) -> bool:
    """Whether the call is a JAX one: not a torch module, and some input is a jax.Array (jax is
    then already imported: an array cannot exist without it)."""
    import sys

    torch = sys.modules.get("torch")
    if torch is not None and isinstance(fn, torch.nn.Module):
        return False
    jax = sys.modules.get("jax")
    if jax is None:
        return False

    def leaves(x):
        if isinstance(x, (list, tuple)):
            for v in x:
                yield from leaves(v)
        elif isinstance(x, dict):
            for v in x.values():
                yield from leaves(v)
        else:
            yield x

    return any(isinstance(x, jax.Array) for x in leaves(example_inputs))


def parse(source: Source) -> Program:
    """Parses a program from a path or from IR text; raises IRError at the first error."""
    if isinstance(source, Program):
        return source
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
    generic interpreter."""
    program = parse(source)
    outputs = _core.run(
        program, _to_core(program, inputs), dict(sizes or {}), memory_limit, fast_paths
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
