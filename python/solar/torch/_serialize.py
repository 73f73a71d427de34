"""A traced FX graph as the capture document (docs/capture.md)."""

from __future__ import annotations

import math
import operator
import os
from typing import Any

import torch

from solar._names import NameTable, sanitize
from solar.torch._trace import CaptureError, Traced
from solar.torch._where import _location, _op_name

FORMAT = "solar-capture"
VERSION = 1

DTYPES = {
    torch.float64: "f64",
    torch.float32: "f32",
    torch.float16: "f16",
    torch.bfloat16: "bf16",
    torch.float8_e4m3fn: "f8e4m3",
    torch.float8_e5m2: "f8e5m2",
    torch.int64: "i64",
    torch.int32: "i32",
    torch.int8: "i8",
    torch.uint8: "u8",
    torch.float4_e2m1fn_x2: "f4e2m1x2",
    torch.bool: "bool",
    torch.complex64: "c64",
    torch.complex128: "c128",
}

# The document's role of a placeholder, by its binding's kind where they differ: a plain tensor
# attribute is a tensor constant of the module (the role torch.export gives it when it lifts it).
_ROLES = {"attribute": "constant", "optimizer_state": "buffer"}
# Schema argument types left out of "args": they do not change the work.
_DROPPED_ARG_TYPES = ("Device", "Layout", "MemoryFormat")
# Ops that compute nothing (export's run-time assertions): not serialized.
_NO_OPS = frozenset(
    {
        "aten._assert_tensor_metadata.default",
        "aten._assert_scalar.default",
        "aten._assert_async.msg",
        "aten.sym_constrain_range.default",
        "aten.sym_constrain_range_for_size.default",
    }
)


def dtype_name(dtype: torch.dtype) -> str:
    if dtype not in DTYPES:
        raise CaptureError(
            f"dtype {dtype} has no SOLAR dtype (valid: {', '.join(DTYPES.values())})"
        )
    return DTYPES[dtype]


def _names(traced: Traced) -> tuple[NameTable, dict[str, str], dict[str, list[str | None]]]:
    """Pass 1 of ``serialize``: the name table, the capture name of every FX node that holds a
    tensor and the element names of every multi-output node."""
    graph = traced.graph
    names = NameTable()
    tensor_name: dict[str, str] = {}  # FX node name -> capture tensor name
    multi: dict[str, list[str | None]] = {}  # FX node of a multi-output op -> element names

    # FX's own names first (in graph order), synthetic ones after.
    for node in graph.nodes:
        if node.op in ("output",) or node.name in traced.dropped:
            continue
        val = node.meta.get("val")
        if isinstance(val, torch.Tensor):
            tensor_name[node.name] = names.take(node.name)
    for node in graph.nodes:
        val = node.meta.get("val")
        if node.op == "call_function" and isinstance(val, (tuple, list)):
            elements: list[str | None] = [None] * len(val)
            for user in node.users:
                if user.target is operator.getitem and user.name in tensor_name:
                    elements[user.args[1]] = tensor_name[user.name]
            for i, v in enumerate(val):
                if elements[i] is None and isinstance(v, torch.Tensor):
                    elements[i] = names.take(f"{node.name}_out{i}")
            multi[node.name] = elements

    return names, tensor_name, multi


def _roles_and_outputs(
    traced: Traced, tensor_name: dict[str, str]
) -> tuple[dict[str, str], list[str]]:
    """The role of each input and output tensor by capture name, and the outputs in order."""
    roles: dict[str, str] = {}
    for fx_name, binding in traced.placeholders.items():
        if fx_name in tensor_name:
            roles[tensor_name[fx_name]] = _ROLES.get(binding.kind, binding.kind)
    outputs = []
    for value, _binding in traced.outputs:
        if not isinstance(value, torch.fx.Node) or value.name not in tensor_name:
            raise CaptureError(f"graph output {value!r} is not a tensor")
        if tensor_name[value.name] not in outputs:  # a value returned and also stored
            outputs.append(tensor_name[value.name])
    for name in outputs:
        if roles.get(name, "intermediate") == "intermediate":
            roles[name] = "output"

    return roles, outputs


def serialize(
    traced: Traced, source: str | None, sizes: dict | None = None
) -> tuple[dict, dict[str, str], dict[str, list[str | None]]]:
    """The capture document, the capture name of every FX node that holds a tensor, and the
    element names of every multi-output FX node (``None`` for an element that is no tensor).
    ``sizes``: the value of each symbol of a capture with symbolic sizes (sympy symbol -> int,
    solar.torch._symbolic): every symbolic size is written as its value under them, and the
    nodes that compute sizes (``aten.sym_size.int``, ``operator.mul`` of sizes, ...) are not
    written (their values are, where they are read)."""
    graph = traced.graph
    names, tensor_name, multi = _names(traced)
    # Pass 2: tensors and nodes.
    roles, outputs = _roles_and_outputs(traced, tensor_name)

    tensors: list[dict] = []
    nodes: list[dict] = []

    def add_tensor(name: str, val: torch.Tensor) -> None:
        try:
            dtype = dtype_name(val.dtype)
        except CaptureError as e:  # name the tensor, and the op and place that made it
            made_by = ""
            if node.op == "call_function":
                where = _location(node, source)
                made_by = f" (output of {_op_name(node.target)}{' at ' + where if where else ''})"
            raise CaptureError(f"tensor '{name}'{made_by}: {e}") from e
        tensors.append(
            {
                "name": name,
                "role": roles.get(name, "intermediate"),
                "dtype": dtype,
                "shape": [int(bound(s, sizes)) for s in val.shape],
            }
        )

    for node in graph.nodes:
        if node.name in traced.dropped or node.op == "output":
            continue
        val = node.meta.get("val")
        if node.op in ("placeholder", "get_attr"):
            if node.name in tensor_name:
                add_tensor(tensor_name[node.name], val)
            continue
        if node.op != "call_function":
            raise CaptureError(f"unsupported FX node '{node.name}' ({node.op})")
        if sizes is not None and _symbolic_scalar(val):
            continue  # a size computed from sizes: its value is written where it is read
        if node.target is operator.getitem and node.args[0].name in multi:
            continue  # resolved: its tensor is listed with the op that produced it
        op = _op_name(node.target)
        if op in _NO_OPS:
            continue
        if node.name in multi:
            out_names = multi[node.name]
            for elem_name, v in zip(out_names, val, strict=True):
                if elem_name is not None:
                    add_tensor(elem_name, v)
        elif node.name in tensor_name:
            out_names = [tensor_name[node.name]]
            add_tensor(out_names[0], val)
        else:
            raise CaptureError(f"op {op} ('{node.name}') returns no tensor")
        entry = {
            "name": out_names[0] if node.name not in multi else names.take(node.name),
            "op": op,
            "args": _args(node, tensor_name, sizes),
            "outputs": out_names,
        }
        location = _location(node, source)
        if location:
            entry["location"] = location
        origin = _origin(node)
        if origin is not None:
            entry["origin"] = origin
        if node.name in traced.phases:
            entry["phase"] = traced.phases[node.name]
        nodes.append(entry)

    doc = {
        "format": FORMAT,
        "version": VERSION,
        "framework": "torch",
        "framework_version": torch.__version__.split("+")[0],
        "capture_method": traced.method,
        "source": os.path.basename(source) if source else None,
        "tensors": tensors,
        "nodes": nodes,
        "outputs": outputs,
    }
    return doc, tensor_name, multi


def _args(node: torch.fx.Node, tensor_name: dict[str, str], sizes: dict | None = None) -> dict:
    target = node.target
    if not isinstance(target, torch._ops.OpOverload):
        # Not an ATen op (e.g. a higher-order op): positional arguments as arg0, arg1, ...
        return {f"arg{i}": _value(a, tensor_name, sizes) for i, a in enumerate(node.args)}
    args = {}
    positional = list(node.args)
    for i, arg in enumerate(target._schema.arguments):
        if arg.kwarg_only or i >= len(positional):
            if arg.name in node.kwargs:
                value = node.kwargs[arg.name]
            elif arg.has_default_value():
                value = arg.default_value
            else:
                raise CaptureError(f"{target}: argument '{arg.name}' has no value")
        else:
            value = positional[i]
        if any(t in str(arg.type) for t in _DROPPED_ARG_TYPES):
            continue
        args[arg.name] = _value(value, tensor_name, sizes)
    return args


def _symbolic_scalar(value: Any) -> bool:
    return isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool))


def bound(value: Any, sizes: dict | None) -> Any:
    """``value`` with the symbols of a symbolic size bound to ``sizes`` (sympy symbol -> int),
    evaluated as Python evaluates it (``torch.utils._sympy``'s reference semantics: floor
    division, true division in float64); a plain value, or any value when ``sizes`` is None,
    as it is. A symbol without a value is a CaptureError."""
    if sizes is None or not _symbolic_scalar(value):
        return value
    from torch.utils._sympy.interp import sympy_interp
    from torch.utils._sympy.reference import PythonReferenceAnalysis

    expr = value.node.expr
    free = sorted(str(s) for s in expr.free_symbols if s not in sizes)
    if free:
        raise CaptureError(f"size '{expr}' depends on {', '.join(free)}, which has no value")
    return sympy_interp(PythonReferenceAnalysis, sizes, expr)


def _value(value: Any, tensor_name: dict[str, str], sizes: dict | None = None) -> Any:
    if isinstance(value, torch.fx.Node) and sizes is not None:
        if _symbolic_scalar(value.meta.get("val")):  # a size computed in the graph
            return _value(bound(value.meta["val"], sizes), tensor_name)
    value = bound(value, sizes)
    if isinstance(value, torch.fx.Node):
        if value.name not in tensor_name:
            raise CaptureError(f"argument '{value.name}' is not a tensor")
        return {"tensor": tensor_name[value.name]}
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, torch.SymInt)):
        return int(value)
    if isinstance(value, (float, torch.SymFloat)):
        f = float(value)
        if math.isnan(f):
            return "nan"
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        return f
    if isinstance(value, torch.SymBool):
        return bool(value)
    if isinstance(value, torch.dtype):
        return dtype_name(value)
    if isinstance(value, (list, tuple)):
        return [_value(v, tensor_name, sizes) for v in value]
    if isinstance(value, (torch.device, torch.layout, torch.memory_format)):
        return str(value)
    raise CaptureError(f"argument value {value!r} of type {type(value).__name__} is not supported")


def _origin(node: torch.fx.Node) -> dict | None:
    """The framework operation ``node`` comes from, when export's decompositions made it from
    another node: ``{"name": ..., "op": ...}`` of that node of the exported graph before
    ``run_decompositions`` (its provenance, ``node.meta["from_node"]``). ``None`` when the node
    is its own origin or has no provenance (the make_fx path)."""
    sources = node.meta.get("from_node") or []
    if not sources:
        return None
    src = sources[-1]
    name = getattr(src, "name", None)
    target = getattr(src, "target", None)
    if not isinstance(name, str) or not name:
        return None
    op = str(target) if target is not None else ""
    if name == node.name and op == _op_name(node.target):
        return None
    return {"name": sanitize(name), "op": op}
