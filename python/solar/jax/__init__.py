"""The JAX adapter (docs/jax.md): JAX functions and Flax models -> capture ->
``solar.stages.run`` (lower, verify, analyse, report).

This subpackage imports jax, never torch; ``import solar`` imports neither.

- ``analyze(fn, example_inputs, hw="H100-SXM", **options)``: a ``solar.stages.Report`` for
  ``fn(*example_inputs)`` (a JAX function, or an ``nnx.Module`` instance).
- ``analyze_file(path, hw=..., **options)``: the same for a model file (``get_inputs()`` and
  ``forward`` or a Flax ``Model``).
- ``capture(fn, example_inputs)`` / ``capture_file(path)`` / ``load_model_file(path)``: the pieces;
  ``measure_file(path)``: the model file's jitted run, timed.
- ``train=True`` (``analyze``, ``analyze_file``; ``capture_train``): one training step,
  ``jax.value_and_grad`` of the loss and ``optimizer``'s update (``_train``, docs/training.md).

``options``: those of ``solar.stages.run`` (``solar.adapters.OPTIONS``), as for
PyTorch. Two differ in what they can do: per-op verification is not available for JAX (the
verification is then "not_run", and says so), and with ``allow_unsupported`` the outputs of the
nodes without a rule cannot be recorded from JAX's jitted run, so the rest of the program is
analysed but not verified (the report says so).

The capture document has the format of docs/capture.md with ``"framework": "jax"`` and ops named
``jax.<primitive>``; the lowering and verification are the pipeline's, shared with PyTorch.
"""

from __future__ import annotations

import inspect
import os
from dataclasses import dataclass, field
from typing import Any, ClassVar

import jax
import numpy as np

from solar import document as capture_document
from solar._modelfile import call_model_code, import_model_file
from solar.jax._capture import CaptureError, Draws, Leaf, flatten, record_draws, to_numpy
from solar.options import DEFAULT_HW, DEFAULT_POLICIES, Options
from solar.stages import Report, run
from solar.verify import GoldenUnavailableError

__all__ = [
    "CaptureError",
    "JaxCapture",
    "analyze",
    "analyze_file",
    "capture",
    "capture_file",
    "capture_train",
    "load_model_file",
    "measure_file",
    "program_data",
]


@dataclass
class JaxCapture:
    """A captured JAX program: the capture document, and how to compute its golden data."""

    document: dict
    constants: dict[str, np.ndarray]
    fn: Any = field(repr=False)
    leaves: list[Leaf] = field(repr=False)
    leaf_names: list[str | None] = field(repr=False)  # capture names (None: a PRNG key)
    draws: Draws | None = field(default=None, repr=False)
    # The Captured protocol (solar.stages): JAX runs the whole program only (no per-op check)
    # and is not rebuilt in float64; its default precision policy is jax-default.
    golden_notes: list[str] = field(default_factory=list, repr=False)
    agent: ClassVar[list[dict] | None] = None
    has_data: ClassVar[bool] = True
    rechecks_in_float64: ClassVar[bool] = False
    default_policy: ClassVar[str | None] = DEFAULT_POLICIES["jax"]
    translation: ClassVar[Any] = None
    twin: ClassVar[None] = None
    reduced: ClassVar[None] = None

    def in_float64(self) -> None:
        return None

    def per_op_cases(self, *args: Any) -> None:
        return None

    def to_json(self) -> str:
        return capture_document.to_json(self.document)

    def golden(self, wanted: Any = ()) -> dict[str, np.ndarray]:
        """Runs the program once with JAX (jitted, on its default device) and returns every
        input, weight and constant, every output and every random draw by capture name (the
        draws from the run whose outputs are returned: ``record_draws``). ``wanted``: the
        intermediates the verification needs; one that is not a random draw (the output of a
        node without a lowering rule) cannot be recorded from the jitted run:
        ``GoldenUnavailableError``."""
        arrays: dict[str, np.ndarray] = {}
        for name, leaf in zip(self.leaf_names, self.leaves, strict=True):
            if name is not None:  # a PRNG key is not a tensor of the program
                arrays[name] = to_numpy(leaf.value)
        arrays.update(self.constants)
        values = [leaf.value for leaf in self.leaves]
        if self.draws is None:
            results = jax.jit(self.fn)(*values)
        else:
            results, drawn = record_draws(self.draws, values)
            for names, draw in zip(self.draws.outputs, drawn, strict=True):
                for name, value in zip(names, draw, strict=True):
                    arrays[name] = to_numpy(value)
        for name, value in zip(self.document["outputs"], results, strict=True):
            if name not in arrays:
                arrays[name] = to_numpy(value)
        missing = [name for name in wanted if name not in arrays]
        if missing:
            raise GoldenUnavailableError(
                f"the outputs of unsupported nodes ({', '.join(missing)}) cannot be recorded from "
                "JAX's jitted run, and the rest of the program reads them"
            )
        return arrays


def capture(fn: Any, example_inputs: Any, source: str | None = None) -> JaxCapture:
    """Captures ``fn(*example_inputs)``: a JAX function, or an ``nnx.Module`` instance (its
    parameters become weights)."""
    inputs = _as_tuple(example_inputs)
    weights: dict = {}
    apply = fn
    try:
        from flax import linen, nnx
    except ImportError:  # flax is optional for plain JAX functions
        linen = nnx = None
    if nnx is not None and isinstance(fn, nnx.Module):
        graphdef, state = nnx.split(fn)
        weights = state

        def apply(state: Any, *xs: Any) -> Any:
            return nnx.merge(graphdef, state)(*xs)

    elif linen is not None and isinstance(fn, linen.Module):
        raise CaptureError(
            "a linen Module needs its variables: pass "
            "`lambda *xs: model.apply(variables, *xs)`, or use a model file (docs/jax.md)"
        )
    if not callable(fn):
        raise CaptureError(f"expected a JAX function, got {type(fn).__name__}")
    return _capture(apply, weights, inputs, _input_names(fn, len(inputs)), source or _source(fn))


def _capture(
    apply: Any, weights: Any, inputs: tuple, input_names: list[str], source: str | None
) -> JaxCapture:
    """``apply(*inputs)``, or ``apply(weights, *inputs)`` when there are weights."""
    leaves, call = program_leaves(apply, weights, inputs, input_names)

    def flat_fn(*flat: Any) -> list:
        return jax.tree_util.tree_leaves(call(*flat)[0])

    flat = flatten(flat_fn, leaves, source)
    return JaxCapture(flat.document, flat.constants, flat_fn, leaves, flat.leaf_names, flat.draws)


def program_leaves(
    apply: Any, weights: Any, inputs: tuple, input_names: list[str]
) -> tuple[list[Leaf], Any]:
    """The flattened arguments of ``apply`` (weights first, then the inputs' pytree leaves) and
    ``call(*flat) -> (result, inputs)``: ``apply`` on them, and the inputs rebuilt."""
    leaves: list[Leaf] = []
    w_paths, w_tree = jax.tree_util.tree_flatten_with_path(weights)
    for path, value in w_paths:
        collection = _key(path[0]) if path else ""
        # linen's batch_stats and cache collections are buffers; every other leaf is a weight
        role = "buffer" if collection in ("batch_stats", "cache") else "weight"
        leaves.append(Leaf(_weight_name(path), role, value))
    x_tree = []
    for name, x in zip(input_names, inputs, strict=True):
        x_paths, treedef = jax.tree_util.tree_flatten_with_path(x)
        x_tree.append((treedef, len(x_paths)))
        for path, value in x_paths:
            leaf_name = "_".join([name] + [_key(k) for k in path])
            leaves.append(Leaf(leaf_name, "input", _as_array(value, leaf_name)))
    n_weights = len(w_paths)
    has_weights = n_weights > 0

    def call(*flat: Any) -> tuple[Any, list]:
        ws = jax.tree_util.tree_unflatten(w_tree, flat[:n_weights])
        xs, at = [], n_weights
        for treedef, n in x_tree:
            xs.append(jax.tree_util.tree_unflatten(treedef, flat[at : at + n]))
            at += n
        return (apply(ws, *xs) if has_weights else apply(*xs)), xs

    return leaves, call


def load_model_file(path: str | os.PathLike) -> tuple[Any, Any, tuple, list[str]]:
    """A JAX model file as ``(apply, weights, inputs, input_names)``: ``forward(*get_inputs())``
    (no weights), or a Flax ``Model(*get_init_inputs())`` (linen: ``init`` with
    ``jax.random.PRNGKey(0)``; nnx: built with ``rngs=nnx.Rngs(0)``)."""
    return _load_model_file(path)[1:]


def _load_model_file(path: str | os.PathLike) -> tuple[Any, Any, Any, tuple, list[str]]:
    """``(module, *load_model_file(path))``: the imported file first."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise CaptureError(f"{path}: no such file")
    name = "_solar_jax_model_" + os.path.splitext(os.path.basename(path))[0].replace("-", "_")
    module = import_model_file(path, name, CaptureError)  # its errors: one line, file:line
    if not hasattr(module, "get_inputs"):
        raise CaptureError(f"{path}: defines no 'get_inputs' (docs/jax.md: model files)")
    inputs = _as_tuple(call_model_code(path, "get_inputs()", CaptureError, module.get_inputs))
    if hasattr(module, "forward"):
        return module, module.forward, {}, inputs, _input_names(module.forward, len(inputs))
    if not hasattr(module, "Model"):
        raise CaptureError(
            f"{path}: defines neither 'forward' nor 'Model' (a JAX model file defines get_inputs()"
            " and forward(*inputs) or a Flax Model; docs/jax.md)"
        )
    from flax import linen, nnx

    cls = module.Model
    init = ()
    if hasattr(module, "get_init_inputs"):
        init = call_model_code(path, "get_init_inputs()", CaptureError, module.get_init_inputs)
        init = tuple(init)
    if isinstance(cls, type) and issubclass(cls, linen.Module):
        model = call_model_code(path, "Model(...)", CaptureError, lambda: cls(*init))
        variables = call_model_code(
            path, "Model.init", CaptureError, lambda: model.init(jax.random.PRNGKey(0), *inputs)
        )

        def apply(variables: Any, *xs: Any) -> Any:
            return model.apply(variables, *xs)

        return module, apply, variables, inputs, _input_names(model.__call__, len(inputs))
    if isinstance(cls, type) and issubclass(cls, nnx.Module):
        takes_rngs = "rngs" in inspect.signature(cls.__init__).parameters
        model = call_model_code(
            path,
            "Model(...)",
            CaptureError,
            lambda: cls(*init, rngs=nnx.Rngs(0)) if takes_rngs else cls(*init),
        )
        graphdef, state = nnx.split(model)

        def apply_nnx(state: Any, *xs: Any) -> Any:
            return nnx.merge(graphdef, state)(*xs)

        return module, apply_nnx, state, inputs, _input_names(model.__call__, len(inputs))
    raise CaptureError(f"{path}: Model is not a flax.linen or flax.nnx Module")


# XLA's default precision runs fp32 dots and convolutions on TF32 tensor cores (NVIDIA) or in
# one bf16 pass (TPU); PyTorch's default runs fp32 matmuls at the fp32 rate. A JAX program is
# analysed under JAX's default unless a policy is given (docs/precision.md).
DEFAULT_POLICY = DEFAULT_POLICIES["jax"]


def analyze(
    fn: Any,
    example_inputs: Any,
    hw: str = DEFAULT_HW,
    source: str | None = None,
    stage_times: dict[str, float] | None = None,
    **options: Any,
) -> Report:
    """Captures ``fn(*example_inputs)``, lowers it, verifies it against JAX on the same inputs
    and returns its SOL report on device ``hw`` (``options``: ``solar.options.Options.of``'s
    keywords). ``train=True``: one training step instead, ``jax.value_and_grad`` of
    ``loss(output, *inputs)`` (default: the sum of the outputs) with respect to an nnx Module's
    ``nnx.Param`` variables, then ``optimizer``'s update (None: none) (docs/training.md)."""
    opts = Options.of(hw, **options)
    program = opts.program

    def captured() -> JaxCapture:
        if program.kind == "train":
            return capture_train(fn, example_inputs, program.loss, program.optimizer, source)
        return capture(fn, example_inputs, source=source)

    return run(captured, opts, stage_times)


def analyze_file(
    path: str | os.PathLike,
    hw: str = DEFAULT_HW,
    stage_times: dict[str, float] | None = None,
    **options: Any,
) -> Report:
    """``analyze`` on a JAX model file (docs/jax.md); ``train``: its training step, the loss
    being the file's ``get_loss(output, *inputs)`` when it defines one, and ``optimizer``'s
    update (docs/training.md)."""
    opts = Options.of(hw, **options)
    return run(lambda: captured_file(path, opts), opts, stage_times)


def captured_file(path: str | os.PathLike, options: Options) -> JaxCapture:
    """A JAX model file's forward or training step (``options.program``), captured."""
    program = options.program
    return capture_file(path, program.kind == "train", program.optimizer)[0]


def capture_file(
    path: str | os.PathLike, train: bool = False, optimizer: str | None = None
) -> tuple[JaxCapture, Any]:
    """``(capture, golden)`` of a JAX model file; ``golden()`` runs it once with JAX.
    ``train``: the capture of its training step (``capture_train``), with ``optimizer``."""
    module, apply, weights, inputs, names = _load_model_file(path)
    source = os.path.basename(os.fspath(path))
    if not train:
        cap = _capture(apply, weights, inputs, names, source)
        return cap, cap.golden
    loss = getattr(module, "get_loss", None)
    if loss is not None and not callable(loss):
        raise CaptureError(f"{path}: get_loss is not a function (get_loss(output, *inputs))")
    cap = _capture_train(apply, weights, inputs, names, source, (loss, optimizer))
    return cap, cap.golden


def capture_train(
    fn: Any,
    example_inputs: Any,
    loss: Any = None,
    optimizer: str | None = None,
    source: str | None = None,
) -> JaxCapture:
    """The training step of ``fn(*example_inputs)`` (an ``nnx.Module`` instance: its
    ``nnx.Param`` variables are differentiated), with ``optimizer``'s update (None: none), as a
    capture (docs/training.md, "JAX")."""
    from flax import nnx

    if loss is not None and not callable(loss):
        raise CaptureError(f"the loss must be a function of (output, *inputs), not {loss!r}")
    inputs = _as_tuple(example_inputs)
    if not isinstance(fn, nnx.Module):
        raise CaptureError(
            "--train: a plain JAX function has no parameters to differentiate (its arguments"
            " are inputs); pass a Flax nnx Module (docs/training.md)"
        )
    graphdef, state = nnx.split(fn)

    def apply(state: Any, *xs: Any) -> Any:
        return nnx.merge(graphdef, state)(*xs)

    names = _input_names(fn, len(inputs))
    step = (loss, optimizer)
    return _capture_train(apply, state, inputs, names, source or _source(fn), step)


def _capture_train(
    apply: Any,
    weights: Any,
    inputs: tuple,
    input_names: list[str],
    source: str | None,
    step: tuple[Any, str | None],
) -> JaxCapture:
    """The training step of ``apply``: ``step`` is (the loss or None, the optimizer or None)."""
    loss, optimizer = step
    from solar.jax._train import train_capture, trainable

    leaves, call = program_leaves(apply, weights, inputs, input_names)
    mask = trainable(weights, leaves)
    flat, step, leaves = train_capture(call, leaves, mask, loss, source, optimizer)
    return JaxCapture(flat.document, flat.constants, step, leaves, flat.leaf_names, flat.draws)


def measure_file(
    path: str | os.PathLike, device: str | None = None, warmup: int = 3, repeats: int = 20
) -> Any:
    """Times the jitted run of a JAX model file on JAX's default device (wall clock around
    ``jax.block_until_ready``, after ``warmup`` runs, which include the compilation): a
    ``solar.timing.clock.Timing``. ``device`` ("cpu" or "cuda"; None: any) must be that device."""
    from solar.timing.clock import Timing, cpu_device_name, sanitize_name, wall_clock

    if device not in (None, "cpu", "cuda"):
        raise ValueError(f"unknown device '{device}' (cpu or cuda)")
    target = jax.devices()[0]
    if device is not None and target.platform != {"cuda": "gpu"}.get(device, device):
        raise ValueError(
            f"--measure-device {device}: a JAX model runs on JAX's default device, a "
            f"{target.platform} here"
        )
    apply, weights, inputs, _names = load_model_file(path)
    args = (weights, *inputs) if jax.tree_util.tree_leaves(weights) else inputs
    run = jax.jit(apply)

    def once() -> object:
        return jax.block_until_ready(run(*args))

    samples, inner = wall_clock(once, warmup, repeats)
    if target.platform == "cpu":
        name = cpu_device_name()
    else:
        name = sanitize_name(target.device_kind)
    method = (
        f"JAX jit on {target.platform}, wall clock around jax.block_until_ready, {warmup} "
        f"warm-up runs (the first compiles), {inner} run(s) per sample"
    )
    return Timing(samples, name, method)


def _as_tuple(inputs: Any) -> tuple:
    return tuple(inputs) if isinstance(inputs, (list, tuple)) else (inputs,)


def _as_array(value: Any, name: str) -> Any:
    if not hasattr(value, "shape") or not hasattr(value, "dtype"):
        raise CaptureError(f"input '{name}' is a {type(value).__name__}, not an array")
    return value


def _input_names(fn: Any, n: int) -> list[str]:
    """The names of fn's first n positional parameters (``x0, x1, ...`` where unknown)."""
    try:
        params = [
            p.name
            for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        params = []
    names = params[:n] if len(params) >= n else []
    return names or [f"x{i}" for i in range(n)]


def _key(k: Any) -> str:
    for attr in ("key", "name", "idx"):
        if hasattr(k, attr):
            return str(getattr(k, attr))
    return str(k)


def _weight_name(path: tuple) -> str:
    """``params/Dense_0/kernel`` -> ``Dense_0_kernel``; nnx ``l/kernel/value`` -> ``l_kernel``."""
    keys = [_key(k) for k in path]
    if len(keys) > 1 and keys[0] == "params":
        keys = keys[1:]
    if len(keys) > 1 and keys[-1] == "value":
        keys = keys[:-1]
    return "_".join(keys) or "w"


def _source(fn: Any) -> str | None:
    try:
        return os.path.basename(inspect.getsourcefile(fn) or "") or None
    except (TypeError, OSError):
        return None


def program_data(path: str | os.PathLike) -> tuple[list, list, list]:
    """``solar.torch.program_data`` for a JAX model file (``load_model_file``): the Flax
    variables are the weights, named as this adapter names them (``Dense_0_kernel``)."""
    from solar.jax._capture import DTYPES

    def leaf(x: Any) -> tuple[str, np.ndarray]:
        a = np.asarray(x)
        if a.dtype.name not in DTYPES:
            raise CaptureError(f"{path}: dtype {a.dtype.name} has no SOLAR dtype")
        return DTYPES[a.dtype.name], to_numpy(a)

    apply, variables, args, _names = load_model_file(path)
    paths = jax.tree_util.tree_flatten_with_path(variables)[0]
    result = apply(variables, *args) if paths else apply(*args)
    inputs = [leaf(x) for x in jax.tree_util.tree_leaves(args)]
    weights, taken = [], {f"in{i}" for i in range(len(inputs))}
    for key_path, value in paths:
        name = _weight_name(key_path)
        while name in taken:
            name += "_"
        taken.add(name)
        weights.append((name, jax.tree_util.keystr(key_path), *leaf(value)))
    return inputs, weights, [leaf(x) for x in jax.tree_util.tree_leaves(result)]
