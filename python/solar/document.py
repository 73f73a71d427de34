"""Capture documents (docs/capture.md), framework-free: no torch or jax here.

Every frontend produces the same document (tensors, nodes, outputs, framework, capture method);
this module holds what is the same for all of them:

- ``to_json(document)``: the document as text, one tensor and one node per line, keys in a fixed
  order (the same document gives the same bytes);
- ``graph_bytes(document)``: the bytes of every tensor (what a whole-program run holds, at most);
- ``capture_section(document)``: the report's ``capture`` section (docs/report.md);
- ``write_npz(path, arrays)``: golden data as an uncompressed ``.npz`` with deterministic bytes.
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from typing import Any

import numpy as np

from solar._files import write_atomic

# Bytes per element of each capture dtype (docs/capture.md).
ELEMENT_BYTES = {
    "f64": 8,
    "f32": 4,
    "f16": 2,
    "bf16": 2,
    "f8e4m3": 1,
    "f8e5m2": 1,
    "i64": 8,
    "i32": 4,
    "i8": 1,
    "u8": 1,
    "f4e2m1x2": 1,  # a packed pair of fp4 values
    "bool": 1,
    "c64": 8,  # a (real, imaginary) pair of f32
    "c128": 16,
}

# The frameworks' names as reports print them.
FRAMEWORK_NAMES = {"torch": "PyTorch", "jax": "JAX"}


def to_json(document: dict) -> str:
    """The document as text: its other keys first (in the document's order), then one tensor
    and one node per line, then the outputs; the same document gives the same bytes."""
    head = {k: v for k, v in document.items() if k not in ("tensors", "nodes", "outputs")}
    lines = ["{"]
    for key, value in head.items():
        lines.append(f"  {_dumps(key)}: {_dumps(value)},")
    for key in ("tensors", "nodes"):
        items = document[key]
        lines.append(f'  "{key}": [')
        lines.extend(
            f"    {_dumps(item)}{',' if i + 1 < len(items) else ''}" for i, item in enumerate(items)
        )
        lines.append("  ],")
    lines.append(f'  "outputs": {_dumps(document["outputs"])}')
    lines.append("}")
    return "\n".join(lines) + "\n"


def graph_bytes(document: dict, float_bytes: int | None = None) -> int:
    """The bytes of every tensor of a capture: what a whole-program run holds, at most
    (``float_bytes``: each real floating-point element at that size instead, as the capture
    made float64 holds them)."""
    total = 0
    for t in document["tensors"]:
        n = 1
        for s in t["shape"]:
            n *= s
        size = ELEMENT_BYTES[t["dtype"]]
        if float_bytes is not None and t["dtype"] in REAL_FLOATS:
            size = float_bytes
        total += n * size
    return total


# The real floating-point dtypes, from the most precise to the least (by unit roundoff: f16
# before bf16).
REAL_FLOATS = ("f64", "f32", "f16", "bf16", "f8e4m3", "f8e5m2")


def framework_name(document: dict) -> str:
    """``PyTorch`` or ``JAX`` (another framework: its document name)."""
    framework = document.get("framework", "")
    return FRAMEWORK_NAMES.get(framework, framework)


def capture_section(document: dict, method: str | None = None) -> dict:
    """The report's ``capture`` section of a capture document (``method``: another than the
    document's, e.g. "llm")."""
    return {
        "framework": document["framework"],
        "framework_version": document.get("framework_version"),
        "method": method or document["capture_method"],
        "source": document.get("source"),
    }


def write_npz(path: str | os.PathLike, arrays: dict[str, np.ndarray]) -> None:
    """Writes an uncompressed .npz atomically, with deterministic bytes (sorted members, fixed
    timestamps)."""
    path = os.fspath(path)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as zf:
        for name in sorted(arrays):
            member = io.BytesIO()
            np.lib.format.write_array(
                member, np.ascontiguousarray(arrays[name]), allow_pickle=False
            )
            zf.writestr(
                zipfile.ZipInfo(name + ".npy", date_time=(1980, 1, 1, 0, 0, 0)), member.getvalue()
            )
    write_atomic(path, buffer.getvalue())


def _dumps(value: Any) -> str:
    return json.dumps(value, allow_nan=False, ensure_ascii=True)


def format_bytes(n: float) -> str:
    """Bytes in decimal units, 4 significant digits: ``8.389 MB``, ``2.199 TB``."""
    for unit, scale in (("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.4g} {unit}"
    return f"{int(n)} B"
