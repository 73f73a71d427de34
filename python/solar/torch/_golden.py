"""Golden runs over the captured graph itself (docs/capture.md, "Golden data").

The model's own run cannot give what some checks need: the values of intermediate tensors (the
outputs of nodes that were not lowered, which the lowered program reads as inputs), and a dropout
mask that SOLAR's executor reproduces. ``run_graph`` runs the traced FX graph with a
``torch.fx.Interpreter`` on real tensors, records the tensors asked for, and replaces
``aten.native_dropout`` in training mode with the project's deterministic mask
(``deterministic_dropout``), and ``aten.scaled_dot_product_attention`` with ``dropout_p > 0`` with
its math form dropping the attention weights with that mask (``deterministic_sdpa``).
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
    t = t.detach().to("cpu").contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np.uint16).copy()
    if t.dtype in (torch.float8_e4m3fn, torch.float8_e5m2, torch.float4_e2m1fn_x2):
        return t.view(torch.uint8).numpy().copy()
    return t.numpy().copy()
