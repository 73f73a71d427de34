"""Capture of PyTorch programs into SOLAR's capture format (docs/capture.md).

This subpackage imports torch; ``import solar`` does not import it (the CLI and
``solar.analyze`` import this subpackage only when they need it).

- ``load_model_file(path)``: the model and inputs of a benchmark-style file (``class Model``,
  ``get_inputs()``, ``get_init_inputs()``), seeded with ``torch.manual_seed(0)``.
- ``capture_model_file(path)``: the capture of a model file built with FakeTensors (no memory).
- ``capture(model, inputs, source=None)``: traces ``model(*inputs)`` and returns a ``Capture``
  (the JSON document, and what is needed to make golden data).
- ``Capture.golden(model, inputs, intermediates=())``: runs the real model once and returns
  every input, weight, buffer, constant (plain tensor attributes included) and output (and the
  intermediates asked for) as numpy arrays by capture name. A graph that draws a dropout mask,
  or a request for intermediates, is run over the captured graph instead
  (``_golden.run_graph``), with a deterministic dropout mask; ``Capture.golden_notes`` then says
  so.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import torch

from solar import document as capture_document
from solar._modelfile import call_model_code, import_model_file, within_build_budget
from solar.document import write_npz
from solar.options import AnalysisError
from solar.torch._golden import has_fp4_products, has_random_dropout, run_graph, to_numpy
from solar.torch._serialize import serialize
from solar.torch._trace import (
    CaptureError,
    DataDependentError,
    Traced,
    cuda_note,
    on_cpu_mode,
    trace,
)
from solar.verify.float64 import NO_FLOAT64_MODEL, Float64UnavailableError
from solar.verify.per_op import OpConfig

# transformers warns, once per kernel, that a hybrid's layers fall back to their reference
# PyTorch implementation (causal_conv1d, flash-linear-attention not installed): SOLAR traces
# and runs that reference on purpose, so the advice to install the CUDA kernels is noise here.
logging.getLogger("transformers.integrations.hub_kernels").setLevel(logging.ERROR)

__all__ = [
    "Capture",
    "CaptureError",
    "capture",
    "capture_model_file",
    "capture_train",
    "check_real_build",
    "is_fake",
    "without_weights",
    "load_model_file",
    "model_module",
    "to_float64",
    "to_numpy",
    "write_npz",
]

DETERMINISTIC_DROPOUT_NOTE = (
    "dropout made deterministic for verification: PyTorch's run used SOLAR's mask "
    "(element i kept iff frac((i + 1) * 0.6180339887498949) >= p; docs/capture.md)"
)
FP4_PRODUCTS_NOTE = (
    "packed fp4 products (_scaled_mm, NVFP4) verified against their definition run on the CPU: "
    "operands decoded and scaled per 16-value block, an f32 product (docs/precision.md)"
)


@dataclass
class Capture:
    document: dict
    traced: Traced
    fx_to_name: dict[str, str]
    elements: dict[str, list[str | None]] = field(default_factory=dict)  # multi-output FX nodes
    golden_notes: list[str] = field(default_factory=list)  # how the last golden run was made
    # A failed whole-program check is rechecked in float64
    # (solar.verify.float64.recheck_in_float64).
    rebuilds_in_float64: ClassVar[bool] = True

    def __post_init__(self) -> None:
        # The trace's own notes (the values it was specialised on) stand before any golden
        # run: a program verified per op or on a reduced workload lists them too.
        if not self.golden_notes:
            self.golden_notes = list(self.traced.notes)

    @property
    def method(self) -> str:
        return self.document["capture_method"]

    def to_json(self) -> str:
        """The document as text (``solar.document.to_json``: the same model and inputs give the
        same bytes)."""
        return capture_document.to_json(self.document)

    def holds_fake_values(self) -> bool:
        """Whether a capture of FakeTensors may hold fake values (lifted constants; make_fx
        keeps constants as attributes of its graph module): the real model is then captured
        again for its golden run."""
        if self.method != "torch.export":
            return True
        return any(b.kind == "constant" for b in self.traced.placeholders.values())

    def golden(self, model: Any, inputs: tuple, intermediates: Any = ()) -> dict[str, np.ndarray]:
        """Runs ``model(*inputs)`` once, for real, and returns every graph input, weight, buffer
        and constant (their values before the run) and every graph output, by capture name,
        plus the tensors named in ``intermediates``.

        The model itself runs unless the graph draws a dropout mask or intermediates are asked
        for: then the captured graph runs (a torch.fx.Interpreter, deterministic dropout), which
        leaves the model's buffers as they were. In the model's own run, a module in training
        mode updates its buffers (BatchNorm running statistics)."""
        from torch.utils import _pytree as pytree

        module = model if isinstance(model, torch.nn.Module) else None
        flat_inputs = [t for t in pytree.tree_leaves(inputs)]
        arrays: dict[str, np.ndarray] = {}
        placeholder_values = {}
        for fx_name, binding in self.traced.placeholders.items():
            if binding.kind == "input":
                value = flat_inputs[binding.index]
            elif binding.kind == "weight":
                value = module.get_parameter(binding.target)
            elif binding.kind == "buffer":
                value = module.get_buffer(binding.target)
            elif binding.kind == "attribute":
                value = _attribute(module, binding.target)
            else:
                value = binding.value
            placeholder_values[fx_name] = value
            name = self.fx_to_name.get(fx_name)
            if name is not None:
                arrays[name] = to_numpy(value)  # a copy: taken before the run mutates buffers
        wanted = set(intermediates)
        random_dropout = has_random_dropout(self.traced.graph)
        self.golden_notes = list(self.traced.notes)
        fp4_products = has_fp4_products(self.traced.graph)
        if wanted or random_dropout or fp4_products or self.traced.golden_from_graph:
            if random_dropout:
                self.golden_notes.append(DETERMINISTIC_DROPOUT_NOTE)
            if fp4_products:
                self.golden_notes.append(FP4_PRODUCTS_NOTE)
            self._golden_from_graph(placeholder_values, wanted, arrays)
            return arrays
        with torch.no_grad(), on_cpu_mode(), _program_failure():
            result = model(*inputs)
        flat_outputs = [t for t in pytree.tree_leaves(result) if isinstance(t, torch.Tensor)]
        for node, binding in self.traced.outputs:
            name = self.fx_to_name[node.name]
            if binding.kind == "output":
                value = flat_outputs[binding.index]
            elif binding.kind == "input_mutation":  # the whole new value: the input, updated
                value = flat_inputs[binding.index]
            elif binding.kind == "attribute_update":
                value = _attribute(module, binding.target)
            else:
                value = module.get_buffer(binding.target)
            if name not in arrays:  # an output that is an input keeps the input's value
                arrays[name] = to_numpy(value)
        return arrays

    def _golden_from_graph(
        self, placeholder_values: dict[str, Any], wanted: set[str], arrays: dict[str, np.ndarray]
    ) -> None:
        """Runs the captured graph; adds its outputs and the ``wanted`` tensors to ``arrays``."""
        graph = self.traced.graph
        args = []
        for node in graph.nodes:
            if node.op != "placeholder":
                continue
            if node.name not in placeholder_values:
                raise CaptureError(f"graph input '{node.name}' has no value for a golden run")
            args.append(placeholder_values[node.name])
        wanted = wanted | {self.fx_to_name[node.name] for node, _ in self.traced.outputs}
        keep = {fx for fx, name in self.fx_to_name.items() if name in wanted}
        keep |= {fx for fx, names in self.elements.items() if wanted & set(filter(None, names))}
        values = run_graph(self.traced.module, args, keep)
        for fx, value in values.items():
            if fx in self.elements:
                for name, element in zip(self.elements[fx], value, strict=False):
                    if name in wanted and name not in arrays:
                        arrays[name] = to_numpy(element)
            elif self.fx_to_name.get(fx) in wanted and self.fx_to_name[fx] not in arrays:
                arrays[self.fx_to_name[fx]] = to_numpy(value)
        missing = sorted(wanted - set(arrays))
        if missing:
            raise CaptureError(f"the golden run gave no value for {', '.join(missing)}")


def capture(
    model: Any, inputs: tuple, source: str | None = None, specialise: bool = False
) -> Capture:
    """Traces ``model(*inputs)`` (an nn.Module or a function of tensors) into a Capture.

    ``inputs`` may be real, fake or meta tensors: tracing never runs the model on data, except
    with ``specialise`` and real inputs (values of the data decide the program: it runs once
    eagerly to record them, ``solar.torch._trace.trace``)."""
    traced = trace(model, tuple(inputs), specialise=specialise)
    if source is None:
        source = _source_of(model)
    document, fx_to_name, elements = serialize(traced, source)
    return Capture(document, traced, fx_to_name, elements)


@dataclass
class TrainCapture(Capture):
    """The capture of a training step (capture/_train.py): its golden data is PyTorch's
    autograd and optimizer on the real model (``golden``)."""

    loss_fn: Any = None
    optimizer: str | None = None

    def holds_fake_values(self) -> bool:
        return any(b.kind == "constant" for b in self.traced.placeholders.values())

    def golden(self, model: Any, inputs: tuple, intermediates: Any = ()) -> dict[str, np.ndarray]:
        """Every input, weight, buffer and optimizer state before the step, and the loss,
        gradients and new values PyTorch computes (``_train.golden_step``), by capture name."""
        from solar.torch._train import golden_step

        if list(intermediates):
            raise CaptureError(
                "--train: the outputs of unsupported nodes cannot be fed from PyTorch's run "
                "(a training step is verified whole)"
            )
        self.golden_notes = list(self.traced.notes)
        with on_cpu_mode():
            values = golden_step(model, inputs, self.loss_fn, self.optimizer, self.traced)
        return {self.fx_to_name[k]: to_numpy(v) for k, v in values.items() if k in self.fx_to_name}


def capture_train(
    model: Any,
    inputs: tuple,
    source: str | None = None,
    loss_fn: Any = None,
    optimizer: str | None = None,
) -> TrainCapture:
    """Traces one training step of ``model(*inputs)``: the loss ``loss_fn(output, *inputs)``
    (default: the sum of the outputs), its gradients, and ``optimizer``'s update (None: none;
    one of ``solar.options.OPTIMIZERS``); docs/training.md."""
    from solar.torch._train import trace_train

    traced = trace_train(model, tuple(inputs), loss_fn, optimizer)
    if source is None:
        source = _source_of(model)
    document, fx_to_name, elements = serialize(traced, source)
    return TrainCapture(
        document, traced, fx_to_name, elements, loss_fn=loss_fn, optimizer=optimizer
    )


def capture_model_file(
    path: str | os.PathLike,
    prog: str = "solar",
    recapture: Callable[[Any, tuple], Any] | None = None,
) -> tuple[Any, Any, tuple]:
    """Captures a benchmark-style model file without building it for real: the model and inputs
    are FakeTensors (no memory). A model that cannot be built that way is built for real (a note
    on stderr, prefixed with ``prog``). ``recapture(model, inputs)``: how to capture it (default:
    ``capture`` of the forward). Returns the capture and the model and inputs it traced (fake or
    real: ``Capture.is_fake`` tells)."""
    source = os.path.basename(os.fspath(path))
    if recapture is None:

        def recapture(m: Any, xs: tuple) -> Any:
            return capture(m, xs, source=source)

    on_cpu = on_cpu_mode()
    try:
        model, inputs = load_model_file(path, fake=True, on_cpu=on_cpu)
        return _noted(recapture(model, inputs), on_cpu), model, inputs
    except DataDependentError:  # a value decides a size: captured on real inputs (specialised)
        failure = None
    except CaptureError:
        raise
    except Exception as e:  # a model that cannot be built with FakeTensors: without weights?
        failure = type(e).__name__
    if failure is not None:
        try:
            on_cpu = on_cpu_mode()
            model, inputs = load_model_file(path, fake="meta", on_cpu=on_cpu)
            return _noted(recapture(model, inputs), on_cpu), model, inputs
        except CaptureError:
            raise
        except Exception:  # nor without weights (its init reads tensor values): built for real
            print(
                f"{prog}: note: building {source} with FakeTensors failed ({failure});"
                " building the model with real tensors",
                file=sys.stderr,
            )
    on_cpu = on_cpu_mode()
    model, inputs = load_model_file(path, on_cpu=on_cpu)
    return _noted(recapture(model, inputs), on_cpu), model, inputs


def _noted(captured: Any, on_cpu: Any) -> Any:
    """``captured`` with the device mapping of the model file's building noted (once)."""
    note = cuda_note()
    if on_cpu.mapped and note not in captured.traced.notes:
        captured.traced.notes.insert(0, note)
    return captured


def without_weights(build: Callable[[], Any]) -> tuple[Any, Any]:
    """``(model, mode)``: ``build()`` run on the meta device (no weight is allocated or
    initialised), then every parameter, buffer and plain tensor attribute replaced by a CPU
    FakeTensor of the same shape, dtype and ``requires_grad`` under ``mode``, a
    ``FakeTensorMode`` the caller traces in. The graph is the CPU one: the model runs on CPU
    FakeTensors, never on meta tensors (whose kernels differ: ``load_model_file``)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    with torch.device("meta"):
        model = build()
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    made: dict[int, torch.Tensor] = {}  # a tensor shared (tied weights) stays shared

    def fake(t: torch.Tensor) -> torch.Tensor:
        if id(t) not in made:
            with mode:
                made[id(t)] = torch.empty(t.shape, dtype=t.dtype)
            if isinstance(t, torch.nn.Parameter):
                made[id(t)] = torch.nn.Parameter(made[id(t)], t.requires_grad)
        return made[id(t)]

    if isinstance(model, torch.nn.Module):
        for sub in model.modules():
            for key, p in list(sub._parameters.items()):
                if p is not None:
                    sub._parameters[key] = fake(p)
            for key, b in list(sub._buffers.items()):
                if b is not None:
                    sub._buffers[key] = fake(b)
            for key, value in list(vars(sub).items()):
                if isinstance(value, torch.Tensor) and not key.startswith("_"):
                    setattr(sub, key, fake(value))
    return model, mode


def available_bytes() -> int | None:
    """The machine's available memory (``MemAvailable`` of /proc/meminfo; None elsewhere)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def check_real_build(source: str, need: int, why: str, instead: str) -> None:
    """A one-line ``CaptureError`` when building a model of ``need`` bytes for real (``why``:
    what for) would not fit the machine's available memory: never a kill by the kernel.
    ``instead``: what verifies it without the real build. A real build is typically made in
    float32 before any cast: ``need`` is counted so by the caller (``real_build_bytes``)."""
    have = available_bytes()
    if have is not None and need > have:
        raise CaptureError(
            f"{source}: {why} would build the model for real (about {need / 1e9:.1f} GB of "
            f"weights, over the {have / 1e9:.1f} GB of memory available); give --no-verify, "
            f"or {instead}"
        )


def real_build_bytes(model: Any) -> int:
    """The memory a real build of ``model`` (built without weights) takes at its peak: each
    floating-point tensor at 4 bytes an element at least (built in float32, then cast)."""
    if not isinstance(model, torch.nn.Module):
        return 0
    seen: dict[int, int] = {}
    for t in [*model.parameters(), *model.buffers()]:
        size = t.element_size()
        seen[id(t)] = t.numel() * (max(size, 4) if t.is_floating_point() else size)
    return sum(seen.values())


def is_fake(inputs: tuple) -> bool:
    """Whether any of the tensors is a FakeTensor or on the meta device (no values)."""
    from torch._subclasses.fake_tensor import FakeTensor

    return any(isinstance(x, FakeTensor) or getattr(x, "is_meta", False) for x in inputs)


def model_module(path: str | os.PathLike, prefix: str = "_solar_model_") -> Any:
    """The model file imported as a module named ``prefix`` + its name (its errors: one line,
    file:line); imported again on each call, so the model is built from a fresh module."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise CaptureError(f"{path}: no such file")
    name = prefix + os.path.splitext(os.path.basename(path))[0].replace("-", "_")
    return import_model_file(path, name, CaptureError)


def load_model_file(
    path: str | os.PathLike, fake: bool | str = False, on_cpu: Any = None
) -> tuple[Any, tuple]:
    """The model and inputs of a benchmark-style file: ``Model(*get_init_inputs())`` and
    ``get_inputs()``, built after ``torch.manual_seed(0)``.

    ``fake=True`` builds both as FakeTensors (torch._subclasses.fake_tensor.FakeTensorMode):
    shapes, dtypes and devices without memory or values, enough to capture but not to make
    golden data. (Not the meta device: it picks other kernels, e.g. a different SDPA
    decomposition, so its graph would differ from the one PyTorch runs on the CPU.)
    ``fake="meta"`` builds the model on the meta device and then swaps its tensors for CPU
    FakeTensors (``without_weights``: no weight is initialised; what ``transformers`` models,
    whose init casts or ties weights, need), the inputs FakeTensors of the same mode.

    A file written for a GPU (``device="cuda"``, ``.cuda()``, ``.to("cuda")``) is built on the
    CPU under ``on_cpu`` (``_trace.on_cpu_mode``; a fresh one when not given)."""
    path = os.fspath(path)
    with on_cpu if on_cpu is not None else on_cpu_mode():
        return _load_model_file(path, fake)


# What a benchmark-style model file defines, and says so when it does not.
MODEL_FILE_NAMES = ("Model", "get_inputs", "get_init_inputs")
MODEL_FILE = " (a model file defines class Model(nn.Module), get_inputs() and get_init_inputs())"


def model_file(
    path: str,
    prefix: str = "_solar_model_",
    needs: tuple[str, ...] = MODEL_FILE_NAMES,
    expected: str = MODEL_FILE,
) -> Any:
    """The model file imported (``model_module``, as ``prefix`` + its name) with the names it
    must define (``needs``): a one-line ``CaptureError`` naming the first it lacks, then
    ``expected``."""
    module = model_module(path, prefix)
    for attr in needs:
        if not hasattr(module, attr):
            raise CaptureError(f"{path}: defines no '{attr}'{expected}")
    return module


def load_model(
    path: str, weights: bool, prog: str, prefix: str, needs: tuple[str, ...], expected: str
) -> tuple[Any, Any, Any]:
    """``(module, model, mode)``: the model file (``model_file``) and its
    ``Model(*get_init_inputs())`` (``build_model``), built for real (mode None) or, without
    ``weights``, on the meta device with FakeTensors of ``mode`` (no weight memory); a model
    whose init reads tensor values is then built for real, a note on stderr (prefixed with
    ``prog``) first. The serving decoder's loader (``solar.torch.serve``); ``load_model_file``
    builds a model file's inputs too."""
    module = model_file(path, prefix, needs, expected)
    if not weights:
        try:
            model, mode = build_model(path, module, "meta")
            return module, model, mode
        except CaptureError:  # past the build budget, or an uninitialised Model: as for real
            raise
        except Exception as e:  # an init that reads tensor values: built for real
            text = " ".join(str(e).split("\n")[0].split())[:120]
            print(
                f"{prog}: note: {os.path.basename(path)} cannot be built without its weights "
                f"({type(e).__name__}: {text}); building it for real",
                file=sys.stderr,
            )
    model, _ = build_model(path, module, "real")
    return module, model, None


def _load_model_file(path: str, fake: bool | str) -> tuple[Any, tuple]:
    module = model_file(path)
    # (a failure with FakeTensors is retried for real by capture_model_file)
    how = "real" if not fake else ("meta" if fake == "meta" else "fake")
    model, mode = build_model(path, module, how)
    if mode is None:
        inputs = call_model_code(path, "get_inputs()", CaptureError, module.get_inputs)
        if not isinstance(inputs, (list, tuple)):
            raise CaptureError(
                f"{path}: get_inputs() returned {type(inputs).__name__}, not a list of inputs"
            )
        return model, tuple(inputs)
    with mode:
        inputs = within_build_budget(path, "get_inputs()", CaptureError, module.get_inputs)
    return model, tuple(inputs)


def build_model(path: str, module: Any, how: str) -> tuple[Any, Any]:
    """``(model, mode)``: the model file's ``Model(*get_init_inputs())`` (``module``: the file
    imported, ``model_module``; ``get_init_inputs`` optional), built after
    ``torch.manual_seed(0)``: ``how`` "real" (mode None), "fake" (built in a fresh
    ``FakeTensorMode``, the mode) or "meta" (``without_weights``: no weight initialised, its
    tensors FakeTensors of the mode). The file's own code stops after the build budget
    (``within_build_budget``) and its errors are one line naming its line; a ``Model`` whose
    ``__init__`` skips ``super().__init__()`` is refused (``_check_initialised``). The one
    loader of a model's build: ``load_model_file`` and ``load_model`` (the serving decoder's)
    call it."""
    torch.manual_seed(0)
    get_init = getattr(module, "get_init_inputs", list)
    if how == "real":
        init = call_model_code(path, "get_init_inputs()", CaptureError, get_init)
        model = call_model_code(path, "Model(...)", CaptureError, lambda: module.Model(*init))
        mode = None
    elif how == "meta":  # built on the meta device, its tensors then CPU FakeTensors
        model, mode = within_build_budget(
            path,
            "Model(...)",
            CaptureError,
            lambda: without_weights(lambda: module.Model(*get_init())),
        )
    else:
        from torch._subclasses.fake_tensor import FakeTensorMode

        mode = FakeTensorMode(allow_non_fake_inputs=True)
        with mode:
            model = within_build_budget(
                path, "Model(...)", CaptureError, lambda: module.Model(*get_init())
            )
    _check_initialised(path, module.Model, model)
    return model, mode


@contextlib.contextmanager
def _program_failure() -> Any:
    """The model's own run on its inputs (the golden run): what it raises (an index out of
    range, a size that does not match) is the program's failure, a CaptureError naming the
    user's line, not a bug in SOLAR."""
    try:
        yield
    except CaptureError:
        raise
    except Exception as e:
        from solar.torch._trace import _first_line, _raised_at

        at = _raised_at(e)
        raise CaptureError(
            f"the program failed on its inputs{' at ' + at if at else ''}: "
            f"{type(e).__name__}: {_first_line(str(e))}"
        ) from e


def _check_initialised(path: str, cls: Any, model: Any) -> None:
    """A CaptureError naming the file and the line of ``Model.__init__`` when ``model`` is an
    nn.Module whose ``__init__`` never called ``super().__init__()``: it has none of
    nn.Module's own state (``_parameters``, ``_modules``), and the first use of it fails
    inside torch with an AttributeError that names nothing of the user's."""
    if not isinstance(model, torch.nn.Module) or "_parameters" in model.__dict__:
        return
    init = getattr(cls, "__init__", None)
    where = path
    with contextlib.suppress(OSError, TypeError):
        import inspect

        where = f"{path}:{inspect.getsourcelines(init)[1]}"
    raise CaptureError(
        f"{where}: {cls.__name__}.__init__ does not call super().__init__(): the model is not "
        "an initialised nn.Module (call super().__init__() first in __init__)"
    )


def to_float64(value: Any) -> Any:
    """A copy of a model (``nn.Module.double()`` on a deep copy; a function stays as it is) or
    a tuple of inputs with every floating-point tensor made float64."""
    import copy

    if isinstance(value, torch.nn.Module):
        _grouped_mm_in_float64()
        return copy.deepcopy(value).double()
    if isinstance(value, tuple):
        return tuple(to_float64(v) for v in value)
    if isinstance(value, list):
        return [to_float64(v) for v in value]
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return value.detach().to(torch.float64).requires_grad_(value.requires_grad)
    return value


def _grouped_mm_in_float64() -> None:
    """transformers' experts run ``torch._grouped_mm``, which has no float64 kernel on the CPU
    ("Expected mat_a to be Float32, BFloat16 or Float16"): float64 experts take transformers'
    own fallback (``transformers.grouped_mm_fallback``, one product per expert) instead, so a
    model made float64 runs. Other dtypes are left as transformers decides. Installed once."""
    import sys

    moe = sys.modules.get("transformers.integrations.moe")
    can = getattr(moe, "_can_use_grouped_mm", None)
    if can is None or getattr(can, "_solar_float64", False):
        return

    def can_use(input: Any, weight: Any, offs: Any) -> bool:
        return weight.dtype != torch.float64 and can(input, weight, offs)

    can_use._solar_float64 = True  # type: ignore[attr-defined]
    moe._can_use_grouped_mm = can_use


def _attribute(module: torch.nn.Module, path: str) -> torch.Tensor:
    """The plain tensor attribute at ``path`` (``lstm.h0``) of ``module``."""
    owner_path, _, key = path.rpartition(".")
    owner = module.get_submodule(owner_path) if owner_path else module
    value = getattr(owner, key, None)
    if not isinstance(value, torch.Tensor):
        raise CaptureError(f"the model's attribute '{path}' is no longer a tensor")
    return value


def _source_of(model: Any) -> str | None:
    import inspect

    target = type(model) if isinstance(model, torch.nn.Module) else model
    try:
        return os.path.basename(inspect.getsourcefile(target) or "") or None
    except (TypeError, OSError):
        return None


# ---------------------------------------------------------------------------------------------
# The adapter's Captured


@dataclass
class TorchCaptured:
    """A PyTorch capture (``solar.torch.capture.Capture`` or ``TrainCapture``) with what makes its
    golden data: the ``model`` and ``inputs`` it traced (real, or FakeTensors), ``build()`` that
    builds them for real (a model file), or ``given`` golden data (a dict or a function of the
    wanted intermediates). ``recapture(model, inputs)``: the same program captured again (the
    float64 rebuild, a capture of the real model)."""

    capture: Any
    recapture: Callable[[Any, tuple], Any]
    model: Any = None
    inputs: tuple = ()
    build: Callable[[], tuple[Any, tuple]] | None = None
    given: Any = None
    agent: list[dict] | None = None  # --llm-fallback: the nodes the LLM agent wrote
    default_policy: str | None = None
    translation: Any = None
    rechecks_in_float64: bool = True
    # A model built without weights: its reduced twin's step, ``() -> (TorchCaptured, what)``,
    # verified in its place (``solar.stages.verify``; ``solar.torch.serve.twin_step``).
    twin: Callable[[], tuple[Any, str]] | None = None
    # A benchmark workload: the same definition at a reduced workload, ``() -> (TorchCaptured,
    # what)``, verified whole where the whole program is over the verification budgets
    # (``solar.stages.verify``; ``solar.torch.definition.reduced_workload``).
    reduced: Callable[[], tuple[Any, str]] | None = None

    @property
    def document(self) -> dict:
        return self.capture.document

    @property
    def golden_notes(self) -> list[str]:
        return self.capture.golden_notes

    def to_json(self) -> str:
        return self.capture.to_json()

    def _real(self) -> bool:
        return self.model is not None and not is_fake(self.inputs)

    @property
    def has_data(self) -> bool:
        return self.given is not None or self.build is not None or self._real()

    def golden(self, wanted: list[str]) -> dict[str, np.ndarray]:
        if self.given is not None:
            return self.given(wanted) if callable(self.given) else self.given
        if self._real():
            return self.capture.golden(self.model, self.inputs, wanted)
        source = str(self.document.get("source"))
        need = real_build_bytes(self.model)
        per_op = f"a --verify-budget-mb under {need / 1e6:.0f} to verify it per op"
        if self.model is not None and getattr(self.model, "config", None) is not None:
            per_op += " (--serve verifies a reduced twin of the same architecture)"
        check_real_build(source, need, "whole-program verification", per_op)
        model, inputs = self.build()  # a model file built with FakeTensors: now for real
        real = self.capture
        if self.capture.holds_fake_values():  # lifted constants were captured as FakeTensors
            real = self.recapture(model, inputs)
            if real.to_json() != self.capture.to_json():
                source = self.document.get("source")
                raise AnalysisError(
                    f"{source}: the model captures differently when built for real "
                    f"({differing_nodes(self.document, real.document)}); give a larger "
                    "--verify-budget-mb to capture the real model from the start"
                )
        data = real.golden(model, inputs, wanted)
        self.capture.golden_notes = real.golden_notes
        return data

    def in_float64(self) -> TorchCaptured:
        if self.build is not None:
            model, inputs = self.build()
        elif self._real():
            model, inputs = self.model, self.inputs
        else:
            raise Float64UnavailableError(NO_FLOAT64_MODEL)
        model64, inputs64 = to_float64(model), to_float64(inputs)
        return TorchCaptured(self.recapture(model64, inputs64), self.recapture, model64, inputs64)

    def per_op_cases(self, skip: set[str], budget_bytes: int) -> list[OpConfig]:
        from solar.torch._per_op import per_op_configs

        return per_op_configs(self.document, skip, budget_bytes)


def differing_nodes(fake: dict, real: dict) -> str:
    """Which nodes of two captures of one model differ: the count and the first three, each
    as ``name (op)`` in the first capture against the second; or how the tensors differ."""

    def key(node: dict) -> str:
        return f"{node['name']} ({node['op']})"

    a, b = fake["nodes"], real["nodes"]
    differ = [(x, y) for x, y in zip(a, b, strict=False) if x != y]
    if not differ and len(a) == len(b):
        return "the same nodes; their tensors differ"
    shown = ", ".join(f"{key(x)} / {key(y)}" for x, y in differ[:3])
    more = f" and {len(differ) - 3} more" if len(differ) > 3 else ""
    counts = f"{len(a)} node(s) built with FakeTensors, {len(b)} built for real"
    if not differ:
        return counts
    return f"{counts}; {len(differ)} differ: {shown}{more} (FakeTensors / real)"
