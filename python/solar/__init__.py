"""SOLAR: speed-of-light analysis of deep-learning programs.

The Python package is a thin layer over SOLAR's C++ core (``solar._core``). This module exposes
the Affine Loop IR (docs/ir.md) on numpy arrays:

- ``parse(source)`` reads a program; ``format_ir(source)`` gives its canonical text;
- ``check(source, sizes)`` checks it and returns the value of every size;
- ``run(source, inputs, ...)`` executes it and returns its outputs.

``analyze(model_or_function, example_inputs, hw="H100-SXM", **options)`` captures a PyTorch (or
JAX) program, lowers it, verifies it and returns its SOL report (``solar.stages.Report``;
docs/capture.md); ``analyze_file(path, ...)`` does the same for a model file. torch and jax are
imported only when they are called.

The package, along the pipeline (docs/architecture.md): ``solar.ir`` (the IR on numpy arrays),
``solar.document`` (capture documents, framework-free), ``solar.stages`` (lower, verify, analyse,
report: framework-free; the checks in ``solar.verify``), the adapters ``solar.torch`` (PyTorch:
capture in ``solar.torch.capture``) and ``solar.jax`` (JAX), and ``solar.adapters``, which picks the
adapter.

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

from solar import _core
from solar._core import IRError, Program
from solar.ir import Source, check, format_ir, parse, random_inputs, run
from solar.ir import _input_addresses as _input_addresses  # for tests

__version__: str = _core.__version__

__all__ = [
    "IRError",
    "Program",
    "Source",
    "__version__",
    "analyze",
    "analyze_file",
    "check",
    "format_ir",
    "parse",
    "random_inputs",
    "run",
]


def analyze(model_or_function, example_inputs, hw: str = "H100-SXM", **options):
    """The SOL report (``solar.stages.Report``, ``.to_json()``) of
    ``model_or_function(*example_inputs)`` on device ``hw``: captured, lowered, verified against
    the framework's own run, analysed. ``solar.adapters.analyze``: a torch module or function
    goes to the PyTorch adapter, a function given JAX arrays (or a Flax nnx module) to the JAX
    one, with the same options (``solar.adapters.OPTIONS``). torch and jax are imported only
    when it is called."""
    from solar import adapters

    return adapters.analyze(model_or_function, example_inputs, hw=hw, **options)


def analyze_file(path, hw: str = "H100-SXM", **options):
    """``analyze`` on a model file (docs/capture.md, docs/jax.md): a file that imports jax or
    flax is a JAX model file, any other a PyTorch one (``solar.adapters.analyze_file``)."""
    from solar import adapters

    return adapters.analyze_file(path, hw=hw, **options)
