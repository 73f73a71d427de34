"""The PyTorch frontend, end to end: capture -> lower (C++) -> verify -> SOL report (C++).

Thin glue (docs/capture.md): capture is in ``solar.capture``; lowering, execution and analysis
are the C++ core's (``_core.lower_capture``, ``solar.run``, the ``sol`` command). torch is
imported only when a function here is called.

- ``analyze(model, example_inputs, hw="H100-SXM")``: a ``Report`` for ``model(*example_inputs)``.
- ``analyze_file(path, hw=...)``: the same for a benchmark-style model file.

Verification runs the lowered IR on the same inputs as PyTorch and compares every graph output
with PyTorch's, elementwise: ``|solar - torch| <= atol * max(1, max|torch|) + rtol * |torch|``,
with (rtol, atol) from ``TOLERANCES`` by the output's dtype (integers and bool: exact).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import solar
from solar import _core

DEFAULT_HW = "H100-SXM"

# (rtol, atol) per dtype. PyTorch computes in the dtype, SOLAR's executor in double and rounds
# once per store, so the difference is PyTorch's rounding: a few ulps times a reduction's depth.
TOLERANCES = {
    "f64": (1e-9, 1e-12),
    "f32": (1e-4, 1e-5),
    "f16": (1e-2, 1e-3),
    "bf16": (2e-2, 1e-2),
    "f8e4m3": (1.25e-1, 1e-1),
    "f8e5m2": (2.5e-1, 1e-1),
}


class AnalysisError(ValueError):
    """A user error in analysis: a model that cannot be captured, an op with no lowering, an
    unknown device. The message is one line."""


@dataclass
class Report:
    """The SOL report of a captured model: the ``sol`` command's JSON report (docs/report.md)
    with two more sections, ``capture`` and ``verification``."""

    data: dict
    table: str = ""  # the ``sol`` command's terminal table
    ir: str = ""  # the lowered program
    capture_json: str = ""
    golden: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    @property
    def verification(self) -> dict:
        return self.data["verification"]

    def to_json(self) -> str:
        return json.dumps(self.data, sort_keys=True, indent=2, allow_nan=False) + "\n"

    def summary(self) -> str:
        v = self.verification
        lines = [f"verification: {v['status']} ({v['mode']}; {v['detail']})"]
        for out in v["outputs"]:
            errors = out.get("error") or (
                f"max_abs_err={out['max_abs_err']:.3g} max_rel_err={out['max_rel_err']:.3g}"
            )
            verdict = "ok" if out["passed"] else "MISMATCH"
            lines.append(
                f"  {out['name']}: {out['dtype']}{out['shape']} {errors}"
                f" rtol={out['rtol']:g} atol={out['atol']:g} {verdict}"
            )
        return "\n".join(lines) + "\n" + self.table


def has_lowering() -> bool:
    """Whether this build of the core can lower captures (``_core.lower_capture``)."""
    return hasattr(_core, "lower_capture")


def lower(capture_json: str) -> str:
    """The IR program of a capture document (C++: ``_core.lower_capture``)."""
    if not has_lowering():
        raise AnalysisError("this build of solar has no lowering (solar._core.lower_capture)")
    return _core.lower_capture(capture_json)


def analyze(
    model: Any,
    example_inputs: Any,
    hw: str = DEFAULT_HW,
    policy: str | None = None,
    source: str | None = None,
) -> Report:
    """Captures ``model(*example_inputs)``, lowers it, verifies it against PyTorch on the same
    inputs and returns its SOL report on device ``hw``. ``model`` is an nn.Module or a function
    of tensors; the inputs must be real tensors (PyTorch runs once, for the golden outputs)."""
    from solar.capture import capture

    inputs = (
        tuple(example_inputs) if isinstance(example_inputs, (list, tuple)) else (example_inputs,)
    )
    cap = capture(model, inputs, source=source)
    golden = cap.golden(model, inputs)
    return analyze_capture(cap, golden, hw, policy)


def analyze_file(
    path: str | os.PathLike, hw: str = DEFAULT_HW, policy: str | None = None
) -> Report:
    """``analyze`` on a benchmark-style model file (``Model``, ``get_inputs``,
    ``get_init_inputs``), built after ``torch.manual_seed(0)``."""
    from solar.capture import load_model_file

    model, inputs = load_model_file(path)
    return analyze(model, inputs, hw=hw, policy=policy, source=os.path.basename(path))


def verify(ir_text: str, document: dict, golden: dict[str, np.ndarray]) -> dict:
    """Runs the lowered program on the golden inputs and compares each output with PyTorch's."""
    program = solar.parse(ir_text)
    feed = {}
    for name, role, _dtype in program.tensors:
        if role in ("input", "weight"):
            if name not in golden:
                raise AnalysisError(f"the lowered program's {role} '{name}' is not in the capture")
            feed[name] = golden[name]
    got = solar.run(program, feed)
    dtypes = {t["name"]: t["dtype"] for t in document["tensors"]}
    outputs = []
    for name in document["outputs"]:
        expected = golden[name]
        dtype = dtypes[name]
        if name not in got:
            raise AnalysisError(f"the lowered program has no output '{name}'")
        outputs.append(compare_output(name, dtype, np.asarray(got[name]), expected))
    passed = all(o["passed"] for o in outputs)
    return {
        "status": "passed" if passed else "failed",
        "mode": "whole_program",
        "detail": f"{len(outputs)} output(s) compared with PyTorch on the same inputs",
        "outputs": outputs,
    }


def compare_output(name: str, dtype: str, got: np.ndarray, expected: np.ndarray) -> dict:
    """One output of SOLAR's run against the framework's, with ``TOLERANCES[dtype]``: a dict
    with name, dtype, shape, rtol, atol, max_abs_err, max_rel_err, passed (and error)."""
    rtol, atol = TOLERANCES.get(dtype, (0.0, 0.0))
    entry = {"name": name, "dtype": dtype, "shape": list(expected.shape), "rtol": rtol}
    if got.shape != expected.shape:
        entry.update(atol=atol, max_abs_err=None, max_rel_err=None, passed=False)
        entry["error"] = f"shape {list(got.shape)} != {list(expected.shape)}"
        return entry
    g, e = _as_float(got, dtype), _as_float(expected, dtype)
    scale = max(1.0, float(np.max(np.abs(e[np.isfinite(e)]), initial=0.0)))
    diff = np.abs(g - e)
    same = (g == e) | (np.isnan(g) & np.isnan(e))  # equal infinities and NaNs agree
    diff = np.where(same, 0.0, diff)
    ok = same | (diff <= atol * scale + rtol * np.abs(e))
    rel = diff / np.maximum(np.abs(e), np.finfo(np.float64).tiny)
    entry.update(
        atol=atol,
        max_abs_err=float(np.max(diff, initial=0.0)),
        max_rel_err=float(np.max(np.where(same, 0.0, rel), initial=0.0)),
        passed=bool(np.all(ok)),
    )
    return entry


def _as_float(a: np.ndarray, dtype: str) -> np.ndarray:
    """Values as float64; bf16/f8 given as raw bits (or ml_dtypes) are decoded through torch."""
    if dtype in ("bf16", "f8e4m3", "f8e5m2"):
        import torch

        torch_dtype = {
            "bf16": torch.bfloat16,
            "f8e4m3": torch.float8_e4m3fn,
            "f8e5m2": torch.float8_e5m2,
        }[dtype]
        bits = np.ascontiguousarray(a).view(np.uint16 if dtype == "bf16" else np.uint8)
        raw = torch.from_numpy(bits.astype(np.int16) if dtype == "bf16" else bits)
        return raw.view(torch_dtype).to(torch.float64).numpy()
    return a.astype(np.float64)


def analyze_capture(cap: Any, golden: dict[str, np.ndarray], hw: str, policy: str | None) -> Report:
    """Lower, verify and analyse a capture (any framework): ``cap`` has ``.document`` (the
    capture document, docs/capture.md) and ``.to_json()``; ``golden`` maps every input, weight
    and output name to its value."""
    capture_json = cap.to_json()
    ir_text = lower(capture_json)
    verification = verify(ir_text, cap.document, golden)
    status = f"{verification['status']}: whole program, {verification['detail']}"
    data, table = sol_report(
        ir_text, hw, policy, verification=status, source=cap.document.get("source")
    )
    data["capture"] = {
        "framework": cap.document["framework"],
        "framework_version": cap.document["framework_version"],
        "method": cap.document["capture_method"],
        "source": cap.document["source"],
    }
    data["verification"] = verification
    return Report(data, table=table, ir=ir_text, capture_json=capture_json, golden=golden)


def sol_report(
    ir_text: str,
    hw: str,
    policy: str | None = None,
    verification: str | None = None,
    source: str | None = None,
) -> tuple[dict, str]:
    """The ``sol`` command's JSON report and terminal table for an IR program. ``verification``
    (e.g. "passed: whole program, ...") and ``source`` (the model file's name) replace the
    report's "not verified" line and the temporary IR file's name; no temporary path is shown."""
    with tempfile.TemporaryDirectory(prefix="solar-") as tmp:
        ir_path = os.path.join(tmp, "program.ir")
        json_path = os.path.join(tmp, "report.json")
        with open(ir_path, "w") as f:
            f.write(ir_text)
        args = ["sol", ir_path, "--hw", hw, "--json", json_path]
        if policy:
            args += ["--policy", policy]
        if verification:
            args += ["--verification-status", verification]
        if source:
            args += ["--source-name", source]
        rc, out, err = run_cli_captured(args)
        if rc != 0:
            message = err.strip().splitlines()[0] if err.strip() else f"sol exited {rc}"
            raise AnalysisError(message.removeprefix("solar: error: ").replace(ir_path, "<ir>"))
        with open(json_path) as f:
            data = json.load(f)
    out = out.removesuffix(f"\nwrote {json_path}\n")  # the temporary file: never shown
    return data, out.replace(ir_path, "<ir>")


def run_cli_captured(args: list[str]) -> tuple[int, str, str]:
    """``_core.run_cli(args)`` with its stdout and stderr captured (run_cli writes them to
    ``sys.stdout`` / ``sys.stderr`` when the command is done)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = _core.run_cli(args)
    return rc, out.getvalue(), err.getvalue()
