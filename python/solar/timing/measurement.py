"""Measurement files (no torch or jax here): the times ``solar analyze --measure`` took, written
with ``--measure-out FILE.json`` and read back with ``--measurement FILE.json``, so that a
headroom report can be reproduced, compared across versions or shared without timing the model
again (docs/calibrate.md, "Measurement files").

The document::

    {"format": "solar-measurement", "version": 1,
     "model": "transformer_block.py",            # the model file's name, for the reader
     "device": "cpu-Intel-R-Xeon-R-Processor",   # the device that ran it (--measure's name)
     "method": "wall clock, 3 warm-up runs, ...",  # how each sample was taken
     "samples_s": [0.58, ...],                   # the whole program's samples, seconds
     "nodes": {...} | null}                      # the per-node times (--measured-nodes format)
"""

from __future__ import annotations

import json
import math
import os
from typing import Any

from solar._files import read_json
from solar.timing.clock import Timing

FORMAT = "solar-measurement"
VERSION = 1


def document(timing: Timing, per_node: str | None, model: str) -> dict:
    """The measurement document of a timing and its per-node times (JSON text or None)."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "model": os.path.basename(os.fspath(model)),
        "device": timing.device,
        "method": timing.method,
        "samples_s": list(timing.samples_s),
        "nodes": None if per_node is None else json.loads(per_node),
    }


def write(path: str, timing: Timing, per_node: str | None, model: str) -> None:
    """Writes the measurement document (atomically)."""
    from solar._files import write_atomic

    text = json.dumps(document(timing, per_node, model), indent=1, allow_nan=False) + "\n"
    write_atomic(path, text)


def _field(doc: dict, key: str, kind: type | tuple[type, ...], path: str) -> Any:
    if key not in doc:
        raise ValueError(f"{path}: not a measurement file: no '{key}'")
    value = doc[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ValueError(f"{path}: '{key}' has the wrong type ({type(value).__name__})")
    return value


def load(path: str, model: str) -> tuple[Timing, str | None]:
    """``(timing, per_node)`` of a measurement file of the model file ``model``: the whole
    program's samples and the per-node times document's JSON text (None when the file has none).
    A file that is not one, or one taken of another model file, is a one-line ``ValueError``
    naming it."""
    doc = read_json(path)
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ValueError(f'{path}: not a measurement file (no "format": "{FORMAT}")')
    version = _field(doc, "version", int, path)
    if version != VERSION:
        raise ValueError(f"{path}: measurement file version {version}; this SOLAR reads {VERSION}")
    taken_of = _field(doc, "model", str, path)
    if taken_of != os.path.basename(os.fspath(model)):
        raise ValueError(
            f"{path}: the times were taken of '{taken_of}', not of '{os.path.basename(model)}'"
        )
    device = _field(doc, "device", str, path)
    method = _field(doc, "method", str, path)
    samples = _field(doc, "samples_s", list, path)
    if not samples:
        raise ValueError(f"{path}: 'samples_s' is empty")
    for i, s in enumerate(samples):
        if not isinstance(s, (int, float)) or isinstance(s, bool) or not math.isfinite(s) or s < 0:
            raise ValueError(f"{path}: samples_s[{i}] is not a time in seconds >= 0: {s!r}")
    nodes = doc.get("nodes")
    if nodes is not None and not isinstance(nodes, dict):
        raise ValueError(f"{path}: 'nodes' must be a per-node times document or null")
    per_node = None if nodes is None else json.dumps(nodes, allow_nan=False)
    return Timing([float(s) for s in samples], device, method), per_node
