"""Golden runs over the captured graph itself (docs/capture.md, "Golden data").

The model's own run cannot give what some checks need: the values of intermediate tensors (the
outputs of nodes that were not lowered, which the lowered program reads as inputs), and a dropout
mask that SOLAR's executor reproduces. ``run_graph`` runs the traced FX graph with a
``torch.fx.Interpreter`` on real tensors, records the tensors asked for, and replaces
``aten.native_dropout`` in training mode with the project's deterministic mask
(``deterministic_dropout``), and ``aten.scaled_dot_product_attention`` with ``dropout_p > 0`` with
its math form dropping the attention weights with that mask (``deterministic_sdpa``).
``aten._scaled_mm`` of packed fp4 operands (NVFP4), which the CPU cannot run, runs as its
definition: each operand decoded and multiplied by its block scales, then an f32 product
(``nvfp4_scaled_mm``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

# The golden-ratio step of the deterministic dropout mask (the C++ rule uses the same number).
DROPOUT_STEP = 0.6180339887498949


def dropout_is_random(p: float, train: bool) -> bool:
    """Whether ``native_dropout(x, p, train)`` draws a random mask (0 < p < 1 in training)."""
    return bool(train) and 0.0 < float(p) < 1.0


def deterministic_dropout(x: torch.Tensor, p: float, train: bool) -> tuple[torch.Tensor, Any]:
    """``aten.native_dropout(x, p, train)`` with SOLAR's mask instead of a random one: the
    element of flat row-major index i is kept iff frac((i + 1) * 0.6180339887498949) >= p
    (float64; frac(v) = v - floor(v)); kept elements are scaled by 1 / (1 - p), the others are
    0; the second output is the mask. Without a random mask (p = 0, p = 1, eval) it is the op."""
    if not dropout_is_random(p, train):
        return torch.ops.aten.native_dropout.default(x, p, train)
    keep = _weyl_keep(x.shape, p)
    out = torch.where(keep, x * (1.0 / (1.0 - float(p))), torch.zeros((), dtype=x.dtype))
    return out, keep


def _weyl_keep(shape: torch.Size, p: float) -> torch.Tensor:
    """The deterministic mask over a tensor of ``shape``: flat row-major index i is kept iff
    frac((i + 1) * DROPOUT_STEP) >= p (float64)."""
    v = torch.arange(1, shape.numel() + 1, dtype=torch.float64) * DROPOUT_STEP
    return ((v - torch.floor(v)) >= float(p)).reshape(shape)


_SDPA_ARGS = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")


def deterministic_sdpa(*args: Any, **kwargs: Any) -> torch.Tensor:
    """``aten.scaled_dot_product_attention`` whose attention weights (softmax of the scaled,
    masked scores, shape [..., L, S]) are dropped with the deterministic mask of
    ``deterministic_dropout`` and scaled by 1 / (1 - dropout_p), as the C++ rule lowers it
    (docs/lowering.md). Without dropout it is the op itself."""
    a = dict(zip(_SDPA_ARGS, args, strict=False), **kwargs)
    p = float(a.get("dropout_p") or 0.0)
    if p <= 0.0:
        return torch.ops.aten.scaled_dot_product_attention.default(*args, **kwargs)
    q, k, v = a["query"], a["key"], a["value"]
    if a.get("enable_gqa") and k.shape[-3] != q.shape[-3]:
        k = k.repeat_interleave(q.shape[-3] // k.shape[-3], dim=-3)
        v = v.repeat_interleave(q.shape[-3] // v.shape[-3], dim=-3)
    scale = a.get("scale")
    scale = 1.0 / float(q.shape[-1]) ** 0.5 if scale is None else float(scale)
    scores = (q @ k.transpose(-1, -2)) * scale
    length_q, length_k = q.shape[-2], k.shape[-2]
    if a.get("is_causal"):
        causal = torch.ones(length_q, length_k, dtype=torch.bool).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
    mask = a.get("attn_mask")
    if mask is not None:
        scores = (
            scores.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else scores + mask
        )
    weights = torch.softmax(scores, dim=-1)
    if p >= 1.0:
        weights = torch.zeros_like(weights)
    else:
        keep = _weyl_keep(weights.shape, p)
        weights = torch.where(keep, weights * (1.0 / (1.0 - p)), torch.zeros((), dtype=q.dtype))
    return weights @ v


# The 16 e2m1 values by 4-bit code: sign bit 3, magnitude by the low 3 bits (OCP MX spec, FP4).
_E2M1_MAGNITUDES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
E2M1_VALUES = _E2M1_MAGNITUDES + tuple(-v for v in _E2M1_MAGNITUDES)


def _nvfp4_values(packed: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """The f32 values [R, K] of packed fp4 rows ``packed`` (uint8 [R, K / 2], the low nibble the
    even element) times their e4m3 block scales, one per 16 values along K, in NVFP4's swizzled
    layout: row r and block c at (r // 128 * ceil(K / 64) + c // 4) * 512 + r % 32 * 16
    + r % 128 // 32 * 4 + c % 4 (the rule in src/frontend/rules_linalg.cpp reads the same)."""
    rows, k = packed.shape[0], 2 * packed.shape[1]
    codes = torch.stack([packed & 15, packed >> 4], -1).reshape(rows, k).long()
    values = torch.tensor(E2M1_VALUES, dtype=torch.float32)[codes]
    r = torch.arange(rows)[:, None]
    c = torch.arange(k // 16)[None, :]
    tiles = (k // 16 + 3) // 4
    at = (r // 128 * tiles + c // 4) * 512 + r % 32 * 16 + r % 128 // 32 * 4 + c % 4
    scales = scale.reshape(-1).float()[at]
    return (values.reshape(rows, k // 16, 16) * scales[:, :, None]).reshape(rows, k)


def _bound(op: torch._ops.OpOverload, args: tuple, kwargs: dict) -> dict[str, Any]:
    """The arguments of a call of ``op`` by its schema's names, defaults filled in."""
    bound = {}
    for k, a in enumerate(op._schema.arguments):
        if k < len(args):
            bound[a.name] = args[k]
        elif a.name in kwargs:
            bound[a.name] = kwargs[a.name]
        else:
            bound[a.name] = a.default_value if a.has_default_value() else None
    return bound


def _nvfp4_product(x: Any, w: Any, globals_: list, bias: Any, out_dtype: Any) -> torch.Tensor:
    """``x @ w.T`` of decoded operands in f32, times the global scales, plus ``bias``."""
    y = x @ w.t()
    for g in globals_:
        y = y * g.float().reshape(())
    if bias is not None:
        y = y + bias.float()
    return y.to(out_dtype or torch.bfloat16)


def nvfp4_scaled_mm(*args: Any, **kwargs: Any) -> torch.Tensor:
    """``aten._scaled_mm`` of packed fp4 operands (self [M, K / 2], mat2 [K / 2, N], pairs along
    K) as its definition: both decoded and scaled per block, an f32 product, plus ``bias``, in
    ``out_dtype``."""
    a = _bound(torch.ops.aten._scaled_mm.default, args, kwargs)
    if a["scale_result"] is not None:
        raise ValueError("_scaled_mm of packed fp4 operands with a scale_result")
    x = _nvfp4_values(a["self"].view(torch.uint8), a["scale_a"])
    w = _nvfp4_values(a["mat2"].view(torch.uint8).t(), a["scale_b"])
    return _nvfp4_product(x, w, [], a["bias"], a["out_dtype"])


def nvfp4_scaled_mm_v2(*args: Any, **kwargs: Any) -> torch.Tensor:
    """``aten._scaled_mm_v2`` (``torch.nn.functional.scaled_mm``) of packed fp4 operands with
    NVFP4's recipe (BlockWise1x16, then an optional TensorWise global scale) as its definition:
    ``nvfp4_scaled_mm``'s (torch requires the swizzled layout), the product times the global
    scales."""
    a = _bound(torch.ops.aten._scaled_mm_v2.default, args, kwargs)
    if list(a["recipe_a"][:1]) != [2]:
        raise ValueError(f"_scaled_mm_v2 of packed fp4 operands with recipe {a['recipe_a']}")
    x = _nvfp4_values(a["self"].view(torch.uint8), a["scale_a"][0])
    w = _nvfp4_values(a["mat2"].view(torch.uint8).t(), a["scale_b"][0])
    globals_ = [*a["scale_a"][1:], *a["scale_b"][1:]]
    return _nvfp4_product(x, w, globals_, a["bias"], a["out_dtype"])


_FP4_PRODUCTS = {
    torch.ops.aten._scaled_mm.default: nvfp4_scaled_mm,
    torch.ops.aten._scaled_mm_v2.default: nvfp4_scaled_mm_v2,
}


def _fp4_scaled_mm(node: torch.fx.Node) -> bool:
    return node.target in _FP4_PRODUCTS and any(
        isinstance(a, torch.fx.Node) and a.meta["val"].dtype == torch.float4_e2m1fn_x2
        for a in node.args[:2]
    )


def has_fp4_products(graph: torch.fx.Graph) -> bool:
    """Whether the graph multiplies packed fp4 operands (``_scaled_mm``), which the CPU cannot:
    the golden run then runs the graph with ``nvfp4_scaled_mm`` in their place."""
    return any(node.op == "call_function" and _fp4_scaled_mm(node) for node in graph.nodes)


def _random_target(node: torch.fx.Node) -> bool:
    """Whether an FX node draws a random mask that SOLAR's lowering makes deterministic."""
    if node.op != "call_function":
        return False
    if node.target is torch.ops.aten.native_dropout.default:
        p = node.args[1] if len(node.args) > 1 else node.kwargs.get("p")
        train = node.args[2] if len(node.args) > 2 else node.kwargs.get("train")
        return train is None or dropout_is_random(p, train)
    if node.target is torch.ops.aten.scaled_dot_product_attention.default:
        p = node.args[4] if len(node.args) > 4 else node.kwargs.get("dropout_p", 0.0)
        return not isinstance(p, (int, float)) or float(p) > 0.0
    return False


def has_random_dropout(graph: torch.fx.Graph) -> bool:
    """Whether the graph draws a dropout mask (native_dropout in training with 0 < p < 1, or
    attention with dropout_p > 0)."""
    return any(_random_target(node) for node in graph.nodes)


class _Recorder(torch.fx.Interpreter):
    """Runs a graph, keeping the value of every node named in ``keep`` (FX names)."""

    def __init__(self, module: torch.fx.GraphModule, keep: set[str]) -> None:
        super().__init__(module, garbage_collect_values=True)
        self.keep = keep
        self.values: dict[str, Any] = {}

    def run_node(self, n: torch.fx.Node) -> Any:
        if n.op == "call_function" and n.target is torch.ops.aten.native_dropout.default:
            args, kwargs = self.fetch_args_kwargs_from_env(n)
            bound = dict(zip(("input", "p", "train"), args, strict=False), **kwargs)
            result = deterministic_dropout(bound["input"], bound["p"], bound["train"])
        elif (
            n.op == "call_function"
            and n.target is torch.ops.aten.scaled_dot_product_attention.default
        ):
            args, kwargs = self.fetch_args_kwargs_from_env(n)
            result = deterministic_sdpa(*args, **kwargs)
        elif n.op == "call_function" and _fp4_scaled_mm(n):
            args, kwargs = self.fetch_args_kwargs_from_env(n)
            result = _FP4_PRODUCTS[n.target](*args, **kwargs)
        else:
            result = super().run_node(n)
        if n.name in self.keep:
            self.values[n.name] = result
        return result


def run_graph(module: torch.fx.GraphModule, args: list[Any], keep: set[str]) -> dict[str, Any]:
    """Runs ``module``'s graph on ``args`` (one per placeholder, in order) without autograd and
    returns the values of the FX nodes named in ``keep``."""
    recorder = _Recorder(module, keep)
    with torch.no_grad():
        recorder.run(*args)
    return recorder.values


def to_numpy(t: torch.Tensor) -> np.ndarray:
    """A numpy copy of a tensor; bf16 as uint16 bits, f8 and packed fp4 as uint8 bits (npz.h)."""
    t = t.detach().to("cpu")
    if t.dtype in (torch.float8_e4m3fn, torch.float8_e5m2, torch.float4_e2m1fn_x2):
        # (as bytes first: torch has no copy for packed fp4, so no .contiguous() of a view of it)
        return t.view(torch.uint8).contiguous().numpy().copy()
    t = t.contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np.uint16).copy()
    return t.numpy().copy()
