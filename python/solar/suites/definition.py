"""Kernel-benchmark problems in FlashInfer-Bench's "definition + workloads" format
(docs/benchmarks.md), read without a framework: no torch here (``solar.torch.definition``
makes the inputs and captures ``run``).

- ``load(path)``: a ``definition.json`` (or a folder holding one) and its workloads (the
  ``workload.jsonl`` beside it, else ``<stem>.jsonl``): a ``Problem``. Bad input is a
  ``DefinitionError``: one line naming the file and the field.
- ``resolve_axes(problem, workload)``: every axis's value for one workload (``const``, the
  workload's ``var`` values, ``expr`` evaluated over them); ``shape_of(spec, axes)``.
- ``select(problem, selectors)``: the workloads named by ``--workload UUID|INDEX``.
- ``read_measured(path, problem)``, ``sol_score(t_kernel, t_sol, t_baseline)``,
  ``headroom(t_kernel, t_sol)``: SOL-ExecBench's score and the headroom of measured latencies.
- ``row_of(...)``, ``CSV_COLUMNS``, ``csv_text(rows)``, ``suite_table(rows)``: the per-workload
  CSV and the suite table.
"""

from __future__ import annotations

import ast
import csv
import io
import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from solar._files import read_json
from solar.options import AnalysisError

DEFINITION_FILE = "definition.json"
WORKLOAD_FILE = "workload.jsonl"
AXIS_KINDS = ("const", "var", "expr")
INPUT_KINDS = ("random", "scalar", "custom", "safetensors")
# The format's dtypes (FlashInfer-Bench's and SOL-ExecBench's ``DType``); "float8_e4m3" is the
# older schema's spelling of float8_e4m3fn.
DTYPES = (
    "float64",
    "float32",
    "float16",
    "bfloat16",
    "float8_e4m3fn",
    "float8_e5m2",
    "float4_e2m1",
    "float4_e2m1fn_x2",
    "int64",
    "int32",
    "int16",
    "int8",
    "uint8",
    "bool",
)
DTYPE_ALIASES = {"float8_e4m3": "float8_e4m3fn"}

# The per-workload CSV (docs/benchmarks.md, "CSV"), then the score columns when latencies are
# given (``--measured``).
CSV_COLUMNS = (
    "definition",
    "workload_uuid",
    "axes",
    "sol_unfused_ms",
    "sol_fused_ms",
    "sol_cache_ms",
    "bottleneck",
    "macs",
    "bytes_fused",
    "precision",
    "verification",
    "capture",
    "inputs",
)
SCORE_COLUMNS = ("latency_ms", "baseline_ms", "sol_score", "headroom", "score_note")

__all__ = [
    "CSV_COLUMNS",
    "Definition",
    "DefinitionError",
    "Problem",
    "TensorSpec",
    "Workload",
    "headroom",
    "is_definition",
    "is_suite",
    "load",
    "read_measured",
    "resolve_axes",
    "select",
    "shape_of",
    "sol_score",
    "suite_definitions",
]


class DefinitionError(AnalysisError):
    """A definition or workload file that does not follow the format (one line: the file, the
    field, what is wrong)."""


@dataclass(frozen=True)
class Axis:
    name: str
    kind: str  # "const", "var" or "expr"
    value: int | None = None  # const
    expression: str | None = None  # expr


@dataclass(frozen=True)
class TensorSpec:
    """An input or output: ``shape`` lists axis names (or decimal sizes); None: a scalar."""

    name: str
    shape: tuple[str, ...] | None
    dtype: str


@dataclass(frozen=True)
class InputSpec:
    """How a workload makes one input: ``kind`` in ``INPUT_KINDS``; ``value`` (scalar),
    ``path`` and ``tensor_key`` (safetensors)."""

    kind: str
    value: Any = None
    path: str | None = None
    tensor_key: str | None = None


@dataclass(frozen=True)
class Workload:
    index: int  # position in the workload file (0-based): --workload INDEX, the random seed
    uuid: str
    axes: dict[str, int]  # the var axes' values
    inputs: dict[str, InputSpec]
    where: str  # "workload.jsonl:3": the file and line, for errors
    # the flags: values the workload's ``axes`` give to scalar inputs (``"is_joint_block": 1``),
    # which the format passes to the custom entry point with the axes
    flags: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Definition:
    name: str
    path: str  # the definition file, as given
    axes: dict[str, Axis]
    inputs: dict[str, TensorSpec]  # in run()'s order
    outputs: dict[str, TensorSpec]
    reference: str
    custom_inputs_entrypoint: str | None = None
    description: str | None = None
    # run's parameters that have a default (``bias1=None``), declared inputs or not: a workload
    # may omit them (run's default) or, for one the definition does not declare, give it
    optional: tuple[str, ...] = ()
    # the format's ``constraints``: Python expressions over axes and inputs
    # (``"num_kv_indices == kv_indptr[-1].item()"``), read to build an index input's values
    constraints: tuple[str, ...] = ()


@dataclass
class Problem:
    definition: Definition
    workloads: list[Workload]
    workload_path: str | None
    notes: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# Reading


def is_definition(path: str) -> bool:
    """Whether ``path`` names a definition: a ``.json`` file, or a folder holding
    ``definition.json``."""
    if os.path.isdir(path):
        return os.path.isfile(os.path.join(path, DEFINITION_FILE))
    return path.endswith(".json")


def is_suite(path: str) -> bool:
    """Whether ``path`` is a folder of definitions: a folder without ``definition.json`` with
    a folder holding one among its entries (``solar analyze SUITE``)."""
    return os.path.isdir(path) and not is_definition(path) and bool(suite_definitions(path))


def suite_definitions(path: str) -> list[str]:
    """The definition folders of the suite folder ``path`` (its entries that hold a
    ``definition.json``), sorted by name."""
    try:
        names = sorted(os.listdir(path))
    except OSError as e:
        raise DefinitionError(f"cannot read '{path}': {e.strerror or e}") from e
    folders = [os.path.join(path, n) for n in names]
    return [f for f in folders if os.path.isfile(os.path.join(f, DEFINITION_FILE))]


def load(path: str) -> Problem:
    """The definition at ``path`` (a ``.json`` file or a folder holding ``definition.json``)
    and its workloads."""
    definition_path = os.path.join(path, DEFINITION_FILE) if os.path.isdir(path) else path
    definition = _definition(read_json(definition_path), definition_path)
    workload_path = _workload_file(definition_path)
    if workload_path is None:
        stem = os.path.splitext(os.path.basename(definition_path))[0]
        raise DefinitionError(
            f"{definition_path}: no workload file beside it ({WORKLOAD_FILE} or {stem}.jsonl)"
        )
    workloads = _workloads(workload_path, definition)
    return Problem(definition, workloads, workload_path)


def _workload_file(definition_path: str) -> str | None:
    directory = os.path.dirname(definition_path)
    stem = os.path.splitext(os.path.basename(definition_path))[0]
    for name in (WORKLOAD_FILE, f"{stem}.jsonl"):
        candidate = os.path.join(directory, name)
        if os.path.isfile(candidate):
            return candidate
    return None


def _fail(where: str, field_name: str, problem: str) -> DefinitionError:
    return DefinitionError(f"{where}: {field_name}: {problem}")


def _object(value: Any, where: str, field_name: str) -> dict:
    if not isinstance(value, dict):
        raise _fail(where, field_name, f"must be an object, not {_kind(value)}")
    return value


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "null" if value is None else "a number"
    )


def _required(data: dict, key: str, where: str, prefix: str = "") -> Any:
    if key not in data or data[key] is None:
        raise _fail(where, prefix + key, "missing")
    return data[key]


def _string(data: dict, key: str, where: str, prefix: str = "") -> str:
    value = _required(data, key, where, prefix)
    if not isinstance(value, str) or not value.strip():
        raise _fail(where, prefix + key, f"must be a non-empty string, not {_kind(value)}")
    return value


def _definition(data: Any, where: str) -> Definition:
    data = _object(data, where, "(top level)")
    name = _string(data, "name", where)
    axes = _axes(_object(_required(data, "axes", where), where, "axes"), where)
    inputs = _tensors(data, "inputs", axes, where)
    outputs = _tensors(data, "outputs", axes, where)
    same = sorted(set(inputs) & set(outputs))
    if same:
        raise _fail(where, f"outputs.{same[0]}", "an input has the same name")
    same = sorted(set(inputs) & set(axes))
    if same:
        raise _fail(where, f"inputs.{same[0]}", "an axis has the same name")
    reference = _string(data, "reference", where)
    entry = data.get("custom_inputs_entrypoint")
    if entry is not None and (not isinstance(entry, str) or not entry.isidentifier()):
        raise _fail(where, "custom_inputs_entrypoint", f"not a Python name: {entry!r}")
    optional = _check_reference(reference, list(inputs), entry, where)
    description = data.get("description")
    constraints = data.get("constraints") or []
    if not isinstance(constraints, list) or not all(isinstance(c, str) for c in constraints):
        raise _fail(where, "constraints", "must be a list of strings")
    return Definition(
        name,
        where,
        axes,
        inputs,
        outputs,
        reference,
        entry,
        description,
        tuple(optional),
        tuple(constraints),
    )


def _axes(data: dict, where: str) -> dict[str, Axis]:
    axes: dict[str, Axis] = {}
    for name, spec in data.items():
        at = f"axes.{name}"
        spec = _object(spec, where, at)
        kind = _required(spec, "type", where, at + ".")
        if kind not in AXIS_KINDS:
            raise _fail(
                where, at + ".type", f"unknown axis type {kind!r} (valid: const, var, expr)"
            )
        if kind == "const":
            value = _required(spec, "value", where, at + ".")
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise _fail(where, at + ".value", f"must be a non-negative integer, not {value!r}")
            axes[name] = Axis(name, kind, value=value)
        elif kind == "expr":
            expression = _string(spec, "expression", where, at + ".")
            _check_expression(expression, where, at + ".expression")
            axes[name] = Axis(name, kind, expression=expression)
        else:
            axes[name] = Axis(name, kind)
    for axis in axes.values():
        unknown = sorted(_names_in(axis.expression) - set(axes)) if axis.expression else []
        if unknown:
            raise _fail(where, f"axes.{axis.name}.expression", f"no axis named '{unknown[0]}'")
    return axes


def _tensors(data: dict, key: str, axes: dict[str, Axis], where: str) -> dict[str, TensorSpec]:
    specs = _object(_required(data, key, where), where, key)
    if not specs:
        raise _fail(where, key, "empty")
    out: dict[str, TensorSpec] = {}
    for name, spec in specs.items():
        at = f"{key}.{name}"
        spec = _object(spec, where, at)
        if "shape" not in spec:
            raise _fail(where, at + ".shape", "missing (null for a scalar)")
        shape = spec["shape"]
        if shape is not None:
            if not isinstance(shape, list):
                raise _fail(
                    where, at + ".shape", f"must be a list of axis names, not {_kind(shape)}"
                )
            for dim in shape:
                if not isinstance(dim, str) or not (dim.isdigit() or dim in axes):
                    raise _fail(where, at + ".shape", f"no axis named {dim!r}")
            shape = tuple(shape)
        dtype = _required(spec, "dtype", where, at + ".")
        dtype = DTYPE_ALIASES.get(dtype, dtype)
        if dtype not in DTYPES:
            raise _fail(
                where, at + ".dtype", f"unknown dtype {dtype!r} (valid: {', '.join(DTYPES)})"
            )
        out[name] = TensorSpec(name, shape, dtype)
    return out


def _check_reference(source: str, inputs: list[str], entry: str | None, where: str) -> list[str]:
    """Checks that ``run`` takes the inputs in order, as its leading parameters, and that every
    parameter after them has a default; returns the parameters with a default (the optional
    inputs, keywords a workload may give or omit)."""
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        raise _fail(where, "reference", f"line {e.lineno}: {e.msg}") from e
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    run = functions.get("run")
    if run is None:
        raise _fail(where, "reference", "defines no top-level function 'run'")
    positional = run.args.posonlyargs + run.args.args
    params = [a.arg for a in positional]
    with_default = [a.arg for a in positional[len(positional) - len(run.args.defaults) :]]
    with_default += [
        a.arg for a, d in zip(run.args.kwonlyargs, run.args.kw_defaults, strict=True) if d
    ]
    required = [a.arg for a in run.args.kwonlyargs if a.arg not in with_default]
    if params[: len(inputs)] != inputs or any(
        p not in with_default for p in params[len(inputs) :] + required
    ):
        raise _fail(
            where,
            "reference",
            f"run({', '.join(params)}) does not take the inputs in order ({', '.join(inputs)})",
        )
    if entry is not None and entry not in functions:
        raise _fail(
            where,
            "custom_inputs_entrypoint",
            f"the reference defines no top-level function '{entry}'",
        )
    return with_default


def _workloads(path: str, definition: Definition) -> list[Workload]:
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise DefinitionError(f"cannot read '{path}': {e.strerror or e}") from e
    workloads: list[Workload] = []
    seen: dict[str, str] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            data = json.loads(line)
        except json.JSONDecodeError as e:
            raise DefinitionError(f"{where}: not JSON: {e.msg}") from e
        data = _object(data, where, "(line)")
        if "workload" in data:  # a workload trace: {"definition", "workload", ...}
            named = data.get("definition")
            if named is not None and named != definition.name:
                raise _fail(where, "definition", f"'{named}', not '{definition.name}'")
            data = _object(data["workload"], where, "workload")
        workload = _workload(data, definition, len(workloads), where)
        if workload.uuid in seen:
            raise _fail(where, "uuid", f"'{workload.uuid}' is also at {seen[workload.uuid]}")
        seen[workload.uuid] = where
        workloads.append(workload)
    if not workloads:
        raise DefinitionError(f"{path}: no workloads")
    return workloads


def _workload(data: dict, definition: Definition, index: int, where: str) -> Workload:
    uuid = _string(data, "uuid", where)
    axes = _object(data.get("axes") or {}, where, "axes")
    flags: dict[str, int] = {}
    for name, value in list(axes.items()):
        axis = definition.axes.get(name)
        spec = definition.inputs.get(name)
        if axis is None and spec is not None and spec.shape is None:
            # a flag: an axis value the format gives a scalar input (is_joint_block: 1)
            if not isinstance(value, (int, bool)) or value < 0:
                raise _fail(where, f"axes.{name}", f"must be a non-negative integer, not {value!r}")
            flags[name] = int(value)
            del axes[name]
            continue
        if axis is None:
            raise _fail(
                where,
                f"axes.{name}",
                f"not an axis of '{definition.name}' (nor a scalar input: a flag)",
            )
        if axis.kind != "var":
            raise _fail(where, f"axes.{name}", f"a {axis.kind} axis takes no workload value")
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise _fail(where, f"axes.{name}", f"must be a non-negative integer, not {value!r}")
    inputs_data = _object(_required(data, "inputs", where), where, "inputs")
    inputs: dict[str, InputSpec] = {}
    for name in inputs_data:
        if name not in definition.inputs and name not in definition.optional:
            raise _fail(
                where,
                f"inputs.{name}",
                f"not an input of '{definition.name}' (nor a parameter of run with a default)",
            )
    for name in list(definition.inputs) + [n for n in inputs_data if n not in definition.inputs]:
        at = f"inputs.{name}"
        if name not in inputs_data and name in flags:
            inputs[name] = InputSpec("scalar", value=flags[name])
            continue
        if name not in inputs_data and name in definition.optional:
            continue  # run's default
        if name not in inputs_data:
            raise _fail(where, at, "missing (random, scalar, custom or safetensors)")
        given = _object(inputs_data[name], where, at)
        kind = _required(given, "type", where, at + ".")
        if kind not in INPUT_KINDS:
            raise _fail(
                where,
                at + ".type",
                f"unknown input type {kind!r} (valid: {', '.join(INPUT_KINDS)})",
            )
        if kind == "scalar":
            value = _required(given, "value", where, at + ".")
            if not isinstance(value, (int, float, bool)):
                raise _fail(
                    where, at + ".value", f"must be a number or a boolean, not {_kind(value)}"
                )
            inputs[name] = InputSpec(kind, value=value)
        elif kind == "safetensors":
            inputs[name] = InputSpec(
                kind,
                path=_string(given, "path", where, at + "."),
                tensor_key=_string(given, "tensor_key", where, at + "."),
            )
        elif kind == "custom" and definition.custom_inputs_entrypoint is None:
            raise _fail(
                where, at + ".type", "custom, but the definition has no custom_inputs_entrypoint"
            )
        else:
            inputs[name] = InputSpec(kind)
    return Workload(index, uuid, dict(axes), inputs, where, flags)


# ---------------------------------------------------------------------------------------------
# Axes and shapes

_BINARY = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a**b,
    ast.Div: lambda a, b: a / b,
}


def _check_expression(expression: str, where: str, at: str) -> None:
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError as e:
        raise _fail(where, at, f"not an expression: {expression!r}") from e
    for node in ast.walk(tree):
        allowed = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Name, ast.Load, ast.UAdd, ast.USub)
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            continue
        if not isinstance(node, allowed) and type(node) not in _BINARY:
            raise _fail(
                where,
                at,
                f"{expression!r}: only integers, axis names, + - * / // % ** and parentheses",
            )


def _names_in(expression: str) -> set[str]:
    return {n.id for n in ast.walk(ast.parse(expression, mode="eval")) if isinstance(n, ast.Name)}


def _evaluate(node: ast.AST, values: dict[str, int]) -> int | float:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body, values)
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return values[node.id]
    if isinstance(node, ast.UnaryOp):
        operand = _evaluate(node.operand, values)
        return -operand if isinstance(node.op, ast.USub) else operand
    assert isinstance(node, ast.BinOp)  # _check_expression admitted nothing else
    return _BINARY[type(node.op)](_evaluate(node.left, values), _evaluate(node.right, values))


def resolve_axes(definition: Definition, workload: Workload) -> dict[str, int]:
    """Every axis's value for ``workload``, in the definition's order: a const its value, a var
    the workload's, an expr its expression over the others (exact integers only)."""
    values: dict[str, int] = {}
    for axis in definition.axes.values():
        if axis.kind == "const":
            values[axis.name] = axis.value
        elif axis.kind == "var":
            if axis.name not in workload.axes:
                raise _fail(workload.where, f"axes.{axis.name}", "the var axis has no value")
            values[axis.name] = workload.axes[axis.name]
    pending = [a for a in definition.axes.values() if a.kind == "expr"]
    while pending:  # an expr may use another expr: resolve those whose names are known
        ready = [a for a in pending if _names_in(a.expression) <= set(values)]
        if not ready:
            names = ", ".join(a.name for a in pending)
            raise _fail(definition.path, "axes", f"the expr axes {names} depend on each other")
        for axis in ready:
            at = f"axes.{axis.name}.expression"
            try:
                value = _evaluate(ast.parse(axis.expression, mode="eval"), values)
            except (ZeroDivisionError, OverflowError) as e:
                raise _fail(workload.where, at, f"{axis.expression!r}: {e}") from e
            if isinstance(value, float):
                if not value.is_integer():
                    raise _fail(
                        workload.where, at, f"{axis.expression!r} is {value}, not an integer"
                    )
                value = int(value)
            if value < 0:
                raise _fail(workload.where, at, f"{axis.expression!r} is {value}, below 0")
            values[axis.name] = value
            pending.remove(axis)
    return {name: values[name] for name in definition.axes}


def shape_of(spec: TensorSpec, axes: dict[str, int]) -> tuple[int, ...] | None:
    """The concrete shape of ``spec`` under resolved ``axes`` (None: a scalar)."""
    if spec.shape is None:
        return None
    return tuple(int(d) if d.isdigit() else axes[d] for d in spec.shape)


def select(problem: Problem, selectors: Sequence[str] | None) -> list[Workload]:
    """The workloads of ``--workload UUID|INDEX`` (repeatable; INDEX 0-based, in the workload
    file's order), in the order asked; None or empty: every workload."""
    if not selectors:
        return list(problem.workloads)
    by_uuid = {w.uuid: w for w in problem.workloads}
    chosen: list[Workload] = []
    for selector in selectors:
        if selector in by_uuid:
            workload = by_uuid[selector]
        elif selector.isdigit() and int(selector) < len(problem.workloads):
            workload = problem.workloads[int(selector)]
        else:
            count = len(problem.workloads)
            raise DefinitionError(
                f"--workload {selector}: no workload with that uuid or index in "
                f"{problem.workload_path} ({count} workload(s): index 0 to {count - 1})"
            )
        if workload not in chosen:
            chosen.append(workload)
    return chosen


def axes_text(definition: Definition, workload: Workload) -> str:
    """The workload's var axes as ``name=value`` joined by ``;`` (the CSV's ``axes``)."""
    return ";".join(f"{k}={workload.axes[k]}" for k in definition.axes if k in workload.axes)


# ---------------------------------------------------------------------------------------------
# Measured latencies and the score


@dataclass(frozen=True)
class Measured:
    latency_ms: float
    baseline_ms: float | None


def read_measured(path: str, problem: Problem) -> dict[str, Measured]:
    """``--measured FILE``: CSV with a header ``workload_uuid,latency_ms[,baseline_ms]``; every
    uuid a workload of ``problem``, every time a positive number (ms)."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            rows = list(csv.reader(f))
    except OSError as e:
        raise DefinitionError(f"cannot read '{path}': {e.strerror or e}") from e
    if not rows:
        raise DefinitionError(f"{path}: empty (header: workload_uuid,latency_ms[,baseline_ms])")
    header = [h.strip() for h in rows[0]]
    if header not in (
        ["workload_uuid", "latency_ms"],
        ["workload_uuid", "latency_ms", "baseline_ms"],
    ):
        raise DefinitionError(
            f"{path}:1: header {','.join(header)!r}, not workload_uuid,latency_ms[,baseline_ms]"
        )
    uuids = {w.uuid for w in problem.workloads}
    out: dict[str, Measured] = {}
    for number, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        where = f"{path}:{number}"
        if len(row) != len(header):
            raise DefinitionError(f"{where}: {len(row)} column(s), the header has {len(header)}")
        uuid = row[0].strip()
        if uuid not in uuids:
            raise DefinitionError(
                f"{where}: '{uuid}' is not a workload of '{problem.definition.name}'"
            )
        if uuid in out:
            raise DefinitionError(f"{where}: '{uuid}' is measured twice")
        times = [
            _milliseconds(cell, where, name) for cell, name in zip(row[1:], header[1:], strict=True)
        ]
        baseline = times[1] if len(times) > 1 else None
        out[uuid] = Measured(times[0], baseline)
    return out


def _milliseconds(cell: str, where: str, name: str) -> float | None:
    text = cell.strip()
    if not text and name == "baseline_ms":
        return None  # no baseline for this workload
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise DefinitionError(f"{where}: {name} {text!r} is not a positive number of ms")
    return value


def sol_score(
    t_kernel: float, t_sol: float | None, t_baseline: float | None
) -> tuple[float | None, str | None]:
    """SOL-ExecBench's score S = 1 / (1 + (T_kernel - T_SOL) / (T_baseline - T_SOL)): 1 at the
    SOL, 0.5 at the baseline, toward 0 as the kernel slows. ``(S, None)``, or ``(None, why)``
    when it is undefined (no baseline; a baseline at or below the SOL)."""
    if t_baseline is None:
        return None, "no baseline_ms"
    if t_sol is None:
        return None, "no fused SOL"
    if t_baseline <= t_sol:
        return None, "baseline_ms is not above the SOL: T_baseline - T_SOL <= 0"
    return 1.0 / (1.0 + (t_kernel - t_sol) / (t_baseline - t_sol)), None


def headroom(t_kernel: float, t_sol: float | None) -> tuple[float | None, str | None]:
    """T_kernel / T_SOL, or ``(None, why)`` when the SOL is 0 or absent."""
    if t_sol is None:
        return None, "no fused SOL"
    if t_sol <= 0:
        return None, "the fused SOL is 0"
    return t_kernel / t_sol, None


# ---------------------------------------------------------------------------------------------
# Rows, the CSV and the suite table


def _ms(report: dict, key: str) -> float | None:
    seconds = report.get("sol", {}).get(key)
    return None if seconds is None else seconds * 1e3


def main_precision(report: dict) -> str:
    """The unit and precision of the program's main work: its node with the most MACs (else
    the most other ops), as the report writes it (``nodes[].precision``)."""
    nodes = report.get("nodes") or []
    if not nodes:
        return "none"
    main = max(nodes, key=lambda n: (n.get("macs", 0), n.get("flops", 0)))
    return str(main.get("precision", "none"))


def row_of(definition: Definition, workload: Workload, report: dict) -> dict[str, Any]:
    """The CSV row of one analysed workload (``CSV_COLUMNS``)."""
    sol = report.get("sol", {})
    bottleneck = sol.get("bottleneck_fused") or sol.get("bottleneck_unfused")
    return {
        "definition": definition.name,
        "workload_uuid": workload.uuid,
        "axes": axes_text(definition, workload),
        "sol_unfused_ms": _ms(report, "unfused_s"),
        "sol_fused_ms": _ms(report, "fused_s"),
        "sol_cache_ms": _ms(report, "cache_aware_s"),
        "bottleneck": bottleneck,
        "macs": report.get("totals", {}).get("macs"),
        "bytes_fused": report.get("bytes", {}).get("fused"),
        "precision": main_precision(report),
        "verification": report.get("verification", {}).get("status"),
    }


def add_score(row: dict[str, Any], measured: Measured | None) -> None:
    """The score columns of ``row`` (``SCORE_COLUMNS``) from its measured latencies, with
    T_SOL the fused SOL (docs/benchmarks.md, "Score"); all empty when not measured."""
    for column in SCORE_COLUMNS:
        row[column] = None
    if measured is None:
        row["score_note"] = "not measured"
        return
    t_sol = row["sol_fused_ms"]
    row["latency_ms"], row["baseline_ms"] = measured.latency_ms, measured.baseline_ms
    row["sol_score"], why_score = sol_score(measured.latency_ms, t_sol, measured.baseline_ms)
    row["headroom"], why_headroom = headroom(measured.latency_ms, t_sol)
    notes = [n for n in (why_score, why_headroom) if n]
    if t_sol is not None and measured.latency_ms < t_sol:
        notes.append("latency below the SOL: a bound was violated (a different precision?)")
    row["score_note"] = "; ".join(notes) or None


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return str(value)


def csv_text(rows: list[dict[str, Any]], columns: Sequence[str]) -> str:
    """``rows`` as CSV with ``columns`` (None: an empty cell; floats as Python's shortest
    round-trip text, so the file is the same bytes for the same numbers)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_cell(row.get(c)) for c in columns])
    return buf.getvalue()


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def _time(ms: float | None) -> str:
    """A time given in ms, in the unit that suits it (as the report's tables write times)."""
    if ms is None:
        return "-"
    seconds = ms * 1e-3
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.4g} {unit}"
    return f"{seconds / 1e-9:.4g} ns"


def _count(value: float | None, unit: str = "") -> str:
    if value is None:
        return "-"
    for prefix, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.4g} {prefix}{unit}"
    return f"{value:.4g} {unit}".rstrip()


def suite_table(definition: Definition, rows: list[dict[str, Any]], scored: bool) -> str:
    """The terminal table of a definition's workloads: one line each (the SOL of each fidelity,
    bound, MACs, fused bytes, verification; with ``scored``, latency, score and headroom)."""
    header = ["#", "workload", "axes", "unfused", "fused", "cache", "bound", "MACs", "bytes"]
    header += ["verification"]
    if scored:
        header += ["latency", "score", "headroom"]
    lines = []
    for row in rows:
        cells = [
            str(row["index"]),
            row["workload_uuid"],
            row["axes"] or "-",
            _time(row["sol_unfused_ms"]),
            _time(row["sol_fused_ms"]),
            _time(row["sol_cache_ms"]),
            row["bottleneck"] or "-",
            _count(row["macs"]),
            _count(row["bytes_fused"], "B"),
            row["verification"] or "-",
        ]
        if scored:
            cells += [_time(row["latency_ms"]), _number(row["sol_score"]), _number(row["headroom"])]
        lines.append(cells)
    widths = [max(len(c) for c in column) for column in zip(header, *lines, strict=True)]

    def render(cells: list[str]) -> str:
        left = {1, 2, 6, 9}  # the text columns
        parts = [
            c.ljust(w) if i in left else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(parts).rstrip()

    title = f"{definition.name}: {len(rows)} workload(s)"
    out = [title, render(header), *(render(cells) for cells in lines)]
    notes = [
        f"  {row['workload_uuid']}: {row['score_note']}"
        for row in rows
        if scored and row.get("score_note")
    ]
    if notes:
        out += ["score notes:", *notes]
    return "\n".join(out) + "\n"
