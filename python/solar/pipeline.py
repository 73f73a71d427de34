"""The framework-free engine calls of one analysis (docs/architecture.md): lowering
(``lower_detailed``), the whole-program check (``verify``) and its float64 recheck, the choice
of verification mode, the SOL report (``sol_report``) and ``Report``. No torch or jax here; the
sequence of the stages is ``solar.stages.run``, the only place it is written.

Lowering, execution, comparison and analysis are the C++ core's
(``_core.lower_capture_detailed``, ``solar.ir.run``, ``_core.compare_output``, ``_core.analyze``).

Verification compares outputs elementwise: ``|solar - framework| <= atol * max(1,
max|framework|) + rtol * |framework|``, with (rtol, atol) from ``TOLERANCES`` by the output's
dtype (integers and bool: exact).
"""

from __future__ import annotations

import contextlib
import io
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from solar import _core, ir
from solar.document import REAL_FLOATS, framework_name, graph_bytes
from solar.options import (
    AnalysisError,
)

# Conservative rates of SOLAR's reference executor, for the estimate of its time
# (``executor_seconds``), per kind of work as the einsum counts split it, each at most the
# slowest figure measured on one core of a loaded machine (bench/README.md, "Verification
# time"): multiply-adds (matmuls, convolutions, transposed convolutions: the GEMM fast path),
# the other ops (elementwise, reductions, selects: the interpreter), and the bytes each op reads
# and writes.
EXECUTOR_MACS_PER_S = 1e8
EXECUTOR_OPS_PER_S = 5e7
EXECUTOR_BYTES_PER_S = 5e8
# The stages of one analysis, in order, as ``stage_times`` names them (seconds each).
STAGES = ("capture", "lowering", "verification", "analysis")

# (rtol, atol) per dtype, from the C++ oracle's one table (exec/verify.h). The framework computes
# in the dtype, SOLAR's executor in double and rounds once per store, so the difference is the
# framework's rounding: a few ulps times a reduction's depth.
TOLERANCES = {d: _core.tolerance(d) for d in ("f64", "f32", "f16", "bf16", "f8e4m3", "f8e5m2")}

__all__ = [
    "STAGES",
    "TOLERANCES",
    "AnalysisError",
    "GoldenUnavailableError",
    "AgentReport",
    "Float64UnavailableError",
    "Report",
    "analyze",
    "compare_output",
    "lower",
    "lower_detailed",
    "executor_seconds",
    "sol_report",
    "verify",
]


class GoldenUnavailableError(Exception):
    """Raised by a capture's golden function when its framework cannot record a tensor the
    verification needs (e.g. an intermediate of JAX's jitted run); the verification is then
    "not_run" with the message as its reason."""


class Float64UnavailableError(Exception):
    """Raised by ``Captured.in_float64`` when the program cannot be rebuilt in float64 (the
    message says why; the float64 recheck is then "not_possible")."""


@dataclass
class Report:
    """The SOL report of a captured model: the ``sol`` command's JSON report (docs/report.md)
    with three more sections, ``capture``, ``coverage`` and ``verification``."""

    data: dict
    table: str = ""  # the ``sol`` command's terminal table
    ir: str = ""  # the lowered program
    capture_json: str = ""
    golden: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    core: Any = field(default=None, repr=False)  # the _core.Report: its other outputs

    @property
    def verification(self) -> dict:
        return self.data["verification"]

    @property
    def coverage(self) -> dict:
        return self.data["coverage"]

    def to_json(self) -> str:
        return json.dumps(self.data, sort_keys=True, indent=2, allow_nan=False) + "\n"

    def summary(self, details: bool = False) -> str:
        """The terminal report (``_core.Report.render``): the unsupported operators, then the
        table with the verification's status line in its header; ``details`` (``--details``):
        every per-op check and per-node note, as the JSON lists them."""
        if details and self.core is not None:
            return self.core.render(details=True)
        return self.table

    def write_outputs(self, outputs: Sequence[tuple[str, str]]) -> None:
        """Writes ``[(kind, path), ...]`` (kind: html, trace, csv, dot), all or none."""
        if outputs:
            self.core.write(list(outputs))


def format_bytes(n: float) -> str:
    """Bytes in decimal units, 4 significant digits: ``8.389 MB``, ``2.199 TB``."""
    for unit, scale in (("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.4g} {unit}"
    return f"{int(n)} B"


@contextlib.contextmanager
def timed(stage_times: dict[str, float] | None, stage: str):
    """Adds the wall-clock seconds of the ``with`` block to ``stage_times[stage]`` (nothing
    when ``stage_times`` is None), also when the block raises."""
    start = time.perf_counter()
    try:
        yield
    finally:
        if stage_times is not None:
            stage_times[stage] = stage_times.get(stage, 0.0) + (time.perf_counter() - start)


def has_lowering() -> bool:
    """Whether this build of the core can lower captures (``_core.lower_capture``)."""
    return hasattr(_core, "lower_capture")


def lower(capture_json: str) -> str:
    """The IR program of a capture document (C++: ``_core.lower_capture``)."""
    if not has_lowering():
        raise AnalysisError("this build of solar has no lowering (solar._core.lower_capture)")
    return _core.lower_capture(capture_json)


def lower_detailed(
    capture_json: str, allow_unsupported: bool = False, disabled_rules: Sequence[str] = ()
) -> Any:
    """``_core.lower_capture_detailed``: a ``_core.LoweringResult`` (``ir``, ``program``,
    ``unsupported``: [{node, op, location, reason, index, inputs, outputs, output_bytes}],
    ``random``, ``coverage``, ``nodes``, ``lowered``, ``tensor_phases``, ...)."""
    if not has_lowering():
        raise AnalysisError("this build of solar has no lowering (solar._core.lower_capture)")
    return _core.lower_capture_detailed(capture_json, allow_unsupported, list(disabled_rules))


def fed_outputs(lowering: Any) -> list[str]:
    """The outputs of nodes without a rule (``lowering``: a ``_core.LoweringResult``): the
    program reads them as inputs, fed from the framework's run."""
    return [o for u in lowering.unsupported for o in u["outputs"]]


def verify(
    ir_text: Any,
    document: dict,
    golden: dict[str, np.ndarray],
    lowering: Any = None,
    ties: dict[str, dict] | None = None,
    values: dict[str, np.ndarray] | None = None,
) -> dict:
    """Runs the lowered program on the golden inputs and compares each output with the
    framework's (``values``, when given, gains SOLAR's value of each compared output).
    ``lowering``: the ``_core.LoweringResult`` of ``ir_text`` (None: nothing fed, no draws):
    the outputs of nodes that were not lowered (``fed_outputs``) are read from ``golden`` as
    program inputs (graph outputs among them are not compared), and each ``random`` tensor
    takes the framework's draw, the golden value of its ``value_of``. ``ties``: the document's
    topk indices (``topk_indices``, found once by the caller, which records their keys in
    ``golden``), accepted up to ties (None: none)."""
    program = ir.parse(ir_text)
    fed = fed_outputs(lowering) if lowering is not None else []
    random = lowering.random if lowering is not None else []
    draws = {d["tensor"]: d["value_of"] for d in random}
    feed = {}
    for name, role, _dtype in program.tensors:
        if role == "random":
            if draws.get(name) not in golden:
                raise AnalysisError(
                    f"the random draw '{name}' has no value from the framework's run (its values "
                    "are the framework's: the golden run must record them)"
                )
            feed[name] = golden[draws[name]]
        elif role in ("input", "weight"):
            if name not in golden and name in fed:
                raise AnalysisError(
                    f"'{name}', an output of an unsupported node, has no golden value (the "
                    "framework's run must record it to verify the rest of the program)"
                )
            if name not in golden:
                raise AnalysisError(f"the lowered program's {role} '{name}' is not in the capture")
            feed[name] = golden[name]
    got = ir.run(program, feed)
    dtypes = {t["name"]: t["dtype"] for t in document["tensors"]}
    lowest = lowest_precision_computed(document)
    ties = ties or {}
    outputs = []
    not_compared = []
    for name in document["outputs"]:
        if name in fed:
            not_compared.append(name)
            continue
        if name not in got:
            raise AnalysisError(f"the lowered program has no output '{name}'")
        low = lowest.get(name)
        tol = dict(zip(("rtol", "atol"), TOLERANCES[low], strict=True)) if low else {}
        compared = compare_output(name, dtypes[name], np.asarray(got[name]), golden[name], **tol)
        if not compared["passed"] and name in ties:
            _accept_tied_indices(compared, ties[name], np.asarray(got[name]), golden)
        outputs.append(compared)
        if values is not None:
            values[name] = np.asarray(got[name])
    passed = all(o["passed"] for o in outputs)
    framework = framework_name(document)
    detail = f"{len(outputs)} output(s) compared with {framework} on the same inputs"
    through = [
        f"{o['name']} {o['dtype']} through {lowest[o['name']]}"
        for o in outputs
        if o["name"] in lowest
    ]
    if through:
        detail += (
            f"; {len(through)} compared at the tolerance of a lower precision they were "
            f"computed in ({_listed(through)})"
        )
    failed = [o for o in outputs if not o["passed"]]
    if failed:
        detail += (
            f"; {len(failed)} outside the tolerance: {_listed([_failed_output(o) for o in failed])}"
        )
    tied = [o["name"] for o in outputs if o.get("tied_indices")]
    if tied:
        detail += (
            f"; verified up to ties in topk ({', '.join(tied)}: equal keys picked in another order)"
        )
    if draws:
        detail += f"; the {len(draws)} random draw(s) take {framework}'s values from the same run"
    if fed:
        detail += (
            f"; the {len(fed)} output(s) of unsupported nodes were fed from {framework}'s run"
            + (
                f" ({len(not_compared)} graph output(s) among them not compared)"
                if not_compared
                else ""
            )
        )
    return {
        "status": "passed" if passed else "failed",
        "mode": "whole_program",
        "detail": detail,
        "outputs": outputs,
        "not_compared": not_compared,
    }


def lowest_precision_computed(document: dict) -> dict[str, str]:
    """Per graph output: the least precise float dtype that a value it is computed from was
    computed in, where that is less precise than the output's own dtype (outputs not listed:
    their own). A float32 state computed from bf16 products differs between two correct runs
    by bf16's rounding, not float32's: the framework rounds each bf16 op, SOLAR's executor
    once per store, so such an output is compared with that dtype's tolerance."""
    dtype = {t["name"]: t["dtype"] for t in document["tensors"]}
    rank = {d: i for i, d in enumerate(REAL_FLOATS)}
    # One pass in graph order (nodes come after the values they read): each computed value's
    # least precise float along the way, its own dtype included; inputs and weights count not.
    worst: dict[str, str | None] = {}
    for node in document.get("nodes", []):
        reads = [worst[r] for r in _tensor_args(node.get("args")) if r in worst]
        for out in node.get("outputs") or []:
            if out:
                floats = [d for d in (dtype.get(out), *reads) if d in rank]
                worst[out] = max(floats, key=rank.__getitem__, default=None)
    return {
        out: worst[out]
        for out in document["outputs"]
        if dtype.get(out) in rank and worst.get(out) not in (None, dtype[out])
    }


def _tensor_args(args: Any) -> Any:
    """The tensor names an op's arguments read (``{"tensor": name}`` at any depth)."""
    if isinstance(args, dict):
        if isinstance(args.get("tensor"), str):
            yield args["tensor"]
            return
        for value in args.values():
            yield from _tensor_args(value)
    elif isinstance(args, list):
        for value in args:
            yield from _tensor_args(value)


def topk_indices(document: dict) -> dict[str, dict]:
    """The graph outputs that are a topk's indices, by name: {"keys": the tensor ranked, "dim"}.
    PyTorch leaves the order of equal keys unspecified (SOLAR's rule keeps position order)."""
    found = {}
    for node in document.get("nodes", []):
        outs = node.get("outputs", [])
        if node.get("op") == "aten.topk.default" and len(outs) == 2 and outs[1]:
            found[outs[1]] = {"keys": node["args"]["self"]["tensor"], "dim": node["args"]["dim"]}
    return {n: found[n] for n in document["outputs"] if n in found}


def _accept_tied_indices(compared: dict, topk: dict, got: np.ndarray, golden: dict) -> None:
    """A topk's indices that differ from the framework's pass when every index is a valid pick
    among ties: each row's indices are distinct and the keys they select equal, rank by rank
    and exactly, the keys the framework's indices select. Marks ``compared`` passed with
    ``tied_indices`` (how many indices differ); leaves it failed otherwise."""
    keys = golden.get(topk["keys"])
    expected = np.asarray(golden[compared["name"]])
    if keys is None or got.shape != expected.shape or got.ndim == 0:
        return
    keys = np.asarray(keys, dtype=np.float64)
    dim = topk["dim"] % got.ndim
    ours, theirs = got.astype(np.int64), expected.astype(np.int64)
    if ours.min(initial=0) < 0 or ours.max(initial=0) >= keys.shape[dim]:
        return
    picked = np.take_along_axis(keys, ours, axis=dim)
    wanted = np.take_along_axis(keys, theirs, axis=dim)
    ranked = np.sort(np.moveaxis(ours, dim, -1), axis=-1)
    distinct = bool(np.all(ranked[..., 1:] != ranked[..., :-1]))
    if distinct and np.array_equal(picked, wanted):
        compared["passed"] = True
        compared["tied_indices"] = int(np.count_nonzero(ours != theirs))


def compare_output(
    name: str, dtype: str, got: np.ndarray, expected: np.ndarray, **tolerance: float
) -> dict:
    """One output of SOLAR's run against the framework's, by the C++ oracle
    (``_core.compare_output``, exec/verify.h; ``solar ir verify`` runs the same) with
    ``TOLERANCES[dtype]``: a dict with name, dtype, shape, rtol, atol, max_abs_err, max_rel_err,
    passed (and error). bf16/f8 arrive as raw bits or ml_dtypes arrays."""
    return _core.compare_output(
        name, dtype, _core_array(got, dtype), _core_array(expected, dtype), **tolerance
    )


def _core_array(a: Any, dtype: str) -> np.ndarray:
    """``a`` as the core reads it: C-contiguous, bf16/f8 ml_dtypes arrays (and int16 bf16 bits)
    as their raw unsigned bits."""
    a = np.asarray(a)
    if a.dtype.kind == "V" or a.dtype.name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        a = a.view(np.uint16 if a.dtype.itemsize == 2 else np.uint8)
    elif dtype == "bf16" and a.dtype == np.int16:
        a = a.view(np.uint16)
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)  # (keeps a 0-d array 0-d)


_LOW_FLOATS = REAL_FLOATS[1:]  # below float64


def recheck_in_float64(
    verification: dict, document: dict, rerun: Callable[[], tuple[dict, dict]] | None
) -> None:
    """After a failed whole-program check, runs both sides again in float64: ``rerun()`` gives
    the verification of the model captured with its floating-point weights and inputs made
    float64 (lowered, run by SOLAR's executor and compared with the framework's float64 run,
    ``TOLERANCES["f64"]``; ``Float64UnavailableError`` when it cannot be), and the outputs whose
    allowance was widened by the framework's own conditioning (``conditioned_recheck``: {output:
    the framework's own float32 error}). If float64 agrees, the float32 disagreement is rounding
    amplified by the problem (ill-conditioning) and ``verification`` becomes ``passed``; if it
    disagrees too, it stays ``failed`` (a lowering bug). Either way, or when float64 is not
    possible, ``verification["conditioning"]`` says so and ``detail`` gains one clause. Changes
    ``verification`` in place."""
    compared = [o for o in verification["outputs"] if o["max_rel_err"] is not None]
    low = [o for o in compared if o["dtype"] in _LOW_FLOATS]
    entry: dict[str, Any] = {
        "float32_max_rel_err": max((o["max_rel_err"] for o in low), default=None),
        "float64_max_rel_err": None,
        "float64_outputs": [],
    }
    reason = _float64_impossible(document, rerun)
    widened: dict[str, float] = {}
    if reason is None:
        try:
            v64, widened = rerun()
        except Float64UnavailableError as e:
            reason = str(e)
        except Exception as e:  # a diagnosis only: the float32 result stands, with the reason
            reason = f"the float64 run failed: {type(e).__name__}: {_first_line(str(e))}"
    if reason is not None:
        entry.update(result="not_possible", verdict=f"no float64 recheck: {reason}")
        verification["detail"] += f"; {entry['verdict']}"
        verification["conditioning"] = entry
        return
    errors = [o["max_rel_err"] for o in v64["outputs"] if o["max_rel_err"] is not None]
    entry["float64_max_rel_err"] = max(errors, default=None)
    entry["float64_outputs"] = v64["outputs"]
    f32 = _fmt_err(entry["float32_max_rel_err"])
    f64 = _fmt_err(entry["float64_max_rel_err"])
    if v64["status"] == "passed" and widened:
        entry.update(
            result="float64_agrees_within_conditioning",
            verdict="ill-conditioned in float32 and float64: the float64 runs agree within "
            f"{framework_name(document)}'s own float32 error scaled to float64 (its float32 "
            f"run is up to {_fmt_err(max(widened.values()))} off its float64 run; max rel err "
            f"{f32} in float32, {f64} in float64)",
        )
        verification["status"] = "passed"
    elif v64["status"] == "passed":
        entry.update(
            result="float64_agrees",
            verdict="ill-conditioned in float32: the float64 runs agree "
            f"(max rel err {f32} in float32, {f64} in float64)",
        )
        verification["status"] = "passed"
    else:
        entry.update(
            result="float64_disagrees",
            verdict="the float64 runs disagree too: a lowering bug, not rounding "
            f"(max rel err {f32} in float32, {f64} in float64)",
        )
    verification["detail"] += f"; {entry['verdict']}"
    verification["conditioning"] = entry


# Unit roundoff of each low-precision float (half the spacing at 1: 2^-(mantissa bits + 1)).
_UNIT_ROUNDOFF = {
    "f32": 2.0**-24,
    "f16": 2.0**-11,
    "bf16": 2.0**-8,
    "f8e4m3": 2.0**-4,
    "f8e5m2": 2.0**-3,
}
# How far SOLAR's float64 error may exceed the framework's float32 error scaled to float64 (2^10).
CONDITIONING_SLACK = 1024.0


def conditioned_recheck(
    v64: dict, document: dict, document64: dict, golden: dict, golden64: dict, got64: dict
) -> dict[str, float]:
    """Compares each failed float64 output again with its absolute allowance widened by the
    program's own conditioning: rounding amplified by a factor K shows as K * u32 in the
    framework's float32 run and as K * u64 in both float64 runs, so SOLAR's float64 error may be
    ``CONDITIONING_SLACK * (u64 / u) * E`` more than the f64 tolerance allows, where E is the
    framework's own max |float32 - float64| on that output and u the unit roundoff of its dtype.
    A lowering bug moves the output by the same amount in both precisions and stays failed
    (it could hide only under 1024 * 2^-29 * E ~ 1.9e-6 E). Updates ``v64`` in place; returns
    {output: E} for the outputs whose allowance was widened (empty: none)."""
    dtype = {t["name"]: t["dtype"] for t in document["tensors"]}
    widened: dict[str, float] = {}
    pairs = dict(zip(document64["outputs"], document["outputs"], strict=True))
    for k, o in enumerate(v64["outputs"]):
        name = pairs.get(o["name"])
        if o["passed"] or name is None or dtype.get(name) not in _UNIT_ROUNDOFF:
            continue
        if name not in golden or o["name"] not in golden64:
            continue
        want = np.asarray(golden64[o["name"]], dtype=np.float64)
        low = _as_float64(golden[name], dtype[name])
        if low is None or low.shape != want.shape:
            continue
        diff = np.abs(low - want)
        diff = diff[np.isfinite(diff)]
        framework_err = float(diff.max()) if diff.size else 0.0
        if framework_err == 0.0:
            continue
        finite = np.abs(want[np.isfinite(want)])
        scale = max(1.0, float(finite.max()) if finite.size else 1.0)  # compare_output's scale
        rtol, atol = TOLERANCES["f64"]
        allowance = CONDITIONING_SLACK * 2.0**-53 / _UNIT_ROUNDOFF[dtype[name]] * framework_err
        got = got64.get(o["name"])
        if got is None:
            continue
        v64["outputs"][k] = compare_output(
            o["name"], "f64", got, want, rtol=rtol, atol=atol + allowance / scale
        )
        widened[o["name"]] = framework_err
    v64["status"] = "passed" if all(o["passed"] for o in v64["outputs"]) else "failed"
    return widened if v64["status"] == "passed" else {}


def _as_float64(a: Any, dtype: str) -> np.ndarray | None:
    """A framework output's values as float64: float arrays as they are, bf16 from its raw bits
    (uint16/int16, as golden data holds it: the high half of a float32); f8 bits: None."""
    a = np.asarray(_core_array(a, dtype))
    if a.dtype.kind == "f":
        return a.astype(np.float64)
    if dtype == "bf16" and a.dtype == np.uint16:
        return (a.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return None


def _float64_impossible(document: dict, rerun: Any) -> str | None:
    dtypes = {t["dtype"] for t in document["tensors"]}
    if not dtypes & set(_LOW_FLOATS):
        if "f64" in dtypes:
            return "the program already runs in float64"
        return "the program has no floating-point tensors"
    if rerun is None:
        return NO_FLOAT64_MODEL
    return None


NO_FLOAT64_MODEL = "no model to rebuild in float64 (a capture given without its model)"


def float64_capture_differs(document: dict, document64: dict) -> str | None:
    """Why the float64 capture cannot stand for the original (None: it can): its outputs must
    correspond one to one, each floating-point output made float64."""
    outs, outs64 = document["outputs"], document64["outputs"]
    if len(outs) != len(outs64):
        return f"the float64 capture has {len(outs64)} output(s), not {len(outs)}"
    dtype = {t["name"]: t["dtype"] for t in document["tensors"]}
    dtype64 = {t["name"]: t["dtype"] for t in document64["tensors"]}
    for name, name64 in zip(outs, outs64, strict=True):
        if dtype[name] in _LOW_FLOATS and dtype64[name64] != "f64":
            return (
                f"output '{name}' stays {dtype64[name64]} when the model and its inputs are "
                "made float64 (the model fixes that dtype itself)"
            )
    return None


def _fmt_err(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3g}"


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return " ".join(lines[0].split()) if lines else ""


class OverTimeBudgetError(Exception):
    """Raised instead of running a program whose estimated executor time (``executor_seconds``)
    is over the verification budget; the message says so."""


def choose_mode(captured: Any, ir_text: Any, budget_mb: float, budget_s: float) -> tuple[str, str]:
    """ "whole_program" or "per_op", and why. The executor's time is estimated from the
    program's counts (``executor_seconds``: the einsum counts, not the SOL analysis, which runs
    once, after verification)."""
    if not captured.has_data:
        return "per_op", "no real inputs to run the whole program on"
    need = graph_bytes(captured.document)
    if need > budget_mb * 1e6:
        return "per_op", (
            f"the whole program holds {format_bytes(need)} of tensors, over the verification "
            f"budget of {format_bytes(budget_mb * 1e6)} (--verify-budget-mb)"
        )
    seconds = executor_seconds(ir_text)
    if seconds > budget_s:
        return "per_op", (
            f"the whole program would take about {seconds:.3g} s in SOLAR's executor, over the "
            f"verification budget of {budget_s:g} s (--verify-budget-s)"
        )
    return "whole_program", (
        f"the whole program fits the verification budget ({format_bytes(need)} of tensors, "
        f"about {seconds:.2g} s)"
    )


def over_time_budget(ir_text: Any, budget_s: float) -> str | None:
    """Why running ``ir_text`` in SOLAR's executor would exceed ``budget_s`` (None: it fits)."""
    seconds = executor_seconds(ir_text)
    if seconds <= budget_s:
        return None
    return (
        f"about {seconds:.3g} s in SOLAR's executor, over the verification budget of "
        f"{budget_s:g} s (--verify-budget-s)"
    )


def executor_seconds(ir_text: Any) -> float:
    """The estimated time of SOLAR's executor on the program: its multiply-adds at
    ``EXECUTOR_MACS_PER_S``, its other ops at ``EXECUTOR_OPS_PER_S`` and the bytes its ops
    read and write at ``EXECUTOR_BYTES_PER_S`` (the counts of ``_core.totals``)."""
    t = _totals(ir_text)
    return (
        t["macs"] / EXECUTOR_MACS_PER_S
        + t["other_ops"] / EXECUTOR_OPS_PER_S
        + (t["bytes_read"] + t["bytes_written"]) / EXECUTOR_BYTES_PER_S
    )


def _totals(ir_text: Any) -> dict:
    try:
        return _core.totals(ir_text)
    except _core.IRError as e:
        raise AnalysisError(str(e)) from e


def per_op_verification(ops: list[dict], framework: str) -> dict:
    """The verification of the op configurations each run alone (``Captured.per_op_cases``)."""
    failed = [c for c in ops if c["result"] == "failed"]
    unverified = [c for c in ops if c["result"] == "not_verified"]
    nodes = sum(c["nodes"] for c in ops)
    reduced = sum(1 for c in ops if (c["size"] or "").startswith("reduced"))
    detail = (
        f"{len(ops) - len(unverified)} of {len(ops)} distinct op configuration(s) "
        f"({_core.counted(nodes, 'node')}) run alone and compared with {framework}, "
        f"{reduced} at reduced size"
    )
    if failed:
        detail += f"; {len(failed)} failed: {_listed([_failed_op(c) for c in failed])}"
    if unverified:
        named = [f"{c['op']} ({c.get('reason') or 'no reason given'})" for c in unverified]
        detail += f"; {len(unverified)} NOT verified: {_listed(named)}"
    status = "failed" if failed else ("partial" if unverified else "passed")
    return {"status": status, "mode": "per_op", "detail": detail, "ops": ops}


def _listed(items: list[str], most: int = 3) -> str:
    """The first ``most`` of ``items``, joined, and how many more."""
    shown = "; ".join(items[:most])
    return shown + (f"; and {len(items) - most} more" if len(items) > most else "")


def _failed_op(case: dict) -> str:
    """``OP at SIZE: OUTPUT dtype[shape] max_abs_err=E max_rel_err=R (rtol=.. atol=..)`` of a
    failed op configuration's first mismatching output (its whole list is in the JSON)."""
    bad = [o for o in case.get("outputs") or [] if not o.get("passed")]
    where = f" at {case['size']}" if case.get("size") else ""
    if not bad:
        return f"{case['op']}{where}"
    return f"{case['op']}{where}: {_failed_output(bad[0])}"


def _failed_output(o: dict) -> str:
    """``OUTPUT dtype[shape] max_abs_err=E max_rel_err=R (rtol=.. atol=..)`` of a compared
    output that failed (or ``OUTPUT: error``)."""
    if o.get("error"):
        return f"{o.get('name')}: {o['error']}"
    shape = ", ".join(str(d) for d in o.get("shape") or [])

    def err(key: str) -> str:  # null: not a number (NaN or inf in an output)
        value = o.get(key)
        return "nan" if value is None else f"{value:.3g}"

    return (
        f"{o.get('name')} {o.get('dtype')}[{shape}] "
        f"max_abs_err={err('max_abs_err')} max_rel_err={err('max_rel_err')} "
        f"(rtol={o.get('rtol')} atol={o.get('atol')})"
    )


def not_run(detail: str) -> dict:
    return {"status": "not_run", "mode": None, "detail": detail}


def provenance(sections: dict[str, Any] | None = None) -> Any:
    """The ``_core.Provenance`` of ``sections`` (its keywords: ``source``, ``capture``,
    ``coverage``, ``verification``, ``agent``; None or absent: an IR file's)."""
    return _core.Provenance(**{k: v for k, v in (sections or {}).items() if v is not None})


def analyze(program: Any, hw: str, options: Any, sections: dict[str, Any] | None = None) -> Any:
    """``_core.analyze``: the SOL report (a ``_core.Report``) of ``program`` (IR text, a
    ``solar.Program`` or a ``_core.LoweringResult``) on ``hw`` under ``options`` (a
    ``_core.AnalysisOptions``), with the provenance ``sections`` (``_core.Provenance``'s
    keywords: ``source``, the name the report shows, and its ``capture``, ``coverage``,
    ``verification`` and ``agent`` sections; absent: an IR file's, no agent). A user error is an
    ``AnalysisError``."""
    try:
        return _core.analyze(program, hw, options, provenance(sections))
    except _core.IRError as e:
        raise AnalysisError(str(e).removeprefix("solar: error: ")) from e


def sol_report(
    ir_text: Any,
    hw: str,
    policy: str | None = None,
    sections: dict[str, Any] | None = None,
    **keywords: Any,
) -> Any:
    """The SOL report of an IR program (text or ``solar.Program``; ``analyze``: the ``sol``
    command's analysis, no files): a ``_core.Report`` with ``to_json()``, ``render()``,
    ``render_output(kind)`` and ``write([(kind, path), ...])``. ``sections``: ``analyze``'s;
    ``keywords``: those of ``_core.AnalysisOptions`` (``fidelity``, ``routing``, ``capacity``,
    ``level``, ``sizes``, ``sets``, ``top``, ``measured_ms``, ``measured_on``,
    ``measured_method``, ``measured_nodes``, ...)."""
    return analyze(ir_text, hw, _core.AnalysisOptions(policy=policy or "", **keywords), sections)


def report_of(core: Any, ir_text: str = "", capture_json: str = "", golden: dict | None = None):
    """A ``Report`` of a ``_core.Report``."""
    return Report(
        json.loads(core.to_json()),
        table=core.render(),
        ir=ir_text,
        capture_json=capture_json,
        golden=golden or {},
        core=core,
    )


class AgentReport(Report):
    """A Report whose summary starts with the parts the LLM agent wrote (its ``agent``
    section, docs/llm.md)."""

    @staticmethod
    def of(report: Report) -> AgentReport:
        return AgentReport(**{f.name: getattr(report, f.name) for f in fields(report)})

    def summary(self, details: bool = False) -> str:
        lines = []
        for a in self.data.get("agent", []):
            what = a["name"] if a["scope"] == "program" else f"node '{a['name']}' ({a['op']})"
            how = (
                "from the cache, verified again"
                if a["cached"]
                else f"{a['attempts']} attempt(s), {a['prompt_tokens']} prompt + "
                f"{a['completion_tokens']} completion tokens"
            )
            lines.append(f"agent: {what} written by the LLM agent ({how})")
        return "".join(line + "\n" for line in lines) + super().summary(details)


def run_cli_captured(args: list[str]) -> tuple[int, str, str]:
    """``_core.run_cli(args)`` with its stdout and stderr captured (run_cli writes them to
    ``sys.stdout`` / ``sys.stderr`` when the command is done)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = _core.run_cli(args)
    return rc, out.getvalue(), err.getvalue()
