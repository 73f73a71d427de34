"""Tracing a model to a Core ATen FX graph: torch.export first, make_fx as the fallback.

Both paths produce a ``Traced``: the graph, what each placeholder is bound to (a user input, a
parameter, a buffer or a lifted constant) and what each graph output is (a user output or the new
value of a mutated buffer). Nothing here runs the model on real data: export and make_fx trace
with FakeTensors.
"""

from __future__ import annotations

import inspect
import warnings
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn


class CaptureError(ValueError):
    """A model that SOLAR cannot capture (the message says why, in one line)."""


@dataclass
class Binding:
    """Where a graph placeholder's value comes from, or where a graph output goes.

    kind: "input" (``index``: position among the flattened tensor inputs), "weight" or "buffer"
    (``target``: the module's attribute path, e.g. ``fc1.weight``), "constant" (``value``: the
    lifted tensor), "output" (``index``: position among the flattened tensor outputs),
    "buffer_mutation" (``target``: the buffer that receives the value)."""

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


def trace(model: Any, args: tuple) -> Traced:
    """Traces ``model(*args)``; ``model`` is an nn.Module or a function of tensors."""
    module = model if isinstance(model, nn.Module) else _FunctionModule(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # torch's own deprecation notices
        return _trace(module, args)


def _trace(module: nn.Module, args: tuple) -> Traced:
    try:
        return _trace_export(module, args)
    except Exception as e:  # export failed: make_fx is the documented fallback
        export_error = f"{type(e).__name__}: {_first_line(str(e))}"
    try:
        traced = _trace_make_fx(module, args)
    except Exception as e:
        raise CaptureError(
            f"capture failed: torch.export: {export_error}; make_fx: "
            f"{type(e).__name__}: {_first_line(str(e))}"
        ) from e
    traced.export_error = export_error
    return traced


class _FunctionModule(nn.Module):
    def __init__(self, fn: Any) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args: Any) -> Any:
        return self.fn(*args)


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else ""


# Ops kept whole although Core ATen decomposes them: their rules know more than the pieces say.
# scaled_dot_product_attention with is_causal decomposes into dense matmuls and a `where` mask
# (the full square of scores); its rule lowers the causal triangle, the work a fused attention
# kernel does (docs/lowering.md).
KEPT_WHOLE = ("scaled_dot_product_attention.default",)


def _decompositions(table: dict | None = None) -> dict:
    """The decomposition table (torch.export's default unless given) minus KEPT_WHOLE."""
    table = dict(torch.export.default_decompositions() if table is None else table)
    for name in KEPT_WHOLE:
        table.pop(getattr(torch.ops.aten, name.split(".")[0]).default, None)
    return table


def _trace_export(module: nn.Module, args: tuple) -> Traced:
    from torch.export.graph_signature import InputKind, OutputKind

    ep = torch.export.export(module, args).run_decompositions(_decompositions())
    sig = ep.graph_signature
    traced = Traced(graph=ep.graph, method="torch.export", module=ep.graph_module)
    n_inputs = 0
    for spec in sig.input_specs:
        name = getattr(spec.arg, "name", None)
        if name is None:
            continue
        if spec.kind == InputKind.USER_INPUT:
            traced.placeholders[name] = Binding("input", index=n_inputs)
            n_inputs += 1
        elif spec.kind == InputKind.PARAMETER:
            traced.placeholders[name] = Binding("weight", target=spec.target)
        elif spec.kind == InputKind.BUFFER:
            traced.placeholders[name] = Binding("buffer", target=spec.target)
        elif spec.kind == InputKind.CONSTANT_TENSOR:
            traced.placeholders[name] = Binding("constant", value=ep.constants[spec.target])
        else:
            raise CaptureError(f"unsupported exported input kind {spec.kind.name} ('{name}')")
    output_node = next(n for n in ep.graph.nodes if n.op == "output")
    values = list(output_node.args[0])
    n_outputs = 0
    for spec, value in zip(sig.output_specs, values, strict=True):
        if spec.kind == OutputKind.USER_OUTPUT:
            traced.outputs.append((value, Binding("output", index=n_outputs)))
            n_outputs += 1
        elif spec.kind == OutputKind.BUFFER_MUTATION:
            traced.outputs.append((value, Binding("buffer_mutation", target=spec.target)))
        else:
            raise CaptureError(f"unsupported exported output kind {spec.kind.name}")
    # user outputs first, then the buffers' new values (export lists the mutations first)
    traced.outputs.sort(key=lambda item: item[1].kind != "output")
    return traced


def _trace_make_fx(module: nn.Module, args: tuple) -> Traced:
    from torch._decomp import core_aten_decompositions
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.utils import _pytree as pytree

    params = dict(module.named_parameters())
    buffers = dict(module.named_buffers())
    flat_args, in_spec = pytree.tree_flatten(args)
    n_state = len(params) + len(buffers)

    def flat_fn(*flat: Any) -> list:
        state = dict(zip(list(params) + list(buffers), flat[:n_state], strict=True))
        call_args = pytree.tree_unflatten(list(flat[n_state:]), in_spec)
        out = torch.func.functional_call(module, state, call_args)
        return pytree.tree_leaves(out)

    functional = torch.func.functionalize(flat_fn, remove="mutations_and_views")
    gm = make_fx(
        functional,
        decomposition_table=_decompositions(core_aten_decompositions()),
        tracing_mode="fake",
        record_stack_traces=True,
    )(*params.values(), *buffers.values(), *flat_args)
    traced = Traced(graph=gm.graph, method="make_fx", module=gm)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    arg_names = _argument_names(module, len(flat_args))
    state_kinds = [("weight", t) for t in params] + [("buffer", t) for t in buffers]
    by_node: dict[str, str] = {}
    for k, node in enumerate(placeholders):
        if k < n_state:
            kind, target = state_kinds[k]
            node.name = ("p_" if kind == "weight" else "b_") + target.replace(".", "_")
            traced.placeholders[node.name] = Binding(kind, target=target)
            by_node[node.name] = kind
            node._solar_target = target  # read back below, for mutation copies
        else:
            node.name = arg_names[k - n_state]
            traced.placeholders[node.name] = Binding("input", index=k - n_state)
    for node in gm.graph.nodes:
        if node.op == "get_attr":
            value = getattr(gm, node.target)
            traced.placeholders[node.name] = Binding("constant", value=value)
        # functionalize writes mutated inputs back with copy_(input, new value) at the end
        if node.op == "call_function" and node.target is torch.ops.aten.copy_.default:
            dst, src = node.args[0], node.args[1]
            if by_node.get(dst.name) != "buffer":
                raise CaptureError(f"the model mutates its input '{dst.name}' in place")
            traced.outputs.append((src, Binding("buffer_mutation", target=dst._solar_target)))
            traced.dropped.add(node.name)
    output_node = next(n for n in gm.graph.nodes if n.op == "output")
    user = [(v, Binding("output", index=i)) for i, v in enumerate(output_node.args[0])]
    traced.outputs = user + traced.outputs
    return traced


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
