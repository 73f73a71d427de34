"""Per-op verification at reduced size (docs/capture.md, "Verification").

When the whole program is too big to run, each distinct lowered operator configuration (the same
op, the same non-tensor arguments up to the sizes being shrunk, the same operand dtypes and
ranks) is checked alone: the node is rebuilt at reduced sizes, PyTorch runs the op on seeded
random data, the one-node capture is lowered by the same rules, SOLAR's executor runs it, and the
outputs are compared.

Shrinking. Every size of the node's tensors that is at least ``MIN_SHRINK`` is divided by one
factor d (a power of two), everywhere it appears: in the operand shapes and in integer arguments
equal to it (view and expand sizes, slice ends, ...). Three maps are tried: ``exact`` shrinks
only the sizes that d divides (so a reshape of 1024 into 16 x 64 stays consistent), ``leading``
only the sizes that d divides among the tensors' first dimensions (a reshape of 4096 x 64 into
256 x 16 x 64), ``ceil`` every size to ceil(S / d). d is the smallest power of two that brings
the node's tensors under ``TARGET_BYTES``. An integer argument that is no tensor size but the
product of consecutive dims of an operand (GroupNorm's ``HxW``) follows those dims, and so
does a size of a reshape's tensor that is the product of consecutive dims of its other tensor
(a merge or split of dims, ``_merged``).

Only what the op's semantics allow shrinks. An op whose sizes are tied to a group count
(GroupNorm's channels, a grouped convolution's channels, a channel or pixel shuffle's channels:
``_grouped_sizes``) first tries the three maps with those sizes kept, then without; any other op
tries them shrinking every size first, then keeping its tensors' second dims (channels), so that
only the batch and the trailing dims shrink. Then a fourth map, ``floor``, in the same plans:
every size to S // d but none below ``MIN_SHRINK`` (a 3-D convolution whose depth 16 would
otherwise shrink below its kernel). PyTorch decides whether a reduced node is valid:
the op must run and give outputs of the original ranks and dtypes, and the lowering must accept
it, within ``--verify-budget-s`` of estimated executor time (``solar.verify.per_op.check_op``,
which asks for the sizes in turn). If no map works, the node runs at its real size when its
tensors fit ``real_budget_bytes`` (a reduced map over that budget is not tried); otherwise it is
listed as not verified, with each size's reason.
"""

from __future__ import annotations

import json
import math
from typing import Any

import torch

from solar.torch._golden import (
    deterministic_dropout,
    nvfp4_scaled_mm,
    nvfp4_scaled_mm_v2,
    to_numpy,
)
from solar.torch._serialize import DTYPES
from solar.verify.per_op import OpCase, OpConfig, first_line

MIN_SHRINK = 16  # sizes below this are kept (kernel sizes, heads, small channel counts)
TARGET_BYTES = 1 << 20  # the reduced node's tensors, in all
_PLACEMENT_ARGS = ("device", "layout", "memory_format", "pin_memory")
_TORCH_DTYPES = {name: dtype for dtype, name in DTYPES.items()}
_ELEMENT_BYTES = {name: torch.empty((), dtype=d).element_size() for d, name in DTYPES.items()}


def config_key(node: dict, dtypes: dict[str, str], ranks: dict[str, int]) -> str:
    """The configuration of a node: its op, its arguments with every tensor replaced by its dtype
    and rank, and its outputs' dtypes and ranks."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict) and "tensor" in value:
            return {"dtype": dtypes[value["tensor"]], "rank": ranks[value["tensor"]]}
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items()}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    outs = [None if o is None else [dtypes[o], ranks[o]] for o in node["outputs"]]
    return json.dumps([node["op"], strip(node["args"]), outs], sort_keys=True)


def _sizes(node: dict, shapes: dict[str, list[int]], leading: bool = False) -> set[int]:
    """The sizes of the node's tensors that may shrink (``leading``: only their first dims)."""
    names = [o for o in node["outputs"] if o is not None] + list(_refs(node["args"]))
    return {s for n in names for s in (shapes[n][:1] if leading else shapes[n]) if s >= MIN_SHRINK}


def _refs(value: Any):
    """Every tensor name referenced in an argument value (or in a node's whole args dict)."""
    if isinstance(value, dict) and "tensor" in value:
        yield value["tensor"]
    elif isinstance(value, dict):
        for v in value.values():
            yield from _refs(v)
    elif isinstance(value, list):
        for v in value:
            yield from _refs(v)


def _mapping(sizes: set[int], d: int, mode: str) -> dict[int, int]:
    if d == 1:
        return {}
    if mode in ("exact", "leading"):
        return {s: s // d for s in sizes if s % d == 0}
    if mode == "floor":
        return {s: max(MIN_SHRINK, s // d) for s in sizes}
    return {s: max(1, math.ceil(s / d)) for s in sizes}


def _footprint(node: dict, shapes, dtypes, mapping: dict[int, int]) -> int:
    names = {o for o in node["outputs"] if o is not None} | set(_refs(node["args"]))
    return sum(
        math.prod(mapping.get(s, s) for s in shapes[n]) * _ELEMENT_BYTES[dtypes[n]] for n in names
    )


def _map_args(value: Any, mapping: dict[int, int]) -> Any:
    """``value`` (an argument, or a node's whole args dict) with every int in ``mapping`` mapped;
    tensor references, bools, floats and strings stay."""
    if isinstance(value, dict):
        if "tensor" in value:
            return value
        return {k: _map_args(v, mapping) for k, v in value.items()}
    if isinstance(value, bool) or not isinstance(value, (int, list)):
        return value
    if isinstance(value, list):
        return [_map_args(v, mapping) for v in value]
    return mapping.get(value, value)


# Ops whose index outputs depend on the order of equal keys, which PyTorch leaves unspecified
# (SOLAR's rules keep equal keys in position order): their integer operands are drawn distinct,
# so that the check compares a well-defined result (issue 29: the 0/1 draw of an integer sort
# key gave ties, and the sort's indices "differed" on transformers' Mixtral).
_TIE_SENSITIVE = frozenset(
    {
        "aten.sort.default",
        "aten.sort.stable",
        "aten.argsort.default",
        "aten.argsort.stable",
        "aten.topk.default",
    }
)


def _random(
    shape: list[int], dtype: str, gen: torch.Generator, distinct: bool = False
) -> torch.Tensor:
    torch_dtype = _TORCH_DTYPES[dtype]
    if distinct and dtype != "bool" and not torch_dtype.is_floating_point:
        return torch.randperm(math.prod(shape), generator=gen).reshape(shape).to(torch_dtype)
    if dtype == "bool":
        return torch.randint(0, 2, shape, generator=gen).bool()
    if torch_dtype == torch.float4_e2m1fn_x2:  # packed fp4: no cast to it, uniform bytes
        return torch.randint(0, 256, shape, generator=gen, dtype=torch.uint8).view(torch_dtype)
    if torch_dtype.is_floating_point:
        return torch.randn(shape, generator=gen, dtype=torch.float64).to(torch_dtype)
    return torch.randint(0, 2, shape, generator=gen).to(torch_dtype)  # valid indices


# Recurrent ops: their parameters are drawn as PyTorch initializes them (``_rnn_parameters``).
_RNN_OPS = ("aten.lstm.input", "aten.gru.input", "aten.rnn_tanh.input", "aten.rnn_relu.input")


def _rnn_parameters(node: dict, inputs: dict[str, torch.Tensor], gen: torch.Generator) -> None:
    """An RNN's weights and biases (``params``) redrawn uniform in [-1/sqrt(H), 1/sqrt(H)), H its
    hidden size (the last dim of its last initial state: an LSTM's c0), as nn.LSTM, nn.GRU and
    nn.RNN initialize them. With normal weights the recurrence is ill-conditioned over many
    steps: PyTorch's own float32 result of a 6-layer LSTM over 64 steps is 0.05 away from its
    float64 one, far outside the float32 tolerance; at PyTorch's scale both agree to 1e-7."""
    if node["op"] not in _RNN_OPS:
        return
    hx = node["args"]["hx"]
    hidden = inputs[(hx[-1] if isinstance(hx, list) else hx)["tensor"]].shape[-1]
    bound = 1.0 / math.sqrt(hidden)
    for ref in node["args"]["params"]:
        t = inputs[ref["tensor"]]
        u = torch.rand(t.shape, generator=gen, dtype=torch.float64) * (2 * bound) - bound
        inputs[ref["tensor"]] = u.to(t.dtype)


def _torch_op(name: str) -> Any:
    """The operator ``namespace.op.overload`` (ATen, or a library's custom op such as
    ``transformers.grouped_mm_fallback.default``)."""
    parts = name.split(".")
    if len(parts) != 3 or not hasattr(torch.ops, parts[0]):
        raise ValueError(f"{name} is not a registered torch operator")
    return getattr(getattr(getattr(torch.ops, parts[0]), parts[1]), parts[2])


def _call(op_name: str, args: dict, tensors: dict[str, torch.Tensor]) -> Any:
    op = _torch_op(op_name)
    schema = {a.name: str(a.type) for a in op._schema.arguments}

    def value(v: Any, type_name: str) -> Any:
        if isinstance(v, dict) and "tensor" in v:
            return tensors[v["tensor"]]
        if isinstance(v, list):
            return [value(x, type_name) for x in v]
        if isinstance(v, str) and v in ("inf", "-inf", "nan") and "str" not in type_name:
            return float(v)
        return v

    kwargs = {}
    for k, v in args.items():
        if k in _PLACEMENT_ARGS:
            continue  # the CPU defaults
        kwargs[k] = (
            _TORCH_DTYPES[v]
            if k in ("dtype", "out_dtype") and v is not None
            else value(v, schema[k])
        )
    if op_name == "aten.native_dropout.default":
        return deterministic_dropout(kwargs["input"], kwargs["p"], kwargs["train"])
    if op_name == "aten._scaled_mm_v2.default" and kwargs["self"].dtype == torch.float4_e2m1fn_x2:
        return nvfp4_scaled_mm_v2(**kwargs)
    if op_name == "aten._scaled_mm.default" and kwargs["self"].dtype == torch.float4_e2m1fn_x2:
        return nvfp4_scaled_mm(**kwargs)
    return op(**kwargs)


# Ops whose output values are unspecified (uninitialised memory, which its consumers overwrite):
# nothing to compare, so they are not checked alone (a check compared two arbitrary buffers, a
# false mismatch on transformers' Mixtral, issue 29).
_UNSPECIFIED_VALUES = frozenset(
    {
        "aten.empty.memory_format",
        "aten.empty_like.default",
        "aten.empty_permuted.default",
        "aten.empty_strided.default",
        "aten.new_empty.default",
    }
)


def _grouped_offsets(node: dict, inputs: dict[str, torch.Tensor], gen: torch.Generator) -> None:
    """transformers' grouped_mm_fallback(input [S, K], weight [E, K, N], offs [E]) and
    aten._grouped_mm(self [S, K], mat2 [E, K, N], offs [E]): ``offs``
    holds cumulative row counts, nondecreasing in 0..S (the rows are sorted by expert); a 0/1
    draw is no such list (a false mismatch on transformers' Mixtral, issue 29), so ``offs`` is
    redrawn sorted in 0..S, the last S (the rows past it are left unwritten by aten._grouped_mm)."""
    if node["op"] not in ("transformers.grouped_mm_fallback.default", "aten._grouped_mm.default"):
        return
    offs = node["args"].get("offs")
    x = node["args"].get("input", node["args"].get("self"))
    if not (isinstance(offs, dict) and isinstance(x, dict)):
        return
    rows = inputs[x["tensor"]].shape[0]
    old = inputs[offs["tensor"]]
    drawn = torch.sort(torch.randint(0, rows + 1, tuple(old.shape), generator=gen)).values
    if drawn.numel():
        drawn[-1] = rows  # every row in a group, as a router's counts: past the last, unspecified
    inputs[offs["tensor"]] = drawn.to(old.dtype)


def _index_values(node: dict, inputs: dict[str, torch.Tensor], gen: torch.Generator) -> None:
    """aten.index.Tensor(self, indices): each integer index tensor redrawn in 0..size - 1 of
    the dimension of ``self`` it indexes (a 0/1 draw is out of bounds along a dimension of size
    1: PyTorch refused DeepSeek-V3's twin's gather, and the op went unverified)."""
    if node["op"] != "aten.index.Tensor":
        return
    x, indices = node["args"].get("self"), node["args"].get("indices")
    if not (isinstance(x, dict) and isinstance(indices, list)):
        return
    shape = inputs[x["tensor"]].shape
    for d, index in enumerate(indices):
        if not isinstance(index, dict) or d >= len(shape):
            continue
        old = inputs[index["tensor"]]
        if old.dtype == torch.bool or old.is_floating_point():
            continue
        drawn = torch.randint(0, max(int(shape[d]), 1), tuple(old.shape), generator=gen)
        inputs[index["tensor"]] = drawn.to(old.dtype)


def per_op_configs(document: dict, skip_nodes: set[str], real_budget_bytes: int) -> list[OpConfig]:
    """One ``OpConfig`` per distinct configuration of the lowered nodes (``skip_nodes``: not
    lowered), in first-occurrence order; its cases (``_cases``) are the sizes PyTorch runs it
    at, made as they are asked for (``solar.verify.per_op.check_op`` lowers and runs each in
    turn, until one passes through SOLAR)."""
    shapes = {t["name"]: t["shape"] for t in document["tensors"]}
    dtypes = {t["name"]: t["dtype"] for t in document["tensors"]}
    ranks = {n: len(s) for n, s in shapes.items()}
    groups: dict[str, list[dict]] = {}
    for node in document["nodes"]:
        if node["name"] in skip_nodes or node["op"] in _UNSPECIFIED_VALUES:
            continue
        groups.setdefault(config_key(node, dtypes, ranks), []).append(node)
    return [
        OpConfig(
            op=nodes[0]["op"],
            nodes=len(nodes),
            example_node=nodes[0]["name"],
            real_shapes={n: shapes[n] for n in _names(nodes[0])},
            cases=_cases(nodes[0], k, (shapes, dtypes), real_budget_bytes),
        )
        for k, nodes in enumerate(groups.values())
    ]


def _shape_of(node: dict, shapes: dict, name: str) -> list[int] | None:
    value = node["args"].get(name)
    if isinstance(value, dict) and "tensor" in value:
        return shapes[value["tensor"]]
    return None


def _grouped_sizes(node: dict, shapes: dict) -> set[int]:
    """Sizes an op's semantics tie to a group count: they are kept when the node shrinks, so
    that every group keeps its channels. GroupNorm: its channel count C (a multiple of
    ``group``); a grouped convolution (groups > 1): the input's channels and the weight's two
    channel dims (each a multiple of, or a share of, ``groups``); a channel shuffle: the
    channels. Other ops: none."""
    op = node["op"]
    kept: set[int] = set()
    if op == "aten.native_group_norm.default":
        kept.add(node["args"]["C"])
    elif op == "aten.group_norm.default":
        kept.add(_shape_of(node, shapes, "input")[1])
    elif op in ("aten.convolution.default", "aten._convolution.default"):
        if int(node["args"].get("groups", 1)) > 1:
            kept.add(_shape_of(node, shapes, "input")[1])
            kept.update(_shape_of(node, shapes, "weight")[:2])
    elif op in ("aten.channel_shuffle.default", "aten.native_channel_shuffle.default"):
        kept.add(_shape_of(node, shapes, "self")[1])
    elif op == "aten.pixel_shuffle.default":
        kept.add(_shape_of(node, shapes, "self")[1])
    elif op == "aten.pixel_unshuffle.default":
        kept.update(shapes[o][1] for o in node["outputs"] if o is not None)
    return kept


def _channel_sizes(node: dict, shapes: dict) -> set[int]:
    """The second dimension of each of the node's tensors of rank 3 or more (the channels of
    NC..., the heads or sequence of N?..): a fallback that shrinks only the batch and the
    trailing (spatial) dims."""
    names = [o for o in node["outputs"] if o is not None] + list(_refs(node["args"]))
    return {shapes[n][1] for n in names if len(shapes[n]) >= 3}


def _derived(node: dict, shapes: dict, mapping: dict[int, int]) -> dict[int, int]:
    """Integer arguments that are no size of the node's tensors but the product of two or more
    consecutive dims of an operand (GroupNorm's ``HxW`` = H * W): each maps to the product of
    those dims as ``mapping`` shrinks them (the first such run, operands in argument order)."""
    names = list(dict.fromkeys(_refs(node["args"])))
    every_size = {s for n in names + [o for o in node["outputs"] if o] for s in shapes[n]}
    derived: dict[int, int] = {}
    for value in _ints(node["args"]):
        if value in every_size or value in mapping or value in derived or value < MIN_SHRINK:
            continue
        for n in names:
            shape = shapes[n]
            runs = [(i, j) for i in range(len(shape)) for j in range(i + 2, len(shape) + 1)]
            match = next((r for r in runs if math.prod(shape[r[0] : r[1]]) == value), None)
            if match is not None:
                derived[value] = math.prod(mapping.get(x, x) for x in shape[match[0] : match[1]])
                break
    return {v: w for v, w in derived.items() if v != w}


# Ops whose output holds the input's elements in another shape: a size of one side that is the
# product of consecutive dims of the other (a merge or split of dims) follows those dims.
_RESHAPES = (
    "aten.view.default",
    "aten._unsafe_view.default",
    "aten.reshape.default",
    "aten.view_copy.default",
)


def _merged(node: dict, shapes: dict, mapping: dict[int, int]) -> dict[int, int]:
    """For a reshape (``_RESHAPES``): each size of one of its tensors that is the product of two
    or more consecutive dims (two of them not 1, one at least ``MIN_SHRINK``) of another maps to
    the product of those dims as ``mapping`` shrinks them (a view of [16, 256, 512, 256, 1] as
    [1, 2097152, 256]: 2097152 = 16 * 256 * 512 maps to 16' * 256' * 512', not to 2097152 / d,
    which breaks the element count). Other ops: none."""
    if node["op"] not in _RESHAPES:
        return {}
    names = list(dict.fromkeys([*_refs(node["args"]), *(o for o in node["outputs"] if o)]))
    merged: dict[int, int] = {}
    for n in names:
        for value in shapes[n]:
            if value < MIN_SHRINK or value in merged:
                continue
            for other in names:
                shape = shapes[other]
                runs = [(i, j) for i in range(len(shape)) for j in range(i + 2, len(shape) + 1)]
                match = next(
                    (
                        (i, j)
                        for i, j in runs
                        if math.prod(shape[i:j]) == value
                        and sum(x != 1 for x in shape[i:j]) >= 2
                        and max(shape[i:j]) >= MIN_SHRINK
                    ),
                    None,
                )
                if match is not None:
                    merged[value] = math.prod(mapping.get(x, x) for x in shape[match[0] : match[1]])
                    break
    return {v: w for v, w in merged.items() if mapping.get(v, v) != w}


def _ints(value: Any):
    """Every int in an argument value (not bools, not inside tensor references)."""
    if isinstance(value, dict) and "tensor" not in value:
        for v in value.values():
            yield from _ints(v)
    elif isinstance(value, list):
        for v in value:
            yield from _ints(v)
    elif isinstance(value, int) and not isinstance(value, bool):
        yield value


def _full_mapping(node, shapes, sizes: set[int], d: int, mode: str) -> dict[int, int]:
    """The size map of ``_mapping``, with the integer arguments that follow dims
    (``_derived``) and a reshape's merged dims (``_merged``)."""
    mapping = _mapping(sizes, d, mode)
    mapping.update(_derived(node, shapes, mapping))
    mapping.update(_merged(node, shapes, mapping))
    return mapping


def _candidates(node, shapes, dtypes, real_budget_bytes):
    """(label, size map) to try in turn. Plans: an op whose sizes are tied to a group count
    (``_grouped_sizes``) first keeps those sizes, then shrinks freely; any other op shrinks
    freely first, then keeps its tensors' second dims (channels). Each plan tries the
    ``exact``, ``leading`` and ``ceil`` maps, then each the ``floor`` map; a map whose tensors
    exceed ``real_budget_bytes`` is skipped."""
    grouped = {s for s in _grouped_sizes(node, shapes) if s >= MIN_SHRINK}
    channels = {s for s in _channel_sizes(node, shapes) if s >= MIN_SHRINK}
    plans = [grouped, set()] if grouped else [set(), channels]
    tried = []
    # The ``floor`` map last: every size to S / d but not below MIN_SHRINK, so that a size an
    # op needs (a convolution's spatial dims against its kernel) is not shrunk to nothing.
    for mode, kept in [(m, k) for k in plans for m in ("exact", "leading", "ceil")] + [
        ("floor", k) for k in plans
    ]:
        sizes = _sizes(node, shapes, leading=mode == "leading") - kept
        d = 1
        while _footprint(node, shapes, dtypes, _full_mapping(node, shapes, sizes, d, mode)) > (
            TARGET_BYTES
        ):
            if d > max(sizes, default=1):
                break
            if mode == "floor" and _full_mapping(node, shapes, sizes, 2 * d, mode) == (
                _full_mapping(node, shapes, sizes, d, mode)
            ):
                break  # every size at its floor: a larger d changes nothing
            d *= 2
        mapping = _full_mapping(node, shapes, sizes, d, mode)
        if not mapping or mapping in tried:
            continue
        tried.append(mapping)
        if _footprint(node, shapes, dtypes, mapping) > real_budget_bytes:
            continue
        keeping = f", keeping {', '.join(map(str, sorted(kept)))}" if kept else ""
        floor = f", at least {MIN_SHRINK}" if mode == "floor" else ""
        yield f"reduced ({mode}, sizes / {d}{floor}{keeping})", mapping
    if _footprint(node, shapes, dtypes, {}) <= real_budget_bytes:
        yield "real size", {}


def _cases(node: dict, k: int, tensors: tuple[dict, dict], real_budget_bytes: int):
    """The ``OpCase`` of ``node`` (the ``k``-th configuration's; ``tensors``: the document's
    shapes and dtypes by name) at each size of ``_candidates`` in turn, run by PyTorch on
    seeded random data; a size PyTorch refuses is a case with its reason."""
    shapes, dtypes = tensors
    for how, mapping in _candidates(node, shapes, dtypes, real_budget_bytes):
        gen = torch.Generator().manual_seed(k)
        inputs = {
            n: _random(
                [mapping.get(s, s) for s in shapes[n]],
                dtypes[n],
                gen,
                distinct=node["op"] in _TIE_SENSITIVE,
            )
            for n in dict.fromkeys(_refs(node["args"]))
        }
        _rnn_parameters(node, inputs, gen)
        _grouped_offsets(node, inputs, gen)
        _index_values(node, inputs, gen)
        args = _map_args(node["args"], mapping)
        if node["op"] == "aten.topk.default" and args.get("sorted") is False:
            # Any order of the k picked is right (sorted=False); PyTorch's sorted one is
            # SOLAR's (the rule sorts), so the check compares the same well-defined result.
            args = {**args, "sorted": True}
        try:
            result = _call(node["op"], args, inputs)
        except Exception as e:  # PyTorch refuses the reduced node: try the next candidate
            yield OpCase(how, refused=f"PyTorch: {type(e).__name__}: {first_line(str(e))}")
            continue
        results = list(result) if isinstance(result, (tuple, list)) else [result]
        ok = len(results) == len(node["outputs"]) and all(
            name is None
            or (
                isinstance(r, torch.Tensor)
                and r.dim() == len(shapes[name])
                and DTYPES.get(r.dtype) == dtypes[name]
            )
            for name, r in zip(node["outputs"], results, strict=False)
        )
        if not ok:
            yield OpCase(how, refused="PyTorch's outputs differ in number, rank or dtype")
            continue
        # A zero-element output (batch norm's saved statistics in eval mode) holds nothing to
        # compare: the one-node program keeps it as an intermediate, not an output.
        named = {n: r for n, r in zip(node["outputs"], results, strict=True) if n is not None}
        outputs = {n: r for n, r in named.items() if r.numel() > 0}
        empty = {n: r for n, r in named.items() if r.numel() == 0}
        yield OpCase(
            how,
            document=_one_node_document(node, args, inputs, outputs, dtypes, empty),
            feed={n: to_numpy(t) for n, t in inputs.items()},
            expected={n: to_numpy(t) for n, t in outputs.items()},
            dtypes=dtypes,
            shapes={n: list(t.shape) for n, t in {**inputs, **outputs}.items()},
        )


def _names(node: dict) -> list[str]:
    return list(dict.fromkeys([*_refs(node["args"]), *(o for o in node["outputs"] if o)]))


def _one_node_document(node, args, inputs, outputs, dtypes, empty=None) -> str:
    tensors = [
        {"name": n, "role": role, "dtype": dtypes[n], "shape": list(t.shape)}
        for role, group in (("input", inputs), ("output", outputs), ("intermediate", empty or {}))
        for n, t in group.items()
    ]
    doc = {
        "format": "solar-capture",
        "version": 1,
        "framework": "torch",
        "framework_version": torch.__version__.split("+")[0],
        "capture_method": "per-op",
        "source": None,
        "tensors": tensors,
        "nodes": [
            {"name": node["name"], "op": node["op"], "args": args, "outputs": node["outputs"]}
        ],
        "outputs": list(outputs),
    }
    return json.dumps(doc)
