"""A JAX program as a capture document (docs/jax.md, docs/capture.md).

``jax.make_jaxpr`` of the jitted function gives a jaxpr; this module walks it into one flat list of
primitive applications: call-like primitives (``jit``, ``custom_jvp_call``, ``custom_vjp_call``,
``remat``, ...) are inlined, ``scan`` is unrolled, ``while`` and ``cond`` are unrolled or resolved
when their trip count or predicate is known at capture time (computed from literals and
constants only), and anything else is a node ``jax.<primitive>`` for the C++ lowering, which
names it as unsupported when it has no rule.
"""

from __future__ import annotations

import enum
import math
import os
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np
from jax._src import source_info_util
from jax.extend import core as jcore

FORMAT = "solar-capture"
VERSION = 1

# JAX dtypes and their SOLAR names (docs/capture.md).
DTYPES = {
    "float64": "f64",
    "float32": "f32",
    "float16": "f16",
    "bfloat16": "bf16",
    "float8_e4m3fn": "f8e4m3",
    "float8_e5m2": "f8e5m2",
    "int64": "i64",
    "int32": "i32",
    "int8": "i8",
    "uint8": "u8",
    "bool": "bool",
}

# Call-like primitives whose body is inlined, and the parameter holding the body.
_INLINE = {
    "jit": "jaxpr",
    "pjit": "jaxpr",
    "closed_call": "call_jaxpr",
    "core_call": "call_jaxpr",
    "custom_jvp_call": "call_jaxpr",
    "custom_vjp_call": "call_jaxpr",
    "custom_vjp_call_jaxpr": "fun_jaxpr",
    "remat": "jaxpr",
    "checkpoint": "jaxpr",
    "custom_lin": None,
}
# Primitives that make or change PRNG keys: their key outputs are dropped with the keys.
_KEY_PRIMITIVES = frozenset(
    {
        "random_seed",
        "random_wrap",
        "random_unwrap",
        "random_split",
        "random_fold_in",
        "random_clone",
    }
)
# Primitives that turn a key into random bits: only a whole jax.random sampler is captured.
_BITS_PRIMITIVES = frozenset({"random_bits", "threefry2x32", "random_gamma_p"})
# Parameters that never change the work (and may print object addresses).
_DROPPED_PARAMS = frozenset({"sharding", "out_sharding", "ctx_mesh", "accumulation_type"})
# Values known at capture time are computed only up to this many elements (they decide loop
# trip counts, branch indices and slice starts; larger values are never needed for that).
_KNOWN_LIMIT = 1 << 12
# The most iterations an unrolled while loop may run.
WHILE_LIMIT = 1 << 16


class CaptureError(ValueError):
    """A JAX program SOLAR cannot capture; the message is one line."""


def dtype_name(dtype: Any) -> str:
    name = np.dtype(dtype).name
    if name not in DTYPES:
        raise CaptureError(f"dtype {name} has no SOLAR dtype (valid: {', '.join(DTYPES)})")
    return DTYPES[name]


@dataclass
class Value:
    """A jaxpr value while flattening: a capture tensor (``name``) or a literal number, and its
    value when it is known at capture time."""

    name: str | None = None
    literal: Any = None
    known: np.ndarray | None = None
    key: bool = False  # a PRNG key, or a uint32 value computed from one: not a tensor


@dataclass
class Leaf:
    """One flattened argument of the captured function: its capture name and role."""

    name: str
    role: str  # "input", "weight" or "buffer"
    value: Any


@dataclass
class Flattened:
    """The capture document and the values of its constants."""

    document: dict
    constants: dict[str, np.ndarray] = field(default_factory=dict)
    leaf_names: list[str | None] = field(default_factory=list)  # None: a key, left out
    draws: Draws | None = None  # the random draws, for the golden run


@dataclass
class Draws:
    """The random draws of a capture and how JAX's golden run records them: ``closed`` is the
    traced jaxpr, ``eqns`` the sampler equations (kept alive: they are matched by identity),
    ``outputs`` the capture names of each draw's outputs, in the order the walk met them (the
    order ``record_draws`` returns their values), ``decisions`` the trip count of each unrolled
    ``while`` and the branch of each ``cond`` (by equation identity, in walk order)."""

    closed: Any
    eqns: list[Any]
    outputs: list[list[str]]
    decisions: dict[int, list[int]] = field(default_factory=dict)


def to_numpy(value: Any) -> np.ndarray:
    """A numpy copy of a JAX or numpy array; bf16 as uint16 bits and f8 as uint8 bits."""
    a = np.array(value)
    name = a.dtype.name
    if name == "bfloat16":
        return a.view(np.uint16)
    if name.startswith("float8"):
        return a.view(np.uint8)
    return a


def _json_number(v: Any) -> Any:
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    f = float(v)
    if math.isnan(f):
        return "nan"
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    return f


def _param(value: Any) -> Any:
    """A jaxpr parameter as JSON (tuples as lists, named tuples and dataclasses as objects, dtypes
    by SOLAR name, enums by name); None for what has no meaning to the lowering."""
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, enum.Enum):  # before int: an IntEnum is named
        return value.name
    if isinstance(value, (int, float, np.integer, np.floating, np.bool_)):
        return _json_number(value)
    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        name = np.dtype(value).name
        return DTYPES.get(name, name)
    if hasattr(value, "_fields"):  # a NamedTuple: ConvDimensionNumbers, ...
        return {k: _param(getattr(value, k)) for k in value._fields}
    if hasattr(value, "__dataclass_fields__"):  # GatherDimensionNumbers, ...
        return {k: _param(getattr(value, k)) for k in value.__dataclass_fields__}
    if isinstance(value, (list, tuple)):
        return [_param(v) for v in value]
    if isinstance(value, np.ndarray):
        return [_param(v) for v in value.tolist()]
    text = str(value)
    return None if " at 0x" in text else text


class _Builder:
    def __init__(self, source: str | None) -> None:
        from solar._names import NameTable

        self.source = os.path.basename(source) if source else None
        self.names = NameTable()
        self.leaf_tensors: list[dict] = []
        self.const_tensors: list[dict] = []
        self.node_tensors: dict[str, dict] = {}
        self.nodes: list[dict] = []
        self.constants: dict[str, np.ndarray] = {}
        self._const_by_id: dict[int, tuple[Any, Value]] = {}
        self.produced: set[str] = set()
        # The jitted call (a `pjit` at the top of the walk) being inlined: every primitive in
        # it comes from that one framework operation (eager JAX runs it as one executable).
        self.origin: dict | None = None
        self._origin_names = NameTable()
        self.wrapper: Any = None  # the jit equation of SOLAR's own jax.jit(fn): no operation
        # The random draws met so far: (sampler equation, output names), in walk order.
        self.draws: list[tuple[Any, list[str]]] = []
        # Per while / cond equation, the trip counts / branch indices the walk took, in order:
        # the golden run replays them to reach the same draws.
        self.decisions: dict[int, list[int]] = {}

    # ---- values -----------------------------------------------------------------------------

    def leaf(self, leaf: Leaf, aval: Any) -> Value:
        if _is_key_like(aval.dtype):
            return Value(key=True)  # a PRNG key (or uint32 key data): no bytes of the model
        name = self.names.take(leaf.name)
        self.leaf_tensors.append(self._tensor(name, leaf.role, aval))
        return Value(name=name)

    def constant(self, array: Any) -> Value:
        key = id(array)
        if key in self._const_by_id:
            return self._const_by_id[key][1]
        if _is_key_like(getattr(array, "dtype", None)):
            v = Value(key=True)
            self._const_by_id[key] = (array, v)
            return v
        a = np.asarray(array)
        if a.ndim == 0 and a.dtype.name in DTYPES:
            v = Value(literal=a.item(), known=a)
        else:
            name = self.names.take("const")
            self.const_tensors.append(self._tensor(name, "constant", a))
            self.constants[name] = to_numpy(a)
            v = Value(name=name, known=a if a.size <= _KNOWN_LIMIT else None)
        self._const_by_id[key] = (array, v)  # the array is kept alive: its id stays unique
        return v

    def _tensor(self, name: str, role: str, aval: Any) -> dict:
        return {
            "name": name,
            "role": role,
            "dtype": dtype_name(aval.dtype),
            "shape": [int(s) for s in aval.shape],
        }

    # ---- nodes ------------------------------------------------------------------------------

    def emit(
        self,
        prim: Any,
        ins: list[Value],
        params: dict,
        out_avals: list[Any],
        location: str | None,
    ) -> list[Value]:
        """One node `jax.<prim>` over `ins`; its output values (known when all inputs are)."""
        outs = self.node(f"jax.{prim.name}", prim.name, ins, params, out_avals, location)
        known = self._evaluate(prim, ins, params, out_avals)
        return [Value(name=o, known=k) for o, k in zip(outs, known, strict=True)]

    def node(
        self,
        op: str,
        stem: str,
        ins: list[Value],
        params: dict,
        out_avals: list[Any],
        location: str | None,
    ) -> list[str]:
        """Appends the node `op` (named after `stem`) over `ins`; its output names."""
        node_name = self.names.take(stem)
        outs = []
        for i, aval in enumerate(out_avals):
            out_name = node_name if i == 0 else self.names.take(f"{node_name}_out{i}")
            self.node_tensors[out_name] = self._tensor(out_name, "intermediate", aval)
            outs.append(out_name)
        args = {}
        for i, v in enumerate(ins):
            if v.name is None or (v.known is not None and v.known.ndim == 0):
                args[f"arg{i}"] = _json_number(v.literal if v.name is None else v.known.item())
            else:
                args[f"arg{i}"] = {"tensor": v.name}
        for key in sorted(params):
            if key in _DROPPED_PARAMS:
                continue
            encoded = _param(params[key])
            if encoded is not None or params[key] is None:
                _flatten_param(key, encoded, args)
        entry = {"name": node_name, "op": op, "args": args, "outputs": outs}
        if location:
            entry["location"] = location
        if self.origin is not None:
            entry["origin"] = dict(self.origin)
        self.nodes.append(entry)
        self.produced.update(outs)
        return outs

    def _evaluate(self, prim: Any, ins: list[Value], params: dict, out_avals: list[Any]) -> list:
        none = [None] * len(out_avals)
        if any(v.known is None for v in ins):
            return none
        if any(math.prod(a.shape) > _KNOWN_LIMIT for a in out_avals):
            return none
        if any(v.known.size > _KNOWN_LIMIT for v in ins):
            return none
        try:
            result = prim.bind(*[v.known for v in ins], **params)
        except Exception:  # noqa: BLE001 - a value we cannot compute is simply not known
            return none
        results = result if prim.multiple_results else [result]
        return [np.asarray(r) for r in results]

    def location(self, eqn: Any) -> str | None:
        """``file:line in function`` of the innermost user frame (the model file when present)."""
        try:
            frames = list(source_info_util.user_frames(eqn.source_info.traceback))
        except Exception:  # noqa: BLE001 - no source information
            return None
        if not frames:
            return None
        if self.source:
            mine = [f for f in frames if os.path.basename(f.file_name) == self.source]
            frames = mine or frames
        f = frames[0]
        return f"{os.path.basename(f.file_name)}:{f.start_line} in {f.function_name}"

    # ---- the walk -----------------------------------------------------------------------------

    def closed(self, closed: Any, ins: list[Value], location: str | None) -> list[Value]:
        """Inlines a ClosedJaxpr (or an open Jaxpr without constants) applied to `ins`."""
        if isinstance(closed, jcore.ClosedJaxpr):
            consts = [self.constant(c) for c in closed.consts]
            return self.walk(closed.jaxpr, consts, ins, location)
        return self.walk(closed, [], ins, location)

    def walk(
        self, jaxpr: Any, consts: list[Value], ins: list[Value], parent: str | None = None
    ) -> list[Value]:
        env: dict[Any, Value] = {}
        if len(ins) != len(jaxpr.invars):
            raise CaptureError(f"jaxpr takes {len(jaxpr.invars)} values, got {len(ins)}")
        for var, v in zip(jaxpr.constvars, consts, strict=True):
            env[var] = v
        for var, v in zip(jaxpr.invars, ins, strict=True):
            env[var] = v

        def read(atom: Any) -> Value:
            if isinstance(atom, jcore.Literal):
                val = np.asarray(atom.val, dtype=atom.aval.dtype)
                return Value(literal=val.item(), known=val)
            return env[atom]

        for eqn in jaxpr.eqns:
            ins_e = [read(a) for a in eqn.invars]
            outs = self.eqn(eqn, ins_e, parent)
            for var, v in zip(eqn.outvars, outs, strict=True):
                env[var] = v
        return [read(a) for a in jaxpr.outvars]

    def eqn(self, eqn: Any, ins: list[Value], parent: str | None) -> list[Value]:
        name = eqn.primitive.name
        loc = self.location(eqn) or parent
        sampler = None if eqn is self.wrapper else _sampler(eqn, ins)
        if sampler is not None:
            return self.draw(eqn, sampler, ins, loc)
        if name in _INLINE and _INLINE[name] in eqn.params:
            if name not in ("jit", "pjit") or self.origin is not None or eqn is self.wrapper:
                return self.closed(eqn.params[_INLINE[name]], ins, loc)
            call = str(eqn.params.get("name") or name)
            self.origin = {"name": self._origin_names.take(call), "op": f"jax.{name}"}
            try:
                return self.closed(eqn.params[_INLINE[name]], ins, loc)
            finally:
                self.origin = None
        if name == "scan":
            return self.scan(eqn, ins, loc)
        if name == "while":
            return self.while_loop(eqn, ins, loc)
        if name == "cond":
            return self.cond(eqn, ins, loc)
        out_dtypes = [v.aval.dtype for v in eqn.outvars]
        if (
            any(v.key for v in ins)
            or any(_is_key(d) for d in out_dtypes)
            or (out_dtypes and all(_is_key_like(d) for d in out_dtypes))
        ):
            return self.key_eqn(eqn, ins, loc)
        params = {k: v for k, v in eqn.params.items() if not _is_jaxpr(v)}
        return self.emit(eqn.primitive, ins, params, [v.aval for v in eqn.outvars], loc)

    def draw(self, eqn: Any, sampler: str, ins: list[Value], loc: str | None) -> list[Value]:
        """A jax.random sampler call: one node `jax.random.<sampler>` whose outputs are random
        draws (their values are JAX's, recorded by the golden run). Its operands other than
        keys (bernoulli's `p`, randint's bounds) are its arguments; keys are left out."""
        for v in eqn.outvars:
            if _is_key_like(v.aval.dtype):
                raise CaptureError(
                    f"{_at(loc)}jax.random.{sampler} returns a PRNG key or uint32 bits, which"
                    " have no SOLAR dtype"
                )
        operands = [v for v in ins if not v.key]
        avals = [v.aval for v in eqn.outvars]
        outs = self.node(f"jax.random.{sampler}", sampler, operands, {}, avals, loc)
        self.draws.append((eqn, outs))
        return [Value(name=o) for o in outs]

    def key_eqn(self, eqn: Any, ins: list[Value], loc: str | None) -> list[Value]:
        """A primitive on PRNG keys: key operations (split, fold_in, wrap, ...), data movement
        of keys and whatever computes uint32 values (fold_in's data) give keys, which are left
        out; a primitive that turns keys into values, outside a jax.random sampler, is not
        supported."""
        name = eqn.primitive.name
        if name in _BITS_PRIMITIVES:
            raise CaptureError(
                f"{_at(loc)}unsupported random primitive 'jax.{name}': SOLAR captures the"
                " samplers of jax.random (normal, uniform, bernoulli, randint, ...) as random"
                ' draws, not raw bits (docs/jax.md, "Random draws")'
            )
        if name not in _KEY_PRIMITIVES and not all(_is_key_like(v.aval.dtype) for v in eqn.outvars):
            raise CaptureError(
                f"{_at(loc)}unsupported use of a PRNG key: 'jax.{name}' computes a"
                f" {_dtype_text(eqn.outvars[0].aval.dtype)} value from a key or uint32 key data;"
                " SOLAR captures keys only as operands of jax.random samplers"
                ' (docs/jax.md, "Random draws")'
            )
        return [Value(key=True) for _ in eqn.outvars]

    def scan(self, eqn: Any, ins: list[Value], loc: str | None) -> list[Value]:
        p = eqn.params
        n_consts, n_carry, length = p["num_consts"], p["num_carry"], p["length"]
        consts, carry, xs = (
            ins[:n_consts],
            ins[n_consts : n_consts + n_carry],
            ins[n_consts + n_carry :],
        )
        x_avals = [v.aval for v in eqn.invars[n_consts + n_carry :]]
        y_avals = [v.aval for v in eqn.outvars[n_carry:]]
        steps = range(length - 1, -1, -1) if p["reverse"] else range(length)
        ys: dict[int, list[Value]] = {}
        for t in steps:
            x_t = [self.index(x, aval, t, loc) for x, aval in zip(xs, x_avals, strict=True)]
            outs = self.closed(p["jaxpr"], consts + carry + x_t, loc)
            carry, ys[t] = outs[:n_carry], outs[n_carry:]
        stacked = [
            self.stack([ys[t][j] for t in range(length)], aval, loc)
            for j, aval in enumerate(y_avals)
        ]
        return carry + stacked

    def index(self, x: Value, aval: Any, t: int, loc: str | None) -> Value:
        """`x[t]` as a slice and a squeeze of its leading dim."""
        if x.key:
            return x
        shape = tuple(aval.shape)
        row = jax.core.ShapedArray((1,) + shape[1:], aval.dtype)
        (piece,) = self.emit(
            jax.lax.slice_p,
            [x],
            {
                "start_indices": (t,) + (0,) * (len(shape) - 1),
                "limit_indices": (t + 1,) + shape[1:],
                "strides": None,
            },
            [row],
            loc,
        )
        out = jax.core.ShapedArray(shape[1:], aval.dtype)
        return self.emit(jax.lax.squeeze_p, [piece], {"dimensions": (0,)}, [out], loc)[0]

    def stack(self, pieces: list[Value], aval: Any, loc: str | None) -> Value:
        """The scan's stacked output `aval` from its per-step pieces."""
        if any(p.key for p in pieces):
            return Value(key=True)
        shape = tuple(aval.shape)
        row = jax.core.ShapedArray((1,) + shape[1:], aval.dtype)
        rows = []
        for piece in pieces:
            params = {
                "shape": row.shape,
                "broadcast_dimensions": tuple(range(1, len(shape))),
                "sharding": None,
            }
            rows += self.emit(jax.lax.broadcast_in_dim_p, [piece], params, [row], loc)
        if not rows:
            raise CaptureError(f"{loc or 'scan'}: a scan of length 0 is not supported")
        return self.emit(jax.lax.concatenate_p, rows, {"dimension": 0}, [aval], loc)[0]

    def while_loop(self, eqn: Any, ins: list[Value], loc: str | None) -> list[Value]:
        p = eqn.params
        cn, bn = p["cond_nconsts"], p["body_nconsts"]
        cond_consts, body_consts, carry = ins[:cn], ins[cn : cn + bn], ins[cn + bn :]
        for trips in range(WHILE_LIMIT + 1):
            (pred,) = self.closed(p["cond_jaxpr"], cond_consts + carry, loc)
            if pred.known is None:
                raise CaptureError(
                    f"{_at(loc)}a while loop whose trip count depends on input data is not"
                    " supported: SOLAR unrolls lax.while_loop / fori_loop only when the trip count"
                    " is known from constants"
                )
            if not bool(pred.known):
                self.decisions.setdefault(id(eqn), []).append(trips)
                return carry
            carry = self.closed(p["body_jaxpr"], body_consts + carry, loc)
        raise CaptureError(f"{_at(loc)}a while loop runs more than {WHILE_LIMIT} iterations")

    def cond(self, eqn: Any, ins: list[Value], loc: str | None) -> list[Value]:
        index, operands = ins[0], ins[1:]
        branches = eqn.params["branches"]
        if index.known is None:
            raise CaptureError(
                f"{_at(loc)}lax.cond / lax.switch with a predicate that depends on"
                " input data is not supported: SOLAR needs a predicate known from constants"
            )
        k = min(max(int(index.known), 0), len(branches) - 1)
        self.decisions.setdefault(id(eqn), []).append(k)
        return self.closed(branches[k], operands, loc)

    # ---- the document -------------------------------------------------------------------------

    def finish(self, outs: list[Value], out_avals: list[Any], framework_version: str) -> Flattened:
        out_names: list[str] = []
        for i, (v, aval) in enumerate(zip(outs, out_avals, strict=True)):
            if v.key:
                raise CaptureError(
                    f"output {i} of the function is a PRNG key or uint32 key data, which has no"
                    " SOLAR dtype (return the values drawn with it)"
                )
            if v.name is None or v.name not in self.produced or v.name in out_names:
                (v,) = self.emit(jax.lax.copy_p, [v], {}, [aval], None)
            out_names.append(v.name)
        live = set(out_names)
        kept = []
        for node in reversed(self.nodes):
            if not any(o in live for o in node["outputs"]):
                continue
            kept.append(node)
            live.update(_tensor_refs(node["args"]))
        kept.reverse()
        tensors = list(self.leaf_tensors)
        tensors += [t for t in self.const_tensors if t["name"] in live]
        for node in kept:
            for o in node["outputs"]:
                t = dict(self.node_tensors[o])
                if o in out_names:
                    t["role"] = "output"
                tensors.append(t)
        document = {
            "format": FORMAT,
            "version": VERSION,
            "framework": "jax",
            "framework_version": framework_version,
            "capture_method": "jax.make_jaxpr",
            "source": self.source,
            "tensors": tensors,
            "nodes": kept,
            "outputs": out_names,
        }
        constants = {k: v for k, v in self.constants.items() if k in live}
        draws = None
        if self.draws:
            draws = Draws(
                None, [e for e, _ in self.draws], [o for _, o in self.draws], self.decisions
            )
        return Flattened(document, constants, draws=draws)


def _is_key(dtype: Any) -> bool:
    """Whether `dtype` is a typed PRNG key dtype (``key<fry>``)."""
    return dtype is not None and jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key)


def _is_key_like(dtype: Any) -> bool:
    """A key dtype, or uint32 (legacy ``PRNGKey`` data; uint32 has no SOLAR dtype)."""
    if dtype is None:
        return False
    return _is_key(dtype) or np.dtype(dtype) == np.uint32


def _dtype_text(dtype: Any) -> str:
    return DTYPES.get(str(dtype), str(dtype))


def _sampler(eqn: Any, ins: list[Value]) -> str | None:
    """The jax.random sampler an equation calls (``normal`` for the ``jit`` named ``_normal``
    that reads a key), or None. jax.random's samplers are jitted functions named after the
    public function with a leading underscore."""
    if eqn.primitive.name not in ("jit", "pjit") or not any(v.key for v in ins):
        return None
    name = str(eqn.params.get("name") or "")
    public = name[1:]
    if not name.startswith("_") or not callable(getattr(jax.random, public, None)):
        return None
    return public


def _at(location: str | None) -> str:
    """``"model.py:3 in f: "`` for an error message, or ``""``."""
    return f"{location}: " if location else ""


def _flatten_param(key: str, value: Any, args: dict) -> None:
    """Stores a parameter under ``key``; a structure is flattened so that every entry is a number,
    string, null or flat list: field ``f`` of an object as ``key.f``, element ``i`` of a list of
    lists as ``key.i`` (docs/jax.md)."""
    if isinstance(value, dict):
        for k, v in value.items():
            _flatten_param(f"{key}.{k}", v, args)
    elif isinstance(value, list) and value and all(isinstance(v, (list, dict)) for v in value):
        for i, v in enumerate(value):
            _flatten_param(f"{key}.{i}", v, args)
    else:
        args[key] = value


def _is_jaxpr(value: Any) -> bool:
    if isinstance(value, (jcore.ClosedJaxpr, jcore.Jaxpr)) or callable(value):
        return True
    if isinstance(value, (list, tuple)):
        return any(_is_jaxpr(v) for v in value)
    return False


def _tensor_refs(value: Any) -> list[str]:
    if isinstance(value, dict):
        if "tensor" in value:
            return [value["tensor"]]
        return [r for v in value.values() for r in _tensor_refs(v)]
    if isinstance(value, list):
        return [r for v in value for r in _tensor_refs(v)]
    return []


def flatten(fn: Any, leaves: list[Leaf], source: str | None) -> Flattened:
    """The capture document of ``fn(*leaf values)`` (fn returns a flat list of arrays)."""
    values = [leaf.value for leaf in leaves]
    try:
        closed = jax.make_jaxpr(jax.jit(fn))(*values)
    except CaptureError:
        raise
    except Exception as e:  # noqa: BLE001 - JAX's tracing errors, shortened to one line
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise CaptureError(f"jax.make_jaxpr failed: {type(e).__name__}: {first}") from e
    builder = _Builder(source)
    eqns = closed.jaxpr.eqns
    if len(eqns) == 1 and eqns[0].primitive.name in ("jit", "pjit"):
        builder.wrapper = eqns[0]
    ins = [builder.leaf(leaf, v.aval) for leaf, v in zip(leaves, closed.jaxpr.invars, strict=True)]
    outs = builder.closed(closed, ins, None)
    out_avals = [v.aval for v in closed.jaxpr.outvars]
    flat = builder.finish(outs, out_avals, jax.__version__)
    flat.leaf_names = [v.name for v in ins]
    if flat.draws is not None:
        flat.draws.closed = closed
    return flat


def record_draws(draws: Draws, values: list[Any]) -> tuple[list[Any], list[Any]]:
    """JAX's run of the captured program on ``values`` (jitted, one run): its outputs, and the
    values of every random draw (``draws.outputs`` order). The jaxpr is evaluated equation by
    equation inside ``jax.jit``: calls, scans, while loops and conds that hold a draw are
    entered the way the capture walked them (a scan unrolled, a while loop run for the trip
    count the capture found, a cond's branch the capture took), every other equation is bound
    as it is, and each sampler equation's outputs are recorded."""
    wanted = {id(e) for e in draws.eqns}
    decisions = {k: iter(v) for k, v in draws.decisions.items()}
    holds: dict[int, bool] = {}

    def has_draw(jaxpr: Any) -> bool:
        inner = jaxpr.jaxpr if isinstance(jaxpr, jcore.ClosedJaxpr) else jaxpr
        if id(inner) not in holds:
            holds[id(inner)] = any(
                id(e) in wanted or any(has_draw(j) for j in _jaxprs(e.params.values()))
                for e in inner.eqns
            )
        return holds[id(inner)]

    def run_closed(closed: Any, args: list[Any], record: list) -> list[Any]:
        if isinstance(closed, jcore.ClosedJaxpr):
            return run(closed.jaxpr, list(closed.consts), args, record)
        return run(closed, [], args, record)

    def run(jaxpr: Any, consts: list[Any], args: list[Any], record: list) -> list[Any]:
        env: dict[Any, Any] = dict(zip(jaxpr.constvars, consts, strict=True))
        env.update(zip(jaxpr.invars, args, strict=True))

        def read(atom: Any) -> Any:
            return atom.val if isinstance(atom, jcore.Literal) else env[atom]

        for eqn in jaxpr.eqns:
            ins = [read(a) for a in eqn.invars]
            name = eqn.primitive.name
            body = eqn.params.get(_INLINE.get(name) or "")
            if id(eqn) in wanted:
                outs = _bind(eqn, ins)
                record.append(outs)
            elif body is not None and has_draw(body):
                outs = run_closed(body, ins, record)
            elif name == "scan" and has_draw(eqn.params["jaxpr"]):
                outs = scan(eqn, ins, record)
            elif name == "while" and has_draw(eqn.params["body_jaxpr"]):
                p = eqn.params
                cn, bn = p["cond_nconsts"], p["body_nconsts"]
                outs = ins[cn + bn :]
                for _ in range(next(decisions[id(eqn)])):
                    outs = run_closed(p["body_jaxpr"], ins[cn : cn + bn] + outs, record)
            elif name == "cond" and any(has_draw(b) for b in eqn.params["branches"]):
                branch = eqn.params["branches"][next(decisions[id(eqn)])]
                outs = run_closed(branch, ins[1:], record)
            else:
                outs = _bind(eqn, ins)
            env.update(zip(eqn.outvars, outs, strict=True))
        return [read(a) for a in jaxpr.outvars]

    def scan(eqn: Any, ins: list[Any], record: list) -> list[Any]:
        p = eqn.params
        n_consts, n_carry, length = p["num_consts"], p["num_carry"], p["length"]
        consts, carry = ins[:n_consts], ins[n_consts : n_consts + n_carry]
        xs = ins[n_consts + n_carry :]
        ys: dict[int, list[Any]] = {}
        for t in range(length - 1, -1, -1) if p["reverse"] else range(length):
            outs = run_closed(p["jaxpr"], consts + carry + [x[t] for x in xs], record)
            carry, ys[t] = outs[:n_carry], outs[n_carry:]
        n_ys = len(eqn.outvars) - n_carry
        return carry + [jax.numpy.stack([ys[t][j] for t in range(length)]) for j in range(n_ys)]

    def program(*args: Any) -> tuple[list[Any], list[Any]]:
        record: list = []
        outs = run_closed(draws.closed, list(args), record)
        return outs, record

    return jax.jit(program)(*values)


def _bind(eqn: Any, ins: list[Any]) -> list[Any]:
    bound = eqn.primitive.get_bind_params(eqn.params)  # older JAX: (subfuns, params)
    subfuns, params = bound if isinstance(bound, tuple) else ((), bound)
    out = eqn.primitive.bind(*subfuns, *ins, **params)
    return list(out) if eqn.primitive.multiple_results else [out]


def _jaxprs(values: Any) -> list[Any]:
    """The jaxprs among equation parameters (nested in lists and tuples)."""
    found = []
    for v in values:
        if isinstance(v, (jcore.ClosedJaxpr, jcore.Jaxpr)):
            found.append(v)
        elif isinstance(v, (list, tuple)):
            found += _jaxprs(v)
    return found
