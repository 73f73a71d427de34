"""The PyTorch side of a benchmark definition (docs/benchmarks.md): a workload's inputs made the
way the format says, and its ``run(...)`` captured through the PyTorch adapter
(``solar.torch.captured_call``) and analysed by the one pipeline (``solar.stages.run``).
Imports torch; ``solar.suites.definition`` reads the files without it.

- ``reference_namespace(definition)``: the reference source run once (its ``run`` and the
  custom inputs entry point).
- ``make_inputs(definition, workload, namespace)``: ``Inputs``, the values in ``run``'s order
  and the notes on how they were made: ``random`` by dtype from a generator seeded with the
  workload's index; ``scalar`` the value; ``custom`` from ``custom_inputs_entrypoint(axes_and_
  scalars, device)``; ``safetensors`` read from its file (``safetensors_file``: the path looked
  up from the workload's and the definition's folders up); where the file is not there, an
  indptr's values built from the axes (``_build_values``), else a tensor of the declared shape
  and dtype whose values were not read (refused where its values decide a shape:
  ``check_safetensors``).
- ``Captures(definition, workloads)``: how the workloads are captured: once for all the
  workloads that differ only in their sizes (``solar.torch._symbolic``: torch.export with the
  dimensions of the non-const axes symbolic, the trace re-specialised to each workload's sizes),
  else alone; ``count`` says how many captures were made.
- ``make(definition, workload, namespace, fake)``: the inputs and ``run`` as a module on them,
  as FakeTensors (no memory) or for real.
- ``analyse_workload(definition, workload, namespace, options, captures=...)``: the workload's
  report and notes: captured on FakeTensors first, on real inputs where values of the data
  decide the program; real inputs are made for the golden run only.

A reference written for a GPU (``device="cuda"``, ``.cuda()``, ``.to("cuda")``) runs on the CPU
(``OnCpu``), and the workload's notes say so once.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import linecache
import math
import os
import re
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from solar.document import format_bytes
from solar.options import AnalysisError, Options
from solar.stages import run as run_stages
from solar.suites.definition import Definition, DefinitionError, Workload, resolve_axes, shape_of
from solar.torch._device import CUDA_NOTE, DEVICE, OnCpu

# The format's dtypes as torch's.
TORCH_DTYPES = {
    "float64": torch.float64,
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float8_e4m3fn": torch.float8_e4m3fn,
    "float8_e5m2": torch.float8_e5m2,
    "float4_e2m1": getattr(torch, "float4_e2m1fn_x2", None),  # no unpacked fp4 in torch
    "float4_e2m1fn_x2": getattr(torch, "float4_e2m1fn_x2", None),
    "int64": torch.int64,
    "int32": torch.int32,
    "int16": torch.int16,
    "int8": torch.int8,
    "uint8": torch.uint8,
    "bool": torch.bool,
}

__all__ = ["Inputs", "analyse_workload", "make_inputs", "reference_namespace"]


def reference_namespace(definition: Definition) -> dict[str, Any]:
    """The globals of the definition's reference after running it (its imports, ``run`` and
    the custom inputs entry point); a failure is one line naming the file. Its lines are known
    to ``linecache`` as ``DEFINITION#reference`` (tracebacks through it show them)."""
    namespace: dict[str, Any] = {"__name__": f"solar_reference_{definition.name}"}
    filename = f"{definition.path}#reference"
    lines = definition.reference.splitlines(keepends=True)
    linecache.cache[filename] = (len(definition.reference), None, lines, filename)
    try:
        exec(compile(definition.reference, filename, "exec"), namespace)  # noqa: S102
    except Exception as e:  # the user's code: its error, one line
        raise DefinitionError(
            f"{definition.path}: reference: {type(e).__name__}: {_first_line(e)}"
        ) from e
    return namespace


@dataclass
class Inputs:
    """``run``'s arguments in order (``values``: its tensors are the captured program's
    inputs), the notes on how they were made, and the inputs read from safetensors files
    (whose values SOLAR did not read)."""

    values: list[Any]
    notes: list[str] = field(default_factory=list)
    safetensors: list[str] = field(default_factory=list)  # inputs whose values were not read
    # run's parameter of each value (the declared inputs the workload gives, in order, then
    # the optional ones it names): run is called with them as keywords
    names: list[str] = field(default_factory=list)
    # the CSV's ``inputs`` cell: the inputs whose file was not there and whose values SOLAR
    # built from the definition's axes (empty: every input made as the workload says)
    built: str = ""
    # the FakeTensorMode the tensors were made in (``make_inputs(fake=...)``), or None: real
    fake: Any = None

    def kwargs(self) -> dict[str, Any]:
        return dict(zip(self.names, self.values, strict=True))


def make_inputs(
    definition: Definition,
    workload: Workload,
    namespace: dict,
    on_cpu: OnCpu | None = None,
    check: bool = True,
    fake: Any = None,
) -> Inputs:
    """The inputs of ``run`` for ``workload`` (module doc); ``on_cpu``: the device mapping the
    custom entry point runs under. ``check``: the memory they and the reference need checked
    first (``check_input_memory``, ``check_reference_memory``). ``fake``: a ``FakeTensorMode``
    the tensors are made in (shapes and dtypes, no memory, no values: nothing is drawn; a file's
    tensor is read, then faked; the custom entry point runs in the mode); no memory check."""
    on_cpu = on_cpu or OnCpu()
    axes = resolve_axes(definition, workload)
    if check and fake is None:
        check_input_memory(definition, workload, axes)
        check_reference_memory(definition, workload, namespace)
    generator = torch.Generator().manual_seed(workload.index)
    values: dict[str, Any] = {}
    notes: list[str] = []
    unread: list[str] = []
    built: list[str] = []
    # the declared inputs the workload gives (it may omit one run has a default for), then the
    # optional ones it names that the definition does not declare
    names = [n for n in definition.inputs if n in workload.inputs]
    names += [n for n in workload.inputs if n not in definition.inputs]
    for name in names:
        given = workload.inputs[name]
        spec = definition.inputs.get(name)
        at = f"{workload.where}: inputs.{name}"
        shape = shape_of(spec, axes) if spec is not None else None
        if given.kind == "scalar":
            if shape is None:
                values[name] = given.value
            else:
                with fake or contextlib.nullcontext():
                    values[name] = torch.full(shape, given.value, dtype=_dtype(spec.dtype, at))
        elif given.kind == "safetensors":
            file = safetensors_file(definition, workload, given.path)
            if file is not None:
                values[name] = _read_safetensors(file, given, spec, shape, at)
                notes.append(f"input '{name}' read from {given.path} (key '{given.tensor_key}')")
                continue
            made = _build_values(definition, name, axes) if spec is not None else None
            if made is not None:
                values[name], how = made
                built.append(f"{name} ({given.path} not found)")
                notes.append(
                    f"input '{name}': its file {given.path} is not there; built from the "
                    f"definition's axes: {how}"
                )
                continue
            if spec is None:
                raise DefinitionError(
                    f"{at}: the file {given.path} is not there, and the definition declares no "
                    f"shape for '{name}'"
                )
            values[name] = _random(shape or (), _dtype(spec.dtype, at), generator, fake)
            unread.append(name)
            notes.append(
                f"input '{name}': its file {given.path} (key '{given.tensor_key}') is not "
                "there: a tensor of its shape and dtype stands in (its values decide no shape)"
            )
        elif given.kind == "random":
            if spec is None:
                raise DefinitionError(
                    f"{at}: random, but the definition declares no shape for '{name}' (a "
                    "parameter of run with a default): give it as scalar, custom or safetensors"
                )
            values[name] = _random(shape or (), _dtype(spec.dtype, at), generator, fake)
    custom = [n for n, g in workload.inputs.items() if g.kind == "custom"]
    if custom:
        scalars = {n: values[n] for n, g in workload.inputs.items() if g.kind == "scalar"}
        with fake or contextlib.nullcontext():
            made = _custom(
                definition, workload, namespace, {**axes, **workload.flags, **scalars}, on_cpu
            )
        values.update(_custom_values(definition, workload, made, axes))
        notes.append(
            f"input(s) {', '.join(custom)} made by {definition.custom_inputs_entrypoint}"
            f"(axes_and_scalars, device='cpu') with torch.manual_seed({workload.index})"
        )
    notes += _scalar_notes(definition, workload, values)
    ordered = [values[name] for name in names]
    if fake is not None:  # a file's tensor, an indptr built from the axes: real until here
        ordered = [_faked(v, fake) for v in ordered]
    built_cell = "; ".join(f"built: {b}" for b in built)
    return Inputs(ordered, notes, unread, names, built_cell, fake)


def _custom_values(definition: Definition, workload: Workload, made: dict, axes: dict) -> dict:
    """The custom inputs of ``workload`` from what the custom entry point ``made``, each checked
    against its declared shape and dtype."""
    values = {}
    for name in [n for n, g in workload.inputs.items() if g.kind == "custom"]:
        if name not in made:
            raise DefinitionError(
                f"{workload.where}: inputs.{name}: custom_inputs_entrypoint "
                f"'{definition.custom_inputs_entrypoint}' made no '{name}'"
            )
        spec = definition.inputs.get(name)
        if spec is not None:
            at = f"{workload.where}: inputs.{name}"
            _check_made(made[name], spec, shape_of(spec, axes), at)
        values[name] = made[name]
    return values


def _scalar_notes(definition: Definition, workload: Workload, values: dict) -> list[str]:
    """The notes on the scalars fixed in the captured program, the flags among them and the
    declared inputs the workload does not give."""
    notes = []
    fixed = [
        n
        for n, g in workload.inputs.items()
        if g.kind == "scalar"
        and (definition.inputs.get(n) is None or definition.inputs[n].shape is None)
    ]
    if fixed:
        listed = ", ".join(f"{n}={values[n]!r}" for n in fixed)
        notes.append(f"scalar(s) {listed} fixed in the captured program")
    flags = [n for n in workload.flags if n in fixed]
    if flags:
        notes.append(f"flag(s) {', '.join(flags)} given by the workload's axes")
    omitted = [n for n in definition.inputs if n not in workload.inputs]
    if omitted:
        notes.append(f"input(s) {', '.join(omitted)} not given: run's default")
    return notes


def safetensors_file(definition: Definition, workload: Workload, path: str) -> str | None:
    """The file of a ``safetensors`` input, or None when it is not there. The format gives the
    path relative to the dataset's root (FlashInfer-Bench's TraceSet), which holds the
    definition and workload files somewhere below it: the path is looked up from the workload
    file's folder and the definition's, then from each folder above them."""
    if os.path.isabs(path):
        return path if os.path.isfile(path) else None
    workload_file = workload.where.rsplit(":", 1)[0]
    seen: set[str] = set()
    for start in (os.path.dirname(workload_file), os.path.dirname(definition.path)):
        folder = os.path.abspath(start or ".")
        while folder not in seen:
            seen.add(folder)
            candidate = os.path.join(folder, path)
            if os.path.isfile(candidate):
                return candidate
            parent = os.path.dirname(folder)
            if parent == folder:
                break
            folder = parent
    return None


def _read_safetensors(
    file: str, given: Any, spec: Any, shape: tuple[int, ...] | None, at: str
) -> torch.Tensor:
    """The tensor ``given.tensor_key`` of ``file`` (the ``safetensors`` package), checked
    against the declared shape and dtype (where the definition declares them)."""
    try:
        from safetensors import safe_open
    except ImportError as e:
        raise DefinitionError(
            f"{at}: reading {given.path} needs the 'safetensors' package "
            "(pip install 'solar[definitions]')"
        ) from e
    try:
        with safe_open(file, framework="pt") as f:
            keys = sorted(f.keys())
            if given.tensor_key not in keys:
                raise DefinitionError(
                    f"{at}: {given.path} has no tensor '{given.tensor_key}' "
                    f"(it has: {', '.join(keys) or 'none'})"
                )
            tensor = f.get_tensor(given.tensor_key)
    except DefinitionError:
        raise
    except Exception as e:  # not a safetensors file, or a damaged one: the user's file
        raise DefinitionError(f"{at}: cannot read {given.path}: {_first_line(e)}") from e
    if shape is not None and tuple(tensor.shape) != shape:
        raise DefinitionError(
            f"{at}: '{given.tensor_key}' in {given.path} has shape {list(tensor.shape)}, "
            f"not {list(shape)}"
        )
    if spec is not None and tensor.dtype != TORCH_DTYPES.get(spec.dtype):
        raise DefinitionError(
            f"{at}: '{given.tensor_key}' in {given.path} is {tensor.dtype}, not {spec.dtype}"
        )
    return tensor


def _indptr_total(definition: Definition, name: str, axes: dict[str, int]) -> int | None:
    """The total an indptr input ends at: the axis a constraint equates with its last value
    (``num_kv_indices == kv_indptr[-1].item()``), else the length of the indices it points into
    (``kv_indices`` beside ``kv_indptr``, one dimension); None when the definition says
    neither."""
    last = rf"{re.escape(name)}\s*\[\s*-1\s*\](?:\s*\.\s*item\s*\(\s*\))?"
    for constraint in definition.constraints:
        for pattern in (rf"^\s*(\w+)\s*==\s*{last}\s*$", rf"^\s*{last}\s*==\s*(\w+)\s*$"):
            match = re.match(pattern, constraint)
            if match and match.group(1) in axes:
                return axes[match.group(1)]
    indices = definition.inputs.get(name[: -len("indptr")] + "indices")
    if indices is not None and indices.shape is not None and len(indices.shape) == 1:
        return shape_of(indices, axes)[0]
    return None


def _build_values(
    definition: Definition, name: str, axes: dict[str, int]
) -> tuple[torch.Tensor, str] | None:
    """Values that meet the definition's constraints, built from its axes, for an input whose
    file is not there: an indptr (``*indptr``, integers, one dimension of n + 1) of n equal
    lengths summing to its total (the first ``total % n`` one longer), the paged and ragged
    attention's ``kv_indptr``/``qo_indptr``; ``(tensor, how)``, or None where the definition
    does not say enough."""
    spec = definition.inputs[name]
    shape = shape_of(spec, axes)
    dtype = TORCH_DTYPES.get(spec.dtype)
    if (
        not name.endswith("indptr")
        or shape is None
        or len(shape) != 1
        or shape[0] < 2
        or dtype is None
        or dtype.is_floating_point
        or dtype == torch.bool
    ):
        return None
    total = _indptr_total(definition, name, axes)
    if total is None:
        return None
    n = shape[0] - 1
    lengths = [total // n + (1 if k < total % n else 0) for k in range(n)]
    values = [0]
    for length in lengths:
        values.append(values[-1] + length)
    same = "equal lengths" if total % n == 0 else "lengths as equal as integers allow"
    how = f"{n} {same} summing to {total} ({name} = {_shown(values)})"
    return torch.tensor(values, dtype=dtype), how


def _shown(values: list[int]) -> str:
    if len(values) <= 6:
        return "[" + ", ".join(map(str, values)) + "]"
    return "[" + ", ".join(map(str, values[:3])) + ", ..., " + str(values[-1]) + "]"


def check_input_memory(
    definition: Definition, workload: Workload, axes: dict[str, int], memory: int | None = None
) -> None:
    """A DefinitionError, before any tensor is allocated, when the workload's inputs (every
    tensor input at its declared shape and dtype) need more than half of ``memory`` (this
    machine's, by default): the reference is run on them, and its intermediates need room too.
    The message names the total and the largest inputs."""
    if memory is None:
        from solar.timing.calibrate import memory_bytes

        memory = memory_bytes("cpu")
    sizes = []
    for name, spec in definition.inputs.items():
        shape = shape_of(spec, axes)
        dtype = TORCH_DTYPES.get(spec.dtype)
        if shape is None or dtype is None:
            continue
        sizes.append((math.prod(max(int(d), 0) for d in shape) * dtype.itemsize, name))
    total = sum(b for b, _ in sizes)
    if not memory or 2 * total <= memory:
        return
    largest = sorted(sizes, key=lambda x: (-x[0], x[1]))[:3]
    listed = ", ".join(f"{n} {format_bytes(b)}" for b, n in largest)
    raise DefinitionError(
        f"{workload.where}: the inputs need {format_bytes(total)} ({listed}), more than half of "
        f"this machine's {format_bytes(memory)} of memory; SOLAR runs the reference on them, "
        "so nothing was allocated (run a workload with smaller axes)"
    )


def check_reference_memory(
    definition: Definition, workload: Workload, namespace: dict, memory: int | None = None
) -> None:
    """A DefinitionError, before any tensor is allocated, when making the inputs and running the
    reference on them needs more than half of ``memory`` (this machine's, by default): both run
    first on fake tensors (``solar.torch._peak``), which need no memory. Where the reference's
    sizes depend on its values the fake run stops there, and the peak up to that point (a lower
    bound) is what is checked. The message names the peak and the largest tensor the reference
    makes, with its op and line."""
    if "run" not in namespace:
        return
    if memory is None:
        from solar.timing.calibrate import memory_bytes

        memory = memory_bytes("cpu")
    from solar.torch._peak import peak_of

    def made_and_run() -> Any:
        inputs = make_inputs(definition, workload, namespace, OnCpu(), check=False)
        module, tensors = reference_module(definition, namespace, inputs)
        return module(*tensors)

    peak = peak_of(made_and_run, f"{definition.path}#reference")
    if not memory or 2 * peak.bytes <= memory:
        return
    nbytes, op, line = peak.largest
    largest = f" (the largest it makes {format_bytes(nbytes)}, by {op} at {line})" if nbytes else ""
    upto = "" if peak.complete else " up to where its sizes depend on its values"
    raise DefinitionError(
        f"{workload.where}: the inputs and the reference's tensors need "
        f"{format_bytes(peak.bytes)} at once{upto}{largest}, more than half of this machine's "
        f"{format_bytes(memory)} of memory: found on fake tensors, so nothing was allocated (run "
        "a workload with smaller axes)"
    )


def _dtype(name: str, at: str) -> torch.dtype:
    dtype = TORCH_DTYPES.get(name)
    if dtype is None:
        raise DefinitionError(f"{at}: dtype {name} has no PyTorch dtype in this torch")
    return dtype


# Random inputs are drawn this many elements at a time (a draw stages them in float32 or int64):
# a tensor of at most this many elements is one draw, a larger one never needs more than its own
# bytes plus one chunk's staging.
RANDOM_CHUNK = 1 << 22


def _random(
    shape: tuple[int, ...], dtype: torch.dtype, generator: torch.Generator, fake: Any = None
) -> torch.Tensor:
    """A random tensor by dtype: floats standard normal (float8 clamped to [-2, 2]), integers
    uniform in {0, 1} (a valid index into any axis of 2 or more), bools uniform, packed fp4
    uniform bytes. Drawn ``RANDOM_CHUNK`` elements at a time into the tensor itself. In a
    ``fake`` mode: a FakeTensor of the shape and dtype (nothing drawn)."""
    if fake is not None:
        with fake:
            return torch.empty(shape, dtype=dtype)
    numel = math.prod(shape)
    if numel <= RANDOM_CHUNK:
        return _draw(shape, dtype, generator)
    out = torch.empty(shape, dtype=dtype)
    flat = out.view(-1)
    for start in range(0, numel, RANDOM_CHUNK):
        count = min(RANDOM_CHUNK, numel - start)
        flat[start : start + count] = _draw((count,), dtype, generator)
    return out


def _draw(shape: tuple[int, ...], dtype: torch.dtype, generator: torch.Generator) -> torch.Tensor:
    if dtype.is_floating_point and dtype.itemsize >= 2:
        return torch.randn(shape, generator=generator, dtype=torch.float32).to(dtype)
    if dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        return torch.randn(shape, generator=generator).clamp(-2.0, 2.0).to(dtype)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=generator).to(torch.bool)
    if dtype.is_floating_point or dtype.itemsize == 1 and not dtype.is_signed:  # packed fp4
        return torch.randint(0, 256, shape, generator=generator, dtype=torch.uint8).view(dtype)
    return torch.randint(0, 2, shape, generator=generator, dtype=dtype)


def _faked(value: Any, fake: Any) -> Any:
    """``value`` as a FakeTensor of the mode ``fake`` (a real tensor: its shape and dtype)."""
    from torch._subclasses.fake_tensor import FakeTensor

    if isinstance(value, torch.Tensor) and not isinstance(value, FakeTensor):
        return fake.from_tensor(value)
    return value


def _custom(
    definition: Definition, workload: Workload, namespace: dict, given: dict, on_cpu: OnCpu
) -> dict:
    entry = definition.custom_inputs_entrypoint
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(workload.index)
        try:
            with on_cpu:
                made = namespace[entry](given, DEVICE)
        except Exception as e:  # the user's code: its error, one line
            raise DefinitionError(
                f"{workload.where}: custom_inputs_entrypoint '{entry}' failed: "
                f"{type(e).__name__}: {_first_line(e)}"
            ) from e
    if not isinstance(made, dict):
        raise DefinitionError(
            f"{workload.where}: custom_inputs_entrypoint '{entry}' returned "
            f"{type(made).__name__}, not a dict of inputs by name"
        )
    return made


def _check_made(value: Any, spec: Any, shape: tuple[int, ...] | None, at: str) -> None:
    if shape is None or not isinstance(value, torch.Tensor):
        return
    if tuple(value.shape) != shape:
        raise DefinitionError(
            f"{at}: the custom input has shape {list(value.shape)}, not {list(shape)}"
        )
    if value.dtype != TORCH_DTYPES.get(spec.dtype):
        raise DefinitionError(f"{at}: the custom input is {value.dtype}, not {spec.dtype}")


# ---------------------------------------------------------------------------------------------
# device="cuda" in a reference: mapped to the CPU, where SOLAR runs it (solar.torch._device,
# shared with model files)


# ---------------------------------------------------------------------------------------------
# safetensors inputs: their values were not read, so none may decide a shape

# Tensor methods and functions whose result leaves the tensor world (a Python number, a list)
# or whose output's size depends on the values.
_DATA_DEPENDENT = frozenset(
    "item tolist numpy __int__ __index__ __float__ __bool__ __complex__ nonzero argwhere "
    "masked_select unique unique_consecutive bincount repeat_interleave".split()
)


class _Tainted(TorchFunctionMode):
    """Follows the values of some tensors through every torch call (a call with a followed
    tensor among its arguments makes its results followed) and records the first call where
    they decide a size or reach Python."""

    def __init__(self, roots: dict[int, tuple[torch.Tensor, str]]) -> None:
        super().__init__()
        self.followed: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
        self.origin: dict[int, str] = {}
        for key, (tensor, name) in roots.items():
            self.followed[key] = tensor
            self.origin[key] = name
        self.found: tuple[str, str] | None = None  # (input name, what decided)

    def _source(self, value: Any) -> str | None:
        if isinstance(value, torch.Tensor) and self.followed.get(id(value)) is value:
            return self.origin[id(value)]
        if isinstance(value, (list, tuple)):
            return next((s for v in value if (s := self._source(v))), None)
        if isinstance(value, slice):
            return self._source([value.start, value.stop, value.step])
        if isinstance(value, dict):
            return self._source(list(value.values()))
        return None

    def _bool_index(self, value: Any) -> str | None:
        items = value if isinstance(value, (list, tuple)) else [value]
        for v in items:
            if isinstance(v, torch.Tensor) and v.dtype == torch.bool:
                return self._source(v)
        return None

    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        source = self._source(list(args) + list(kwargs.values()))
        if source is not None and self.found is None:
            if name in _DATA_DEPENDENT:
                self.found = (source, f"Tensor.{name}" if name.startswith("__") else name)
            elif name == "__getitem__" and len(args) > 1:
                if self._bool_index(args[1]) is not None:
                    self.found = (source, "a boolean mask")
                elif self._source(_slices(args[1])) is not None:
                    self.found = (source, "a slice bound")
        result = func(*args, **kwargs)
        if source is not None:
            self._follow(result, source)
        return result

    def _follow(self, value: Any, source: str) -> None:
        if isinstance(value, torch.Tensor):
            self.followed[id(value)] = value
            self.origin[id(value)] = source
        elif isinstance(value, (list, tuple)):
            for v in value:
                self._follow(v, source)


def _slices(index: Any) -> list:
    items = index if isinstance(index, tuple) else (index,)
    return [i for i in items if isinstance(i, slice)]


def check_safetensors(
    definition: Definition, workload: Workload, namespace: dict, inputs: Inputs, on_cpu: OnCpu
) -> None:
    """Runs ``run`` once on ``inputs`` following the values of the safetensors inputs; where
    one decides a size or reaches Python, a one-line refusal (SOLAR did not read the file).
    On FakeTensors (no memory) a failure that no such input caused is left to the capture,
    which then makes the inputs for real (``analyse_workload``)."""
    if not inputs.safetensors:
        return
    names = inputs.names
    roots = {
        id(inputs.values[names.index(n)]): (inputs.values[names.index(n)], n)
        for n in inputs.safetensors
    }
    mode = _Tainted(roots)
    with torch.no_grad(), inputs.fake or contextlib.nullcontext(), on_cpu, mode:
        try:
            namespace["run"](**inputs.kwargs())
        except Exception as e:  # run failed on the stand-in values: the same refusal, or its error
            if mode.found is None and inputs.fake is not None:
                return
            if mode.found is None:
                raise DefinitionError(
                    f"{workload.where}: run failed on its inputs: {type(e).__name__}: "
                    f"{_first_line(e)}"
                ) from e
    if mode.found is not None:
        name, how = mode.found
        given = workload.inputs[name]
        raise DefinitionError(
            f"{workload.where}: inputs.{name}: its values decide a shape ({how} in run), and "
            f"its file {given.path} is not there (looked for from the workload's and the "
            "definition's folders up): give the file, or the input as 'custom'"
        )


# ---------------------------------------------------------------------------------------------
# Capture and analysis


def reference_module(
    definition: Definition, namespace: dict, inputs: Inputs, on_cpu: OnCpu | None = None
) -> tuple[Any, tuple]:
    """``(module, tensors)``: ``run`` as a module whose forward takes the tensor inputs under
    their own names, the scalars fixed (they are constants of the workload), run under
    ``on_cpu`` (the capture, the golden run and the float64 recheck alike)."""
    on_cpu = on_cpu or OnCpu()
    run = namespace["run"]
    names = inputs.names
    at = [i for i, v in enumerate(inputs.values) if isinstance(v, torch.Tensor)]
    template = list(inputs.values)

    def forward(self: Any, *tensors: Any) -> Any:
        args = list(template)
        for i, t in zip(at, tensors, strict=True):
            args[i] = t
        with on_cpu:
            return run(**dict(zip(names, args, strict=True)))

    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    params = [inspect.Parameter("self", kind)] + [inspect.Parameter(names[i], kind) for i in at]
    forward.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    cls = type("Reference", (torch.nn.Module,), {"forward": forward})
    return cls(), tuple(template[i] for i in at)


# The symbolic traces a group may make: its first, and one more each time a workload's sizes
# hold for none of them while workloads of the group remain (a program that branches on a size
# takes another path there).
MAX_TRACES = 4

# The capture cell's reason where values of the data decide a group's program.
BY_VALUES = (
    "no symbolic capture (values of the data decide the program: each workload is traced on "
    "its own values)"
)


class Captures:
    """How the workloads of one definition are captured (docs/benchmarks.md, "Capture once, bind
    each workload"). The workloads that share their fixed values (the scalars fixed in the
    captured program) form a group; a group of two or more is traced with the dimensions of its
    non-const axes symbolic (``solar.torch._symbolic``), once, and each workload of the group
    binds its own sizes to that trace. A workload whose sizes the trace does not hold for (a
    size export fixed, a guard of the trace broken) binds to a further trace, made on it while
    workloads of the group remain (at most ``MAX_TRACES`` a group), else is captured alone; a
    workload of a group whose symbolic trace failed is captured alone; the capture cell of a
    workload captured alone says why. Where values of the data decide the program (the symbolic
    trace met a data-dependent size, or came out specialised on the values it read: ``.item()``,
    ``int()``, ``nonzero``), no further symbolic trace is tried and each remaining workload is
    traced on its own values at once (``captured_call(..., specialise=True)``), without the
    trace with unbacked sizes that would find that out again. ``once=False``: every workload
    alone.

    ``count``: the captures made (torch.export runs, the recaptures of a failed check's float64
    rerun aside); ``shared``: the workloads analysed on a capture made for another."""

    def __init__(
        self,
        definition: Definition,
        workloads: list[Workload],
        namespace: dict | None = None,
        once: bool = True,
    ) -> None:
        self.definition = definition
        self.namespace = namespace
        self.count = 0
        self.shared = 0
        self._groups: dict[tuple, list[Workload]] = {}
        if once:
            for workload in workloads:
                self._groups.setdefault(_fixed_values(definition, workload), []).append(workload)
        self._done: set[int] = set()  # the workloads captured, by index
        # (group, fixed values) -> its traces: (Symbolic, the uuid traced, device mapped), or
        # why one could not be made
        self._traces: dict[tuple, list[Any]] = {}
        # the groups whose program values of the data decide, and why (the cell's reason)
        self._by_values: dict[tuple, str] = {}
        # the groups captured on real inputs (the others first on FakeTensors: ``fake_first``)
        self._real: set[tuple] = set()

    def fake_first(self, workload: Workload) -> bool:
        """Whether ``workload`` is first captured on FakeTensors: unless its group's values
        of the data decide the program, or a capture of the group on them could not be
        used (``made_real``)."""
        key = _fixed_values(self.definition, workload)
        return key not in self._by_values and key not in self._real

    def made_real(self, workload: Workload) -> None:
        """``workload``'s group is captured on real inputs from now on: its traces made on
        FakeTensors are dropped (a trace holds the values of the constants it lifted)."""
        key = _fixed_values(self.definition, workload)
        self._real.add(key)
        for (group, _), traces in self._traces.items():
            if group == key:
                traces[:] = [t for t in traces if isinstance(t, str) or not t[3]]

    def capture(
        self,
        workload: Workload,
        made: Made,
        options: Options,
        build: Callable[[], tuple[Any, tuple]] | None = None,
    ) -> tuple[Any, str, list[str]]:
        """``(captured, cell, notes)``: the workload's ``TorchCaptured``, its CSV ``capture``
        cell ("symbolic": its sizes bound to a symbolic capture of its group; "alone"; "alone:
        WHY") and the notes that say so. ``made``: the workload's inputs and ``run`` on them,
        whose fixed values (its non-tensor arguments) a shared capture must have too;
        ``build``: the same made for real, for the golden run of a capture of FakeTensors."""
        from solar.torch import captured_call
        from solar.torch._symbolic import NotBoundError
        from solar.torch._trace import DataDependentError
        from solar.torch.capture import TorchCaptured

        self._done.add(workload.index)
        source = f"{self.definition.name}:{workload.uuid}"
        key = _fixed_values(self.definition, workload)
        module, tensors = made.module, made.tensors
        why = ""
        if len(self._groups.get(key, ())) >= 2 and key not in self._by_values:
            for symbolic in self._symbolic(key, workload, made):
                if isinstance(symbolic, str):
                    why = why or symbolic
                    continue
                trace, first, mapped, _ = symbolic
                if trace.traced.specialised:
                    self._by_values[key] = BY_VALUES
                    if first != workload.uuid:
                        break
                try:
                    cap, sizes = trace.bind(tensors)
                except NotBoundError as e:
                    why = why or str(e)
                    continue
                recapture = _recapture(cap.document.get("source"))
                captured = TorchCaptured(cap, recapture, module, tensors, build=build)
                shared = first != workload.uuid
                self.shared += shared
                bound = ", ".join(f"{d} = {n}" for d, n in sizes.items()) or "no sizes"
                notes = [
                    f"capture {'shared' if shared else 'made'}: traced once with symbolic "
                    f"sizes on workload {first}, bound here ({bound})"
                ] + ([CUDA_NOTE] if mapped else [])
                return captured, "symbolic", notes
        specialise = key in self._by_values
        why = why or self._by_values.get(key, "")
        if specialise and made.fake:  # FakeTensors hold no values to specialise on
            raise DataDependentError(why)
        with torch.no_grad():
            captured = captured_call(module, tensors, options, source, specialise=specialise)
        captured.build = build
        self.count += 1
        if not why:
            return captured, "alone", []
        return captured, f"alone: {why}", [f"captured alone: {why}"]

    def _symbolic(self, group: tuple, workload: Workload, made: Made) -> Any:
        """The group's symbolic traces, one by one (each ``(Symbolic, the uuid of the workload
        traced, device mapped, traced on FakeTensors)``, or why it could not be made). The
        first is made on the group's first workload whose dimensions to keep symbolic are all
        2 or more (export fixes a dimension of size 0 or 1), else on ``workload``; after the
        last, one more is made on ``workload`` (its dimensions 2 or more) while workloads of
        the group remain and fewer than ``MAX_TRACES`` were made. Each is made on inputs as
        ``made``'s are (fake or real)."""
        dynamic = _dynamic_dims(self.definition)
        fixed = tuple(_fixed_of(made.inputs))
        traces = self._traces.setdefault((group, fixed), [])
        if not traces:
            example = next(
                (w for w in self._groups[group] if _all_symbolic(self.definition, w, dynamic)),
                workload,
            )
            if example is not workload and self.namespace is not None:
                other = self._example(example, made.fake)
                if other is not None and tuple(_fixed_of(other.inputs)) == fixed:
                    traces.append(self._trace(example, other, dynamic, group))
                # else: traced on this workload
            if not traces:
                traces.append(self._trace(workload, made, dynamic, group))
            yield traces[0]
        else:
            yield from list(traces)
        remaining = any(w.index not in self._done for w in self._groups[group])
        made_here = any(not isinstance(t, str) and t[1] == workload.uuid for t in traces)
        failed = any(isinstance(t, str) for t in traces)  # export refuses symbolic sizes
        if (
            remaining
            and not made_here
            and not failed
            and len(traces) < MAX_TRACES
            and _all_symbolic(self.definition, workload, dynamic)
        ):
            traces.append(self._trace(workload, made, dynamic, group))
            yield traces[-1]

    def _example(self, example: Workload, fake: bool) -> Made | None:
        """The inputs of the workload a group's first trace is made on, as FakeTensors or real
        (their memory checked first); None where they cannot be made (too large for real, or
        a failure of its own: that workload reports it when it is analysed)."""
        try:
            return make(self.definition, example, self.namespace, fake)
        except ValueError:
            return None

    def _trace(self, workload: Workload, made: Made, dynamic: list, group: tuple) -> Any:
        from solar.torch._symbolic import capture_symbolic
        from solar.torch._trace import DataDependentError

        source = f"{self.definition.name}:{workload.uuid}"
        self.count += 1
        try:
            with torch.no_grad():
                trace = capture_symbolic(made.module, made.tensors, dynamic, source)
        except ValueError as e:  # CaptureError: the workloads it would have held for alone
            why = f"no symbolic capture ({_first_line(e)})"
            if isinstance(e, DataDependentError) and made.fake:  # it stopped at a value
                why = BY_VALUES
            if isinstance(e, DataDependentError):
                self._by_values[group] = why
            return why
        return (trace, workload.uuid, made.on_cpu.mapped, made.fake)


def _fixed_of(inputs: Inputs) -> list[str]:
    """The values of ``run``'s non-tensor arguments, fixed in its captured program."""
    return [repr(v) for v in inputs.values if not isinstance(v, torch.Tensor)]


def _all_symbolic(definition: Definition, workload: Workload, dynamic: list[list[int]]) -> bool:
    """Whether every dimension to keep symbolic (``dynamic``, by shaped input) is 2 or more in
    ``workload``."""
    axes = resolve_axes(definition, workload)
    shapes = [shape_of(s, axes) for s in definition.inputs.values() if s.shape is not None]
    return all(shape[d] >= 2 for shape, dims in zip(shapes, dynamic, strict=True) for d in dims)


def _recapture(source: str | None) -> Any:
    """How a workload's program is captured again (the float64 rerun of a failed check)."""

    def recapture(m: Any, xs: tuple) -> Any:
        from solar.torch.capture import capture

        return capture(m, xs, source=source)

    return recapture


def _fixed_values(definition: Definition, workload: Workload) -> tuple:
    """The values a capture fixes (the scalars without a shape): workloads that share them can
    share a capture. A workload that omits a declared input (run's default) or names an
    undeclared one that is not a scalar has tensor inputs other than the declared ones, which
    the symbolic capture does not describe: its key is its own (captured alone)."""
    declared = definition.inputs
    if any(n not in workload.inputs for n in declared) or any(
        n not in declared and g.kind != "scalar" for n, g in workload.inputs.items()
    ):
        return (("(own inputs)", workload.uuid),)
    return tuple(
        (name, repr(given.value))
        for name, given in workload.inputs.items()
        if given.kind == "scalar" and (name not in declared or declared[name].shape is None)
    )


def _dynamic_dims(definition: Definition) -> list[list[int]]:
    """For each tensor input (a shaped one), the dimensions whose axis is not const (var, or an
    expression of the var axes): those the symbolic capture keeps symbolic."""
    out = []
    for spec in definition.inputs.values():
        if spec.shape is None:
            continue
        out.append(
            [
                d
                for d, axis in enumerate(spec.shape)
                if axis in definition.axes and definition.axes[axis].kind != "const"
            ]
        )
    return out


@dataclass
class Made:
    """A workload's inputs and ``run`` as a module on their tensors (``reference_module``),
    made as FakeTensors (``fake``: shapes and dtypes, no memory) or for real."""

    inputs: Inputs
    module: Any
    tensors: tuple
    on_cpu: OnCpu

    @property
    def fake(self) -> bool:
        return self.inputs.fake is not None


def make(definition: Definition, workload: Workload, namespace: dict, fake: bool) -> Made:
    """``workload``'s inputs and ``run`` on them (``Made``): FakeTensors in a fresh
    ``FakeTensorMode``, or real (their memory checked first, ``make_inputs``); the
    safetensors inputs whose files are not there are checked (``check_safetensors``)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    on_cpu = OnCpu()
    mode = FakeTensorMode(allow_non_fake_inputs=True) if fake else None
    inputs = make_inputs(definition, workload, namespace, on_cpu, fake=mode)
    check_safetensors(definition, workload, namespace, inputs, on_cpu)
    module, tensors = reference_module(definition, namespace, inputs, on_cpu)
    return Made(inputs, module, tensors, on_cpu)


def analyse_workload(
    definition: Definition,
    workload: Workload,
    namespace: dict,
    options: Options,
    stage_times: dict[str, float] | None = None,
    captures: Captures | None = None,
) -> tuple[Any, list[str], str, str]:
    """``(report, notes, capture, built)``: ``run`` on the workload's inputs, captured (by
    ``captures``: None, alone) and analysed by ``solar.stages.run``; the notes say how the
    inputs were made and how the program was captured; ``capture`` and ``built`` are the CSV's
    ``capture`` and ``inputs`` cells (``Inputs.built``).

    The inputs are first made as FakeTensors and the program traced on them (no memory, nothing
    run); they are made for real only for the golden run, when the whole program is verified
    (``TorchCaptured.build``). Where the trace on FakeTensors fails (values of the data decide
    the program: ``.item()``, ``nonzero``, ``.tolist()``) or would verify whole with constants
    it lifted (whose values FakeTensors do not hold), the inputs are made for real and the
    program captured on them, specialised on the values it reads (``captures.made_real``)."""
    from solar.torch import whole_verified
    from solar.torch._trace import DataDependentError

    captures = captures or Captures(definition, [workload], namespace)
    fell_back: list[str] = []
    shown: list[tuple[str, list[str]]] = []
    made = None
    if captures.fake_first(workload):
        try:
            made = make(definition, workload, namespace, fake=True)
        except ValueError as e:  # a custom entry point that reads values: made for real
            fell_back.append(_made_for_real(workload, e))
    made = made or make(definition, workload, namespace, fake=False)

    @functools.cache  # the golden run's and a float64 recheck's inputs: made once
    def build() -> tuple[Any, tuple]:
        real = make(definition, workload, namespace, fake=False)
        return real.module, real.tensors

    def capture() -> Any:
        nonlocal made
        if made.fake:
            try:
                captured, cell, notes = captures.capture(workload, made, options, build)
            except ValueError as e:  # on FakeTensors: made for real (its error, if it fails too)
                if not isinstance(e, DataDependentError):
                    fell_back.append(_made_for_real(workload, e))
            else:
                if not (captured.capture.holds_fake_values() and whole_verified(captured, options)):
                    shown.append((cell, notes))
                    return with_reduced(captured)
            captures.made_real(workload)
            made = make(definition, workload, namespace, fake=False)
        captured, cell, notes = captures.capture(workload, made, options)
        shown.append((cell, fell_back + notes))
        return with_reduced(captured)

    def with_reduced(captured: Any) -> Any:
        captured.reduced = lambda: reduced_capture(definition, workload, namespace, options)
        return captured

    report = run_stages(capture, options, stage_times)
    cell, capture_notes = shown[0]
    notes = made.inputs.notes + capture_notes
    if made.on_cpu.mapped and CUDA_NOTE not in notes:
        notes.append(CUDA_NOTE)
    return report, notes, cell, made.inputs.built


@contextlib.contextmanager
def isolated() -> Iterator[None]:
    """One definition of a suite: torch's process-wide settings a reference may change (the
    default dtype, grad mode, the global random state) restored after it."""
    dtype = torch.get_default_dtype()
    grad = torch.is_grad_enabled()
    try:
        with torch.random.fork_rng(devices=[]):
            yield
    finally:
        torch.set_default_dtype(dtype)
        torch.set_grad_enabled(grad)


def _made_for_real(workload: Workload, e: BaseException) -> str:
    """The note of a workload whose inputs are made for real because ``e`` stopped them, or
    their trace, on FakeTensors."""
    why = _first_line(e).removeprefix(f"{workload.where}: ")
    return f"inputs made for real: on FakeTensors, {why}"


# A var axis of a reduced workload holds this at most (``reduced_workload``).
REDUCED_AXIS = 16


def reduced_workload(definition: Definition, workload: Workload) -> tuple[Workload, str]:
    """``workload`` with each var axis above ``REDUCED_AXIS`` set to it (the expr axes follow;
    its inputs are made again from the smaller axes: random, the indptrs built from them), and
    what shrank (``seq_len 512 -> 16``); an ``AnalysisError`` when no axis shrinks or an input
    is read from a file (its values are the full workload's)."""
    axes = {n: min(v, REDUCED_AXIS) for n, v in workload.axes.items()}
    shrunk = ", ".join(f"{n} {v} -> {axes[n]}" for n, v in workload.axes.items() if axes[n] != v)
    if not shrunk:
        raise AnalysisError(f"no var axis above {REDUCED_AXIS} to shrink")
    files = [
        n
        for n, g in workload.inputs.items()
        if g.kind == "safetensors" and safetensors_file(definition, workload, g.path) is not None
    ]
    if files:
        raise AnalysisError(
            f"input(s) {', '.join(files)} read from files hold the full workload's values"
        )
    return dataclasses.replace(workload, axes=axes), shrunk


def reduced_capture(
    definition: Definition, workload: Workload, namespace: dict, options: Options
) -> tuple[Any, str]:
    """The capture of ``run`` on ``workload``'s reduced workload (``reduced_workload``), with
    real inputs, and what it is; an ``AnalysisError`` naming why when it cannot be made."""
    from solar.torch import captured_call

    small, shrunk = reduced_workload(definition, workload)
    try:
        made = make(definition, small, namespace, fake=False)
        with torch.no_grad():
            source = f"{definition.name}:{workload.uuid} (reduced)"
            captured = captured_call(made.module, made.tensors, options, source)
    except Exception as e:  # the reference at the smaller sizes: its error, one line
        raise AnalysisError(
            f"the reduced workload ({shrunk}) failed: {type(e).__name__}: {_first_line(e)}"
        ) from e
    return captured, f"a reduced workload of the same definition ({shrunk})"


def _first_line(e: BaseException) -> str:
    lines = [line.strip() for line in str(e).strip().splitlines() if line.strip()]
    return " ".join(lines[0].split()) if lines else type(e).__name__
