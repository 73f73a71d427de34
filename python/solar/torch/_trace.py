"""Tracing a model to a Core ATen FX graph: torch.export first, make_fx as the fallback.

Both paths produce a ``Traced``: the graph, what each placeholder is bound to (a user input, a
parameter, a buffer, a plain tensor attribute or a lifted constant) and what each graph output is
(a user output, the new value of a mutated buffer or of a reassigned tensor attribute). Nothing
here runs the model on real data: export and make_fx trace with FakeTensors.

Plain tensor attributes (``self.h0 = torch.randn(...)`` in ``__init__``: a tensor in a module's
``__dict__``, neither a parameter nor a buffer) are traced as explicit inputs of the forward,
named ``c_<path>`` (the name torch.export gives a lifted constant): the forward is wrapped so that
it sets each attribute to its input before calling the model, and returns, after the model's
outputs, the new value of each attribute the forward assigned a tensor it computed. Export's own
treatment (a lifted constant, and the assignment lost) fails when the model is built with
FakeTensors (its fake mode is not export's) and drops the update.
"""

from __future__ import annotations

import contextlib
import inspect
import sys
import traceback
import warnings
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from solar.torch._where import is_library_file, user_location
from solar.verify.per_op import first_line as _first_line  # one definition, framework-free


class CaptureError(ValueError):
    """A model that SOLAR cannot capture (the message says why, in one line)."""


@dataclass
class Binding:
    """Where a graph placeholder's value comes from, or where a graph output goes.

    kind: "input" (``index``: position among the flattened tensor inputs), "weight" or "buffer"
    (``target``: the module's attribute path, e.g. ``fc1.weight``), "attribute" (``target``: the
    path of a plain tensor attribute, e.g. ``h0``), "constant" (``value``: the lifted tensor),
    "output" (``index``: position among the flattened tensor outputs), "buffer_mutation"
    (``target``: the buffer that receives the value), "attribute_update" (``target``: the plain
    tensor attribute the forward assigned the value to), "input_mutation" (``target``: the name
    of the input the forward updated in place, ``index`` its position; the value is the rows
    the update wrote, or the whole new value: ``_mutation_output``)."""

    kind: str
    index: int = -1
    target: str = ""
    value: Any = None


@dataclass
class Traced:
    graph: torch.fx.Graph
    method: str  # "torch.export" or "make_fx"
    module: Any = None  # the torch.fx.GraphModule holding ``graph`` (run by golden runs)
    placeholders: dict[str, Binding] = field(default_factory=dict)  # by FX node name
    outputs: list[tuple[Any, Binding]] = field(default_factory=list)  # (FX node, binding)
    dropped: set[str] = field(default_factory=set)  # FX nodes not serialized (mutation copies)
    export_error: str = ""  # why torch.export failed, when make_fx was used
    # A training step's phase of every call node, by FX name (capture/_train.py): "forward",
    # "backward" or "optimizer"; empty for an inference capture.
    phases: dict[str, str] = field(default_factory=dict)
    # What the capture assumed, for the report: a device mapped, values specialised on.
    notes: list[str] = field(default_factory=list)
    # Whether the capture holds for its inputs' values only: values of the data read into
    # Python (``.item()``, ``int()``, ``nonzero``) were traced as constants.
    specialised: bool = False
    # Whether a golden run must run the captured graph (an input mutation's output is the rows
    # written, which the model's own run does not return).
    golden_from_graph: bool = False


def trace(model: Any, args: tuple, dynamic_shapes: Any = None, specialise: bool = False) -> Traced:
    """Traces ``model(*args)``; ``model`` is an nn.Module or a function of tensors. The model is
    left as it was (its tensor attributes keep their values). ``dynamic_shapes``: torch.export's,
    for a capture with symbolic sizes (solar.torch._symbolic); torch.export only (its failure is
    a CaptureError, not the make_fx fallback). ``specialise``: the caller knows that values of
    the data decide the program (another workload of a definition read them): with real inputs,
    the program is traced on its values at once (``_trace_specialised``), without the trace that
    would find out (torch.export with unbacked sizes: the costly part, tens of seconds for a
    loop over sequences)."""
    module = model if isinstance(model, nn.Module) else _FunctionModule(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # torch's own deprecation notices
        # export's notice about tensor attributes assigned while tracing: the plain ones are
        # traced as inputs here (module docstring); the others are its own parameter swaps
        warnings.filterwarnings("ignore", message=".*assigned during export")
        attributes = tensor_attributes(module)
        on_cpu = on_cpu_mode()
        try:
            with on_cpu, _quiet_data_dependent_errors():
                traced = _trace(module, args, attributes, dynamic_shapes, specialise)
        finally:
            for attr in attributes:  # the tracers set them to fake tensors
                attr.owner.__dict__[attr.key] = attr.value
        if on_cpu.mapped:
            traced.notes.insert(0, cuda_note())
        return traced


def on_cpu_mode() -> Any:
    """A fresh device mapping (``solar.torch._device.OnCpu``): a program written for a GPU
    (``device="cuda"``, ``.cuda()``, ``.to("cuda")``) runs on the CPU; ``mapped`` says whether
    any was met."""
    from solar.torch._device import OnCpu

    return OnCpu()


def cuda_note() -> str:
    from solar.torch._device import CUDA_NOTE

    return CUDA_NOTE


class DataDependentError(CaptureError):
    """A value of the inputs decides a size or a branch and the inputs are FakeTensors: the
    program must be captured again on real inputs, specialised on their values."""


# What torch's tracers raise when a value of the data decides a size or a branch.
_DATA_DEPENDENT = (
    "GuardOnDataDependentSymNode",
    "DataDependentOutputException",
    "PendingUnbackedSymbolNotFound",
    "DynamicOutputShapeException",
    "UserError",  # export's "Could not guard on data-dependent expression"
)


def _is_data_dependent(e: BaseException) -> bool:
    text = f"{type(e).__name__}: {e}"
    return (
        type(e).__name__ in _DATA_DEPENDENT[:4]
        or "data-dependent" in text
        or ".numpy() is not supported for tensor subclasses" in text  # a FakeTensor's values
    )


@contextlib.contextmanager
def _quiet_data_dependent_errors():
    """While tracing, what torch prints to stderr when a data-dependent guard fails (the
    partial FX graph, its loggers' lines) is silenced: the failure is reported in one line."""
    import io
    import logging

    names = (
        "torch.fx.experimental.symbolic_shapes",
        "torch._subclasses.fake_tensor",
        "torch.fx.experimental.recording",
        "torch.export",
        "torch._export",
    )
    loggers = [logging.getLogger(n) for n in names]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def _trace(
    module: nn.Module,
    args: tuple,
    attributes: list[Attribute],
    dynamic_shapes: Any = None,
    specialise: bool = False,
) -> Traced:
    if specialise and dynamic_shapes is None and not _has_fake(args, module):
        return _trace_specialised(module, args, attributes, "")
    try:
        traced = _trace_export(module, args, attributes, dynamic_shapes)
    except Exception as e:  # export failed: make_fx is the documented fallback
        export_error = f"{type(e).__name__}: {_first_line(str(e))}"
        if dynamic_shapes is not None:  # no symbolic sizes in make_fx's graph
            failed = DataDependentError if _is_data_dependent(e) else CaptureError
            raise failed(f"torch.export with symbolic sizes: {export_error}") from e
        data_dependent = _is_data_dependent(e)
    else:
        read = _values_read(traced)
        if read is None:
            _drop_unused_attributes(traced)
            return traced
        # export kept a read of the data (``.item()``) as an unbacked value: the capture holds
        # no size for it, so it is specialised on the real inputs' values like int()
        message = f"capture failed: {read} reads a value of the data, which FakeTensors do not hold"
        if _has_fake(args, module):
            raise DataDependentError(message)
        return _trace_specialised(module, args, attributes, message)
    last = _LastCall()
    try:
        with last:
            traced = _trace_make_fx(module, args, attributes)
    except Exception as e:
        data_dependent = data_dependent or _is_data_dependent(e)
        make_fx_error = f"{type(e).__name__}: {_first_line(str(e))}"
        if data_dependent and not _has_fake(args, module):
            return _trace_specialised(module, args, attributes, export_error)
        message = f"capture failed: torch.export: {export_error}; make_fx: {make_fx_error}"
        if last.last is not None and last.last[1] not in message:
            message += f" (the trace stopped at {last.where()})"
        if data_dependent:
            raise DataDependentError(message) from e
        raise CaptureError(message) from e
    traced.export_error = export_error
    _drop_unused_attributes(traced)
    return traced


# Ops by which an exported graph reads a value of the data into Python (``.item()``), leaving
# an unbacked size that no concrete capture holds.
_SCALAR_READS = ("aten._local_scalar_dense.default", "aten.item.default")


def _values_read(traced: Traced) -> str | None:
    """The first node of ``traced``'s graph that reads a value of the data (``_SCALAR_READS``)
    or whose output size the data decide (an unbacked size: ``nonzero``, a boolean mask's
    index), as ``OP ('NAME')``, or None."""
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

    for node in traced.graph.nodes:
        if node.op != "call_function":
            continue
        if str(node.target) in _SCALAR_READS or free_unbacked_symbols(node.meta.get("val")):
            return f"{node.target} ('{node.name}')"
    return None


def _has_fake(args: tuple, module: nn.Module) -> bool:
    """Whether any input, parameter or buffer is a FakeTensor or on the meta device."""
    from torch._subclasses.fake_tensor import FakeTensor
    from torch.utils import _pytree as pytree

    tensors = [t for t in pytree.tree_leaves(args) if isinstance(t, torch.Tensor)]
    tensors += list(module.parameters()) + list(module.buffers())
    return any(isinstance(t, FakeTensor) or t.is_meta for t in tensors)


class _UserCalls(torch.overrides.TorchFunctionMode):
    """A torch function mode that knows the user's frames: those of the code run inside it
    (the model's ``forward`` and what it calls) that are outside torch, SOLAR and the standard
    library. The frames already on the stack when the mode is entered (whoever called the
    capture: the CLI, a test, a notebook) are never the user's model, wherever they live; the
    tracer's own calls (make_fx turning inputs into FakeTensors) have no user frame."""

    def __enter__(self):
        self._outside = _frames_from(sys._getframe(1))
        return super().__enter__()

    def user_frame(self) -> str:
        """``file:line in function`` of the innermost user frame of the caller's stack below
        the mode's entry, or empty."""
        return _user_frame(sys._getframe(1), getattr(self, "_outside", frozenset()))


class _LastCall(_UserCalls):
    """Remembers the last torch function the user's code called and its line, to name where
    a failed trace stopped."""

    def __init__(self) -> None:
        super().__init__()
        self.last: tuple[str, str] | None = None

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: Any = None):
        where = self.user_frame()
        if where:
            self.last = (_function_name(func), where)
        return func(*args, **(kwargs or {}))

    def where(self) -> str:
        """``OP at file:line in function`` of the last call, or empty."""
        return f"{self.last[0]} at {self.last[1]}" if self.last else ""


def _function_name(func: Any) -> str:
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", str(func))
    module = getattr(func, "__module__", None) or ""
    if module in ("", "torch._C", "torch._tensor") or "Tensor" in name:
        return f"torch.{name}" if not name.startswith("torch") else name
    return f"{module}.{name}"


# Tensor methods and functions whose result is the data's value in Python (a number, a list)
# or a tensor whose size depends on the values.
_DATA_READS = frozenset(
    "item tolist __int__ __index__ __float__ __bool__ nonzero argwhere masked_select".split()
)


class _Specialised(_UserCalls):
    """Records (``replay=False``, an eager run on the real inputs) or replays (``replay=True``,
    while tracing) each read of the data's values (``_DATA_READS``): the trace sees the values
    the eager run read, in order, as constants, and the capture is specialised on them.
    ``values`` names each, with the user's line."""

    def __init__(self) -> None:
        super().__init__()
        self.recorded: list[Any] = []
        self.values: list[str] = []
        self.replay = False
        self.next = 0
        # whether the eager run called an op whose output size its data decide and that a
        # replayed value cannot stand for (``_sized_by_data``)
        self.sized_by_data = False

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: Any = None):
        name = getattr(func, "__name__", "")
        if not self.replay and _sized_by_data(name, args, kwargs or {}):
            self.sized_by_data = True
        if name not in _DATA_READS:
            return func(*args, **(kwargs or {}))
        if self.replay:
            if not self.recorded:
                return func(*args, **(kwargs or {}))
            value = self.recorded[self.next % len(self.recorded)]
            self.next += 1
            return value.clone() if isinstance(value, torch.Tensor) else value
        value = func(*args, **(kwargs or {}))
        self.recorded.append(value.clone() if isinstance(value, torch.Tensor) else value)
        where = self.user_frame()
        shown = (
            f"{name} -> shape {list(value.shape)}"
            if isinstance(value, torch.Tensor)
            else (f"{name} = {value}")
        )
        self.values.append(f"{shown}{' at ' + where if where else ''}")
        return value


# Calls whose output size the data decide, beyond the reads ``_Specialised`` replays.
_SIZED_BY_DATA = frozenset(
    "bincount masked_select repeat_interleave unique unique_consecutive one_hot".split()
)


def _sized_by_data(name: str, args: tuple, kwargs: dict) -> bool:
    """Whether a call's output size is decided by its data in a way that replaying the values
    read into Python does not fix: ``_SIZED_BY_DATA``, an index or a write by a boolean mask,
    ``torch.where`` of a condition alone."""
    from torch.utils import _pytree as pytree

    if name in _SIZED_BY_DATA:
        return True
    if name == "where":
        return len(args) + len(kwargs) == 1
    if name in ("__getitem__", "__setitem__", "index_put", "index_put_") and len(args) > 1:
        leaves = pytree.tree_leaves(args[1])
        return any(isinstance(t, torch.Tensor) and t.dtype == torch.bool for t in leaves)
    return False


def _trace_specialised(
    module: nn.Module, args: tuple, attributes: list[Attribute], export_error: str
) -> Traced:
    """The program run once eagerly on (copies of) the real inputs, recording every value of
    the data that reached Python or decided a size (``_Specialised``), then traced with those
    values replayed as constants: the capture holds for these inputs only, and its notes name
    each value and where it was read."""
    import copy

    recorder = _Specialised()
    try:
        with torch.no_grad(), recorder:
            copy.deepcopy(module)(*copy.deepcopy(args))
    except Exception as e:
        at = _raised_at(e)
        raise CaptureError(
            f"capture failed{' at ' + at if at else ''}: the program failed on its inputs: "
            f"{type(e).__name__}: {_first_line(str(e))}"
        ) from e
    if recorder.sized_by_data:
        return _trace_real(module, args, attributes, export_error, "")
    recorder.replay = True
    last = _LastCall()
    try:
        with recorder:
            try:
                traced = _trace_export(module, args, attributes)
            except Exception:
                recorder.next = 0
                with last:
                    traced = _trace_make_fx(module, args, attributes)
        read = _values_read(traced)
        if read is not None:
            raise CaptureError(f"{read} remains")
    except Exception as e:
        # the values replayed did not make the trace concrete (a boolean mask, a loop over an
        # index tensor): traced on the real inputs themselves (solar.torch._specialise)
        at = f" (the trace stopped at {last.where()})" if last.last else ""
        replay_error = f"{type(e).__name__}: {_first_line(str(e))}{at}"
        return _trace_real(module, args, attributes, export_error, replay_error)
    traced.export_error = export_error
    if recorder.values:  # none: traced on a hint (``specialise``) by a program that reads none
        traced.specialised = True
        traced.notes.append(
            f"capture specialised on {len(recorder.values)} value(s) read from the inputs (the "
            f"numbers hold for these inputs only): {'; '.join(recorder.values)}"
        )
    _drop_unused_attributes(traced)
    return traced


def _trace_real(
    module: nn.Module,
    args: tuple,
    attributes: list[Attribute],
    export_error: str,
    replay_error: str,
) -> Traced:
    """``module(*args)`` traced by make_fx on the real inputs (solar.torch._specialise): the
    values the program reads are the real ones, the ops whose output sizes depend on the data
    are replaced by ops of fixed sizes. Notes name every value read."""
    import copy

    from solar.torch._specialise import Specialising, specialising

    state = Specialising()
    reads = _ReadsNoted(state)
    state.where = reads.user_frame
    last = _LastCall()
    # copies: the trace runs the program on the data, and a program may write into its inputs
    module_copy, args_copy = copy.deepcopy(module), copy.deepcopy(args)
    attributes_copy = tensor_attributes(module_copy)
    try:
        with torch.no_grad(), reads, last, specialising(state):
            traced = _trace_make_fx(module_copy, args_copy, attributes_copy, real=True)
    except CaptureError:
        raise
    except Exception as e:
        at = f" (the trace stopped at {last.where()})" if last.last else ""
        replayed = f"specialised on the inputs' values: {replay_error}; " if replay_error else ""
        raise CaptureError(
            f"capture failed: {replayed}traced on the inputs: "
            f"{type(e).__name__}: {_first_line(str(e))}{at}"
        ) from e
    finally:
        for attr in attributes_copy:
            attr.owner.__dict__[attr.key] = attr.value
    traced.export_error = export_error
    traced.specialised = True
    traced.notes.append(
        f"capture specialised on {len(state.values)} value(s) read from the inputs (traced on "
        f"them; the numbers hold for these inputs only): {state.summary()}"
    )
    _drop_unused_attributes(traced)
    return traced


class _ReadsNoted(_UserCalls):
    """While a real-mode trace runs: notes each read of the data's values into Python
    (``_PYTHON_READS``, the real values) in ``state``, and calls ``one_hot`` in a form without
    in-place writes."""

    def __init__(self, state: Any) -> None:
        super().__init__()
        self.state = state

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: Any = None):
        frame = _user_frame_info(sys._getframe(1), getattr(self, "_outside", frozenset()))
        if frame is not None:  # the nodes this call makes carry the user's line
            torch.fx.traceback.set_stack_trace(['File "{}", line {}, in {}\n'.format(*frame)])
        name = getattr(func, "__name__", "")
        if name == "one_hot":  # its C++ form writes in place, past the functionalisation
            from solar.torch._specialise import one_hot

            return one_hot(*args, **(kwargs or {}))
        if name not in _PYTHON_READS or not args or not isinstance(args[0], torch.Tensor):
            return func(*args, **(kwargs or {}))
        value = _read_untraced(func, args, kwargs or {})
        if name == "numpy":
            self.state.note("numpy", _short(value.tolist()))
        else:
            self.state.note(name.strip("_"), _short(value))
        return value


# Reads of a tensor's values into Python (a number, a bool, a list, an array).
_PYTHON_READS = frozenset("item tolist __int__ __index__ __float__ __bool__ numpy".split())


def _read_untraced(func: Any, args: tuple, kwargs: dict) -> Any:
    """``func(*args)`` (a ``_PYTHON_READS`` read) on the real values under the trace: the
    functionalised wrapper unwrapped, no mode recording it."""
    from torch.utils._python_dispatch import _disable_current_modes

    tensor = args[0]
    if torch._C._functorch.is_functionaltensor(tensor):
        torch._sync(tensor)
        tensor = torch._C._functorch._unwrap_functional_tensor(tensor, False)
    with _disable_current_modes():
        return func(tensor, *args[1:], **kwargs)


def _short(value: Any) -> str:
    """A value read into Python, at most 60 characters."""
    text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass
class Attribute:
    """A plain tensor attribute: ``owner.<key>``, at ``path`` from the root module."""

    path: str
    owner: nn.Module
    key: str
    value: torch.Tensor

    @property
    def input_name(self) -> str:
        return "c_" + self.path.replace(".", "_")


def tensor_attributes(module: nn.Module) -> list[Attribute]:
    """The plain tensor attributes of ``module`` and its submodules, in module order: tensors in
    a module's ``__dict__`` that are not parameters or buffers, nor the same tensor object as
    one (an alias such as ``self.original = self.some_buffer``). Tensors inside lists or dicts
    are not included."""
    state = {id(t) for t in module.parameters()} | {id(t) for t in module.buffers()}
    found = []
    for prefix, owner in module.named_modules():
        for key, value in vars(owner).items():
            if (
                isinstance(value, torch.Tensor)
                and not isinstance(value, nn.Parameter)
                and id(value) not in state
            ):
                path = f"{prefix}.{key}" if prefix else key
                found.append(Attribute(path, owner, key, value))
    return found


class _AttributeCall:
    """``module(*args)`` with the plain tensor attributes set from explicit values first; its
    result is ``(model outputs, new values)``, the new values being those of the attributes
    that the forward assigned a tensor that did not enter the call (a tensor it computed: an
    attribute set to an input, a parameter, a buffer or another attribute only changed a
    reference). ``n_outputs`` and ``updated`` tell, after a call, how many output leaves the
    model gave and which attributes the new values are for."""

    def __init__(self, module: nn.Module, attributes: list[Attribute]) -> None:
        self.module = module
        self.attributes = attributes
        self.n_outputs = 0
        self.updated: list[Attribute] = []

    def __call__(self, call: Any, args: tuple, values: list[torch.Tensor]) -> Any:
        from torch.utils import _pytree as pytree

        for attr, value in zip(self.attributes, values, strict=True):
            attr.owner.__dict__[attr.key] = value
        entered = {id(t) for t in pytree.tree_leaves(args) if isinstance(t, torch.Tensor)}
        entered |= {id(t) for t in values}
        entered |= {id(t) for t in self.module.parameters()}
        entered |= {id(t) for t in self.module.buffers()}
        out = call(*args)
        self.n_outputs = len(pytree.tree_leaves(out))
        self.updated = []
        new_values = []
        for attr in self.attributes:
            new = attr.owner.__dict__.get(attr.key)
            if isinstance(new, torch.Tensor) and id(new) not in entered:
                self.updated.append(attr)
                new_values.append(new)
        return out, tuple(new_values)


def _drop_unused_attributes(traced: Traced) -> None:
    """Attribute placeholders nobody reads are not serialized (an unused attribute may be of a
    dtype SOLAR has no name for); their bindings stay, for golden runs of the graph."""
    for node in traced.graph.nodes:
        binding = traced.placeholders.get(node.name)
        if node.op == "placeholder" and binding is not None and binding.kind == "attribute":
            if not node.users:
                traced.dropped.add(node.name)


class _FunctionModule(nn.Module):
    def __init__(self, fn: Any) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args: Any) -> Any:
        return self.fn(*args)


# Ops kept whole although Core ATen decomposes them: their rules know more than the pieces say.
# scaled_dot_product_attention with is_causal decomposes into dense matmuls and a `where` mask
# (the full square of scores); its rule lowers the causal triangle, the work a fused attention
# kernel does (docs/lowering.md). The recurrent layers (nn.LSTM, nn.GRU, nn.RNN) decompose into
# every cell of every step and layer (52,301 ATen nodes for a 6-layer LSTM over 512 steps); their
# rules write one `repeat` over the time steps per layer and direction.
KEPT_WHOLE = (
    "scaled_dot_product_attention.default",
    "lstm.input",
    "gru.input",
    "rnn_tanh.input",
    "rnn_relu.input",
)
# The recurrent ops of KEPT_WHOLE: their outputs' shapes are computed without tracing their
# decomposition (``_rnn_shapes_only``).
_RNN_OPS = ("lstm.input", "gru.input", "rnn_tanh.input", "rnn_relu.input")


def _aten(name: str) -> Any:
    """``torch.ops.aten.<op>.<overload>`` of ``"op.overload"``."""
    op, overload = name.split(".")
    return getattr(getattr(torch.ops.aten, op), overload)


def _decompositions(table: dict | None = None) -> dict:
    """The decomposition table (torch.export's default unless given) minus KEPT_WHOLE."""
    table = dict(torch.export.default_decompositions() if table is None else table)
    for name in KEPT_WHOLE:
        table.pop(_aten(name), None)
    return table


def _rnn_outputs(input: Any, hx: Any, params: Any, *flags: Any) -> tuple:
    """Empty outputs of the shapes an RNN op (lstm/gru/rnn_tanh/rnn_relu ``.input``) returns:
    the output sequence keeps the input's first two dims (time and batch, in either order) and
    has the hidden width (of ``hx``) times the directions; each final state has its initial
    state's shape. Under a fake mode these are fake tensors."""
    states = list(hx) if isinstance(hx, (list, tuple)) else [hx]
    bidirectional = flags[4]
    width = states[0].shape[2] * (2 if bidirectional else 1)
    out = input.new_empty((input.shape[0], input.shape[1], width))
    return (out, *(s.new_empty(s.shape) for s in states))


@contextlib.contextmanager
def _rnn_shapes_only():
    """While tracing, the recurrent ops of KEPT_WHOLE compute their fake outputs from shapes
    alone. torch.export and run_decompositions evaluate an op they keep on FakeTensors to learn
    its outputs, and for these ops that evaluation is their Python decomposition
    (torch/_decomp/decompositions.py, ``lstm_impl``): every cell of every step, about 50 fake
    ops a cell, which took most of the 1,515 s that capturing a 6-layer, 512-step LSTM took
    (bench/README.md). Here the op's Python kernels (export's pre-dispatch trace calls them) and
    its entry in torch's decomposition table (FakeTensorMode runs it) give empty outputs of the
    right shapes when the input is fake, and run as before otherwise; all is restored on exit."""
    from torch._decomp import decomposition_table
    from torch._subclasses.fake_tensor import is_fake

    def shapes_only(original: Any) -> Any:
        def kernel(*args: Any, **kwargs: Any) -> Any:
            if args and isinstance(args[0], torch.Tensor) and is_fake(args[0]) and not kwargs:
                return _rnn_outputs(*args)
            return original(*args, **kwargs)

        return kernel

    kernels: dict[Any, dict] = {}
    decompositions: dict[Any, Any] = {}
    try:
        for name in _RNN_OPS:
            op = _aten(name)
            kernels[op] = dict(op.py_kernels)
            for key, kernel in kernels[op].items():
                op.py_kernels[key] = shapes_only(kernel)
            op._dispatch_cache.clear()
            if op in decomposition_table:
                decompositions[op] = decomposition_table[op]
                decomposition_table[op] = shapes_only(decompositions[op])
        yield
    finally:
        for op, saved in kernels.items():
            op.py_kernels.clear()
            op.py_kernels.update(saved)
            op._dispatch_cache.clear()
        decomposition_table.update(decompositions)


def exported_placeholders(
    sig: Any, constants: dict, attributes: dict[str, str] | None = None
) -> dict:
    """The binding of each placeholder of an exported program, by name, from its graph
    signature: user inputs in order (those in ``attributes``, input name -> module path, are the
    module's tensor attributes), parameters, buffers and constant tensors (``constants``: the
    exported program's). Another input kind is a CaptureError."""
    from torch.export.graph_signature import InputKind

    attributes = attributes or {}
    out: dict[str, Binding] = {}
    n_inputs = 0
    for spec in sig.input_specs:
        name = getattr(spec.arg, "name", None)
        if name is None:
            continue
        if spec.kind == InputKind.USER_INPUT and name in attributes:
            out[name] = Binding("attribute", target=attributes[name])
        elif spec.kind == InputKind.USER_INPUT:
            out[name] = Binding("input", index=n_inputs)
            n_inputs += 1
        elif spec.kind == InputKind.PARAMETER:
            out[name] = Binding("weight", target=spec.target)
        elif spec.kind == InputKind.BUFFER:
            out[name] = Binding("buffer", target=spec.target)
        elif spec.kind == InputKind.CONSTANT_TENSOR:
            out[name] = Binding("constant", value=constants[spec.target])
        else:
            raise CaptureError(f"unsupported exported input kind {spec.kind.name} ('{name}')")
    return out


@contextlib.contextmanager
def _bodies_interpreted(gm: torch.fx.GraphModule):
    """While active, the subgraphs of ``gm``'s higher-order ops run node by node (a
    torch.fx.Interpreter) instead of as compiled code, at any depth.

    torch.export wraps the ops of a ``torch.no_grad()`` block or decorated function, of a
    ``torch.enable_grad()`` or ``torch.autocast`` block, in one higher-order op
    (``torch.ops.higher_order.wrap_with_set_grad_enabled``, ``wrap_with_autocast``) whose body is
    a submodule. ``run_decompositions`` calls that body as generated code, so every node it makes
    from the body has the wrapper as its provenance (``from_node``) and a line of the generated
    code as its stack trace: the capture saw one framework operation where the program ran
    several (issue 29: the unfused fidelity of ``relu(x @ w1) @ w2`` under no_grad was its fused
    one). Run by an Interpreter, each body node is the current node while it runs (torch.fx's
    preserved node meta, which run_decompositions turns on), so the nodes made from it name it
    as their origin and carry its stack trace, as the nodes outside any wrapper do. Interpreting
    a graph computes what its code computes: the values are the same."""
    patched: list[torch.fx.GraphModule] = []

    def patch(owner: torch.fx.GraphModule) -> None:
        for node in owner.graph.nodes:
            if node.op != "get_attr":
                continue
            sub = getattr(owner, node.target, None)
            if isinstance(sub, torch.fx.GraphModule) and "forward" not in sub.__dict__:
                patch(sub)
                sub.forward = lambda *a, _sub=sub: torch.fx.Interpreter(_sub).run(*a)
                patched.append(sub)

    try:
        patch(gm)
        yield
    finally:
        for sub in patched:
            del sub.forward


def _updates_an_input(ep: Any) -> bool:
    """Whether the exported (not yet functional) program writes into a user input in place:
    an op that mutates its first argument, a user input or a view of one."""
    from torch.export.graph_signature import InputKind

    inputs = {
        spec.arg.name
        for spec in ep.graph_signature.input_specs
        if spec.kind == InputKind.USER_INPUT
    }
    for node in ep.graph.nodes:
        target = node.target
        if node.op != "call_function" or not isinstance(target, torch._ops.OpOverload):
            continue
        if not target._schema.is_mutable or not node.args:
            continue
        base = node.args[0]
        while isinstance(base, torch.fx.Node) and base.op == "call_function" and base.args:
            base = base.args[0]
        if isinstance(base, torch.fx.Node) and base.name in inputs:
            return True
    return False


def _trace_export(
    module: nn.Module, args: tuple, attributes: list[Attribute] = (), dynamic_shapes: Any = None
) -> Traced:
    from torch.export.graph_signature import OutputKind

    with _rnn_shapes_only():
        if attributes and dynamic_shapes is not None:
            raise CaptureError("symbolic sizes are not traced with tensor attributes")
        if attributes:
            ep, wrapped = _export_with_attributes(module, args, attributes)
        else:
            ep = torch.export.export(module, args, dynamic_shapes=dynamic_shapes)
            wrapped = None
        table = _decompositions()
        if _updates_an_input(ep):
            for name in _KEPT_FOR_MUTATIONS:
                table.pop(_aten(name), None)
        with _bodies_interpreted(ep.graph_module):
            ep = ep.run_decompositions(table)
    sig = ep.graph_signature
    by_input = {attr.input_name: attr.path for attr in attributes}
    traced = Traced(graph=ep.graph, method="torch.export", module=ep.graph_module)
    traced.placeholders.update(exported_placeholders(sig, ep.constants, by_input))
    output_node = next(n for n in ep.graph.nodes if n.op == "output")
    values = list(output_node.args[0])
    n_outputs = 0
    parts: dict = {}  # an input's updated value (FX node) -> the part written, its output
    for spec, value in zip(sig.output_specs, values, strict=True):
        if spec.kind == OutputKind.USER_OUTPUT and wrapped and n_outputs >= wrapped.n_outputs:
            attr = wrapped.updated[n_outputs - wrapped.n_outputs]
            traced.outputs.append((value, Binding("attribute_update", target=attr.path)))
            n_outputs += 1
        elif spec.kind == OutputKind.USER_OUTPUT:
            traced.outputs.append((value, Binding("output", index=n_outputs)))
            n_outputs += 1
        elif spec.kind == OutputKind.BUFFER_MUTATION:
            traced.outputs.append((value, Binding("buffer_mutation", target=spec.target)))
        elif spec.kind == OutputKind.USER_INPUT_MUTATION:
            dst = next(
                (n for n in ep.graph.nodes if n.op == "placeholder" and n.name == spec.target),
                None,
            )
            binding = traced.placeholders.get(dst.name) if dst is not None else None
            if binding is not None and binding.kind == "attribute":
                update = _attribute_written(traced, ep.graph, value, dst, binding, wrapped)
                if update is not None:
                    traced.outputs.append(update)
                continue
            if binding is None or binding.kind != "input":
                raise CaptureError(f"the model updates '{spec.target}' in place")
            updated, value = value, _mutation_output(traced, ep.graph, value, dst)
            if value is not updated:  # the part written (a program that returns it: below)
                parts[updated] = value
            traced.outputs.append(
                (value, Binding("input_mutation", index=binding.index, target=dst.name))
            )
        else:
            raise CaptureError(f"unsupported exported output kind {spec.kind.name}")
    traced.outputs = _returned_inputs_as_parts(traced.outputs, parts)
    # user outputs first, then the buffers' new values (export lists the mutations first), then
    # the inputs' updates, then the attributes'
    order = {"output": 0, "buffer_mutation": 1, "input_mutation": 2, "attribute_update": 3}
    traced.outputs.sort(key=lambda item: order[item[1].kind])
    return traced


def _returned_inputs_as_parts(outputs: list, parts: dict) -> list:
    """``outputs`` with each program output that is an input updated in place (``key_cache[:,
    :, pos] = k; return key_cache``: the updated tensor, FX node, is a key of ``parts``)
    replaced by the part the update writes (``parts``' value, ``_mutation_output``). The
    returned tensor is the input's own storage, not a new tensor: a real kernel writes the rows
    and returns the cache it was given, so the program writes the rows once, as the input's
    update does (both outputs are then the one part). Counting the whole cache as written
    would charge a full copy no kernel makes; this errs toward fewer bytes."""
    if not parts:
        return outputs
    return [
        (parts.get(value, value), binding) if binding.kind == "output" else (value, binding)
        for value, binding in outputs
    ]


def _export_with_attributes(
    module: nn.Module, args: tuple, attributes: list[Attribute]
) -> tuple[Any, _AttributeCall]:
    """torch.export of ``module(*args)`` with its plain tensor attributes as keyword inputs
    named ``Attribute.input_name`` (module docstring). The forward is patched on the instance
    for the duration, with a signature that keeps the user's argument names."""
    wrapped = _AttributeCall(module, attributes)
    original = module.forward
    names = [attr.input_name for attr in attributes]

    def forward(*call_args: Any, **kwargs: Any) -> Any:
        values = [kwargs.pop(name) for name in names]
        return wrapped(lambda *a: original(*a, **kwargs), call_args, values)

    try:
        params = list(inspect.signature(original).parameters.values())
    except (TypeError, ValueError):
        params = [inspect.Parameter("args", inspect.Parameter.VAR_POSITIONAL)]
    for p in params:
        if p.name in names:
            attr = attributes[names.index(p.name)]
            raise CaptureError(
                f"forward's argument '{p.name}' has the input name of the tensor attribute "
                f"'{attr.path}'"
            )
    extra = [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY) for n in names]
    at = next((i for i, p in enumerate(params) if p.kind == p.VAR_KEYWORD), len(params))
    signature = inspect.Signature(params[:at] + extra + params[at:])  # before any **kwargs
    forward.__signature__ = signature  # type: ignore[attr-defined]
    had_own = "forward" in module.__dict__
    module.forward = forward
    try:
        kwargs = {attr.input_name: attr.value for attr in attributes}
        ep = torch.export.export(module, args, kwargs=kwargs)
    finally:
        if had_own:
            module.forward = original
        else:
            del module.forward
    return ep, wrapped


class _RecurrentRefused(_UserCalls):
    """While make_fx traces, refuses a recurrent layer (``torch._VF.lstm``, ``gru``,
    ``rnn_tanh``, ``rnn_relu``: what nn.LSTM, nn.GRU and nn.RNN call) with a CaptureError that
    names the op and the user's line. Only torch.export keeps these ops whole (KEPT_WHOLE):
    make_fx sees their C++ CPU implementation instead, every cell of every step and layer with
    in-place ops functionalization does not see (aten.add_.Tensor, aten.sigmoid_.default: a
    64,562-node graph for the older problem set's 6-layer GRU) or one aten.mkldnn_rnn_layer per
    layer for an LSTM, neither of which the lowering reads (issue 18)."""

    _NAMES = {"lstm", "gru", "rnn_tanh", "rnn_relu"}

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: Any = None):
        name = getattr(func, "__name__", "")
        if name in self._NAMES and getattr(func, "__module__", "") in ("torch._VF", "torch", None):
            packed = len(args) > 1 and isinstance(args[1], torch.Tensor) and args[1].dim() == 1
            op = f"aten.{name}.{'data' if packed else 'input'}"
            where = self.user_frame()
            raise CaptureError(
                f"{op}{' at ' + where if where else ''}: a recurrent layer is kept whole only by "
                "torch.export; make_fx would trace its CPU implementation cell by cell"
            )
        return func(*args, **(kwargs or {}))


def _raised_at(e: BaseException) -> str:
    """Where in the user's code ``e`` was raised: the innermost user frame of its traceback,
    or empty."""
    for f in reversed(traceback.extract_tb(e.__traceback__)):
        if where := user_location(f.filename, f.lineno, f.name):
            return where
    return ""


def _frames_from(frame: Any) -> frozenset[int]:
    """The ids of ``frame`` and of every frame that called it."""
    ids = []
    while frame is not None:
        ids.append(id(frame))
        frame = frame.f_back
    return frozenset(ids)


def _user_frame_info(frame: Any, outside: frozenset[int]) -> tuple[str, int, str] | None:
    """``(path, line, function)`` of the innermost user frame (``_user_frame``), or None."""
    while frame is not None and id(frame) not in outside:
        code = frame.f_code
        if not is_library_file(code.co_filename):
            return code.co_filename, frame.f_lineno, code.co_name
        frame = frame.f_back
    return None


def _user_frame(frame: Any, outside: frozenset[int]) -> str:
    """The innermost user frame from ``frame`` outwards, stopping at the first frame in
    ``outside`` (the caller of the capture), as ``file:line in function``, or empty (read from
    the frames directly: it is asked on every torch call while make_fx traces)."""
    info = _user_frame_info(frame, outside)
    return user_location(*info) if info else ""


def _bind_placeholders(
    traced: Traced,
    placeholders: list,
    state_kinds: list[tuple[str, str]],
    attributes: list[Attribute],
    arg_names: list[str],
) -> tuple[dict[str, str], dict[str, int]]:
    """Names and binds make_fx's placeholders in order: the weights and buffers
    (``state_kinds``), the attributes, then the arguments. Returns the kind of each weight or
    buffer placeholder and the position of each input placeholder."""
    n_state, n_attrs = len(state_kinds), len(attributes)
    by_node: dict[str, str] = {}
    inputs: dict[str, int] = {}  # input placeholder -> position
    for k, node in enumerate(placeholders):
        if k < n_state:
            kind, target = state_kinds[k]
            node.name = ("p_" if kind == "weight" else "b_") + target.replace(".", "_")
            traced.placeholders[node.name] = Binding(kind, target=target)
            by_node[node.name] = kind
            node._solar_target = target  # read back by _trace_make_fx, for mutation copies
        elif k < n_state + n_attrs:
            attr = attributes[k - n_state]
            node.name = attr.input_name
            traced.placeholders[node.name] = Binding("attribute", target=attr.path)
        else:
            node.name = arg_names[k - n_state - n_attrs]
            traced.placeholders[node.name] = Binding("input", index=k - n_state - n_attrs)
            inputs[node.name] = k - n_state - n_attrs
    return by_node, inputs


def _trace_make_fx(
    module: nn.Module, args: tuple, attributes: list[Attribute] = (), real: bool = False
) -> Traced:
    """make_fx's trace of ``module(*args)`` on FakeTensors, or with ``real`` on the real inputs,
    reading the data where the program does and with the specialising replacements of
    solar.torch._specialise."""
    from torch._decomp import core_aten_decompositions
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.utils import _pytree as pytree

    params = dict(module.named_parameters())
    buffers = dict(module.named_buffers())
    flat_args, in_spec = pytree.tree_flatten(args)
    n_state = len(params) + len(buffers)
    n_attrs = len(attributes)
    wrapped = _AttributeCall(module, attributes)

    def flat_fn(*flat: Any) -> list:
        state = dict(zip(list(params) + list(buffers), flat[:n_state], strict=True))
        values = list(flat[n_state : n_state + n_attrs])
        call_args = pytree.tree_unflatten(list(flat[n_state + n_attrs :]), in_spec)
        out, new_values = wrapped(
            lambda *a: torch.func.functional_call(module, state, a), tuple(call_args), values
        )
        return pytree.tree_leaves(out) + list(new_values)

    functional = torch.func.functionalize(flat_fn, remove="mutations_and_views")
    table = _decompositions(core_aten_decompositions())
    for name in _KEPT_FOR_MUTATIONS:  # a write into a view: the part written stays visible
        table.pop(_aten(name), None)
    if real:
        from solar.torch._specialise import decompositions

        table.update(decompositions())
    # On real inputs the user's line of each node is set by the caller's torch function mode
    # (``_ReadsNoted``): one frame a call, not a traceback a node (the larger part of the
    # trace's time on an MoE layer's loop over experts)
    lines = torch.fx.traceback.preserve_node_meta() if real else contextlib.nullcontext()
    with _RecurrentRefused(), lines:
        gm = make_fx(
            functional,
            decomposition_table=table,
            tracing_mode="real" if real else "fake",
            record_stack_traces=not real,
            _error_on_data_dependent_ops=not real,
        )(*params.values(), *buffers.values(), *(a.value for a in attributes), *flat_args)
    if real:
        _drop_scalar_reads(gm.graph)
    _refuse_in_place(gm.graph)
    traced = Traced(graph=gm.graph, method="make_fx", module=gm)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    arg_names = _argument_names(module, len(flat_args))
    state_kinds = [("weight", t) for t in params] + [("buffer", t) for t in buffers]
    by_node, inputs = _bind_placeholders(traced, placeholders, state_kinds, attributes, arg_names)
    mutations: list[tuple[Any, Any, Any]] = []
    attribute_writes: list[tuple[Any, Binding]] = []
    for node in gm.graph.nodes:
        if node.op == "get_attr":
            value = getattr(gm, node.target)
            traced.placeholders[node.name] = Binding("constant", value=value)
        # functionalize writes mutated inputs back with copy_(input, new value) at the end
        if node.op == "call_function" and node.target is torch.ops.aten.copy_.default:
            dst, src = node.args[0], node.args[1]
            if dst.name in inputs:
                mutations.append((node, dst, src))
                continue
            binding = traced.placeholders.get(dst.name)
            if binding is not None and binding.kind == "attribute":
                traced.dropped.add(node.name)
                update = _attribute_written(traced, gm.graph, src, dst, binding, wrapped)
                if update is not None:
                    attribute_writes.append(update)
                continue
            if by_node.get(dst.name) != "buffer":
                raise CaptureError(f"the model mutates its '{dst.name}' in place")
            traced.outputs.append((src, Binding("buffer_mutation", target=dst._solar_target)))
            traced.dropped.add(node.name)
    output_node = next(n for n in gm.graph.nodes if n.op == "output")
    results = list(output_node.args[0])
    user = [(v, Binding("output", index=i)) for i, v in enumerate(results[: wrapped.n_outputs])]
    updates = [
        (v, Binding("attribute_update", target=attr.path))
        for v, attr in zip(results[wrapped.n_outputs :], wrapped.updated, strict=True)
    ]
    written = []
    parts = {}
    for copy, dst, src in mutations:  # the copy_ back into the input: its new value is an output
        traced.dropped.add(copy.name)
        value = _mutation_output(traced, gm.graph, src, dst)
        written.append((value, Binding("input_mutation", index=inputs[dst.name], target=dst.name)))
        if value is not src:
            parts[src] = value
    user = _returned_inputs_as_parts(user, parts)
    traced.outputs = user + traced.outputs + written + updates + attribute_writes
    return traced


def _attribute_written(
    traced: Traced, graph: Any, value: Any, dst: Any, binding: Binding, wrapped: Any
) -> tuple[Any, Binding] | None:
    """The output for an in-place write into a plain tensor attribute (``self.h.copy_(h0)``;
    the attribute is traced as input ``dst``, ``value`` its new value): None when the forward
    rebinds the attribute afterwards (``self.h = ...``: the tensor written in place is then
    dropped, and what the program read of it after the write is already in the graph), else
    the attribute's new value, as ``_mutation_output`` makes it for an input (the part written,
    or the whole new value)."""
    if wrapped is not None and any(a.path == binding.target for a in wrapped.updated):
        return None
    return _mutation_output(traced, graph, value, dst), Binding(
        "attribute_update", target=binding.target
    )


# The functional updates of a part of a tensor (what an in-place write into an input becomes):
# op -> (position of the updated tensor, position of the values written).
_PART_UPDATES = {
    "aten.select_scatter.default": (0, 1),
    "aten.slice_scatter.default": (0, 1),
    "aten.index_put.default": (0, 2),
}
# Kept whole while an input is updated in place: their decompositions (a `where` over the whole
# tensor) hide which part is written.
_KEPT_FOR_MUTATIONS = ("select_scatter.default", "slice_scatter.default")


_COPY_BACK = torch.ops.aten.copy_.default  # make_fx's write-back of a mutated input


def _mutation_output(traced: Traced, graph: Any, value: Any, dst: Any) -> Any:
    """The output that stands for an in-place update of input ``dst`` whose new value is FX
    node ``value``. When the new value is a functional update of a part of ``dst``
    (``_PART_UPDATES``, not accumulating) and nothing else reads it, the output is the part
    written (its values, broadcast to the part's shape): an in-place kernel writes those
    elements and no others, so they are the bytes the update moves. The functional update is
    not serialized unless the program reads the updated tensor afterwards (it is then an
    intermediate of the graph). Otherwise the output is the whole new value (every element
    written)."""
    from solar.torch._where import _op_name

    if value.op != "call_function" or not isinstance(value.target, torch._ops.OpOverload):
        return value
    op = _op_name(value.target)
    if op not in _PART_UPDATES or value.args[0] is not dst:
        return value
    if op == "aten.index_put.default" and (len(value.args) > 3 and value.args[3]):
        return value  # accumulate=True reads the part too
    src = value.args[_PART_UPDATES[op][1]]
    if not isinstance(src, torch.fx.Node):
        return value
    part = _part_shape(op, value)
    if part is None:
        return value
    traced.golden_from_graph = True
    written, anchor = src, value
    if list(src.meta["val"].shape) != part:  # values broadcast into the part
        with graph.inserting_after(value):
            written = anchor = graph.call_function(torch.ops.aten.expand.default, (src, part))
        written.meta["val"] = src.meta["val"].expand(part)
        written.meta["stack_trace"] = value.meta.get("stack_trace")
    # a copy of its own: the part's values as written, once (after the expand: each node
    # inserted after a node goes right after it, before the ones inserted there earlier)
    with graph.inserting_after(anchor):
        copy = graph.call_function(torch.ops.aten.clone.default, (written,))
        copy.meta["val"] = written.meta["val"].clone()
        copy.meta["stack_trace"] = value.meta.get("stack_trace")
    copy.name = f"{dst.name}_written"
    readers = [u for u in value.users if u.op != "output" and u.target is not _COPY_BACK]
    if not readers:
        traced.dropped.add(value.name)
    return copy


def _part_shape(op: str, node: Any) -> list[int] | None:
    """The shape of the part of its first argument that a ``_PART_UPDATES`` node writes."""
    base = node.args[0].meta["val"]
    if op != "aten.index_put.default":
        return list(node.args[1].meta["val"].shape)
    indices = node.args[1]
    meta = []
    for index in indices:
        if index is None:
            meta.append(slice(None))
        else:
            v = index.meta["val"]
            meta.append(torch.zeros(v.shape, dtype=v.dtype, device="meta"))
    try:
        return list(torch.empty(base.shape, device="meta")[tuple(meta)].shape)
    except Exception:
        return None


def _drop_scalar_reads(graph: Any) -> None:
    """Removes the nodes of a real-mode trace that read a value of the data into Python
    (``aten._local_scalar_dense``): the value is a constant of the graph where it was used."""
    for node in reversed(list(graph.nodes)):
        if node.op == "call_function" and str(node.target) in _SCALAR_READS and not node.users:
            graph.erase_node(node)


def _refuse_in_place(graph: Any) -> None:
    """A CaptureError naming the first in-place op (``aten.add_.Tensor``) left in make_fx's
    graph, and its user's line. functionalize removes the model's own mutations, but not those
    of an op's C++ composite implementation that make_fx traces through (nn.GRUCell's
    ``add_``/``mul_``/``sigmoid_``); the copy_ of a mutated buffer is read by the caller."""
    from solar.torch._where import _location, _op_name

    for node in graph.nodes:
        target = node.target
        if node.op != "call_function" or not isinstance(target, torch._ops.OpOverload):
            continue
        if target is torch.ops.aten.copy_.default or not target._schema.name.endswith("_"):
            continue
        args = target._schema.arguments
        if not any(a.alias_info is not None and a.alias_info.is_write for a in args):
            continue
        where = _location(node, None)
        raise CaptureError(
            f"{_op_name(target)}{' at ' + where if where else ''}: an in-place op that make_fx's "
            "functionalization left in the graph"
        )


def _argument_names(module: nn.Module, count: int) -> list[str]:
    """Names for the flattened inputs: forward's parameter names when they line up, else x0..."""
    try:
        params = list(inspect.signature(module.forward).parameters.values())
    except (TypeError, ValueError):
        params = []
    names = [
        p.name
        for p in params
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    if len(names) == count and not isinstance(module, _FunctionModule):
        return names
    return [f"x{i}" for i in range(count)]
