"""One capture node run by itself in PyTorch on seeded random inputs of its shapes and dtypes
(``run_op``): what the LLM agent's fallback translates one operator against
(``solar.llm.tasks.op_task``, docs/llm.md)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from solar.llm.config import LLMError
from solar.torch._golden import to_numpy
from solar.torch._serialize import DTYPES


@dataclass(frozen=True)
class OpRun:
    """A node's run: its operator's ``schema``, one line per argument given (``name = value``,
    a tensor named by the program input it binds, ``in0``..), the capture tensors ``bound`` to
    those inputs in order with their values (``inputs``), and the outputs the node names
    (``out_names``) with PyTorch's values (``outputs``)."""

    schema: str
    lines: list[str]
    bound: list[str]
    inputs: dict[str, np.ndarray]
    out_names: list[str]
    outputs: list[np.ndarray]


def run_op(document: dict, node: dict, seed: int = 0) -> OpRun:
    """``node`` (of ``document``) run by PyTorch on seeded random inputs: float inputs standard
    normal, integer inputs uniform in 0..3, bool inputs random."""
    op_name = node["op"]
    op = _resolve_op(op_name)
    tensors = {t["name"]: t for t in document["tensors"]}
    torch_dtypes = {v: k for k, v in DTYPES.items()}
    generator = torch.Generator().manual_seed(seed)
    bound: list[str] = []  # capture tensor of in0, in1, ...
    values: dict[str, torch.Tensor] = {}

    def value_of(v: Any) -> Any:
        if isinstance(v, dict) and "tensor" in v:
            name = v["tensor"]
            if name not in values:
                values[name] = _random_tensor(tensors[name], torch_dtypes, generator)
                bound.append(name)
            return values[name]
        if isinstance(v, list):
            return [value_of(x) for x in v]
        if isinstance(v, str) and v in ("inf", "-inf", "nan"):
            return float(v)
        return v

    schema = op._schema
    positional, keywords, lines = [], {}, []
    for arg in schema.arguments:
        if arg.name not in node["args"]:
            continue  # Device, Layout, MemoryFormat: left out of the capture, defaults apply
        raw = node["args"][arg.name]
        value = value_of(raw)
        if "ScalarType" in str(arg.type) and isinstance(raw, str):
            value = torch_dtypes[raw]
        if arg.kwarg_only:
            keywords[arg.name] = value
        else:
            positional.append(value)
        lines.append(f"{arg.name} = {_describe(raw, bound)}")
    with torch.no_grad():
        result = op(*positional, **keywords)
    results = list(result) if isinstance(result, (tuple, list)) else [result]
    out_names = [n for n in node["outputs"] if n is not None]
    out_values = [r for r, n in zip(results, node["outputs"], strict=False) if n is not None]
    if len(out_values) != len(out_names):
        raise LLMError(
            f"{op_name}: returned {len(results)} values for {len(node['outputs'])} outputs"
        )
    return OpRun(
        str(schema),
        lines,
        bound,
        {n: to_numpy(values[n]) for n in bound},
        out_names,
        [to_numpy(v) for v in out_values],
    )


def _resolve_op(name: str) -> Any:
    parts = name.split(".")
    if len(parts) != 3 or parts[0] != "aten":
        raise LLMError(f"'{name}' is not an ATen operator; the fallback translates ATen ops only")
    try:
        return getattr(getattr(torch.ops.aten, parts[1]), parts[2])
    except AttributeError:
        raise LLMError(f"unknown ATen operator '{name}'") from None


def _random_tensor(info: dict, torch_dtypes: dict, generator: Any) -> Any:
    dtype = torch_dtypes[info["dtype"]]
    shape = tuple(info["shape"])
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=generator).to(torch.bool)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=generator, dtype=torch.float32).to(dtype)
    return torch.randint(0, 4, shape, generator=generator, dtype=dtype)


def _describe(raw: Any, bound: list[str]) -> str:
    if isinstance(raw, dict) and "tensor" in raw:
        return f"in{bound.index(raw['tensor'])}"
    if isinstance(raw, list):
        return "[" + ", ".join(_describe(x, bound) for x in raw) + "]"
    return json.dumps(raw)
