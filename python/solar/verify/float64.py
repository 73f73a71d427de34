"""A failed whole-program check run again in float64, both sides: rounding amplified by an
ill-conditioned problem, or a lowering bug (docs/capture.md, "Verification")."""

from __future__ import annotations

from typing import Any

import numpy as np

from solar.document import REAL_FLOATS, framework_name
from solar.verify import Verification
from solar.verify.whole import TOLERANCES, _core_array, compare_output


class Float64UnavailableError(Exception):
    """Raised by ``Captured.in_float64`` when the program cannot be rebuilt in float64 (the
    message says why; the float64 recheck is then "not_possible")."""


_LOW_FLOATS = REAL_FLOATS[1:]  # below float64


def recheck_in_float64(
    verification: Verification, document: dict, outcome: tuple[Verification, dict] | str
) -> Verification:
    """After a failed whole-program check, its float64 recheck's ``outcome`` (``float64_check``
    in ``solar.stages``): the verification of the model captured with its floating-point
    weights and inputs made float64 (lowered, run by SOLAR's executor and compared with the
    framework's float64 run, ``TOLERANCES["f64"]``) and the outputs whose allowance was widened
    by the framework's own conditioning (``conditioned_recheck``: {output: the framework's own
    float32 error}); or why there is none (a str: ``float64_impossible``, or the rebuild's
    failure). If float64 agrees, the float32 disagreement is rounding amplified by the problem
    (ill-conditioning) and ``verification`` becomes ``passed``; if it disagrees too, it stays
    ``failed`` (a lowering bug). Either way, or when float64 is not possible,
    the returned record's ``conditioning`` says so and its ``detail`` gains one clause."""
    compared = [o for o in verification.outputs or [] if o["max_rel_err"] is not None]
    low = [o for o in compared if o["dtype"] in _LOW_FLOATS]
    entry: dict[str, Any] = {
        "float32_max_rel_err": max((o["max_rel_err"] for o in low), default=None),
        "float64_max_rel_err": None,
        "float64_outputs": [],
    }
    if isinstance(outcome, str):
        entry.update(result="not_possible", verdict=f"no float64 recheck: {outcome}")
        detail = f"{verification.detail}; {entry['verdict']}"
        return verification.replace(detail=detail, conditioning=entry)
    v64, widened = outcome
    errors = [o["max_rel_err"] for o in v64.outputs or [] if o["max_rel_err"] is not None]
    entry["float64_max_rel_err"] = max(errors, default=None)
    entry["float64_outputs"] = v64.outputs
    f32 = _fmt_err(entry["float32_max_rel_err"])
    f64 = _fmt_err(entry["float64_max_rel_err"])
    status = verification.status
    if v64.status == "passed" and widened:
        entry.update(
            result="float64_agrees_within_conditioning",
            verdict="ill-conditioned in float32 and float64: the float64 runs agree within "
            f"{framework_name(document)}'s own float32 error scaled to float64 (its float32 "
            f"run is up to {_fmt_err(max(widened.values()))} off its float64 run; max rel err "
            f"{f32} in float32, {f64} in float64)",
        )
        status = "passed"
    elif v64.status == "passed":
        entry.update(
            result="float64_agrees",
            verdict="ill-conditioned in float32: the float64 runs agree "
            f"(max rel err {f32} in float32, {f64} in float64)",
        )
        status = "passed"
    else:
        entry.update(
            result="float64_disagrees",
            verdict="the float64 runs disagree too: a lowering bug, not rounding "
            f"(max rel err {f32} in float32, {f64} in float64)",
        )
    detail = f"{verification.detail}; {entry['verdict']}"
    return verification.replace(status=status, detail=detail, conditioning=entry)


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
    v64: Verification,
    document: dict,
    document64: dict,
    golden: dict,
    golden64: dict,
    got64: dict,
) -> tuple[Verification, dict[str, float]]:
    """Compares each failed float64 output again with its absolute allowance widened by the
    program's own conditioning: rounding amplified by a factor K shows as K * u32 in the
    framework's float32 run and as K * u64 in both float64 runs, so SOLAR's float64 error may be
    ``CONDITIONING_SLACK * (u64 / u) * E`` more than the f64 tolerance allows, where E is the
    framework's own max |float32 - float64| on that output and u the unit roundoff of its dtype.
    A lowering bug moves the output by the same amount in both precisions and stays failed
    (it could hide only under 1024 * 2^-29 * E ~ 1.9e-6 E). Returns ``v64`` so compared again,
    and {output: E} for the outputs whose allowance was widened (empty: none)."""
    dtype = {t["name"]: t["dtype"] for t in document["tensors"]}
    widened: dict[str, float] = {}
    pairs = dict(zip(document64["outputs"], document["outputs"], strict=True))
    outputs = list(v64.outputs or [])
    for k, o in enumerate(outputs):
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
        outputs[k] = compare_output(
            o["name"], "f64", got, want, rtol=rtol, atol=atol + allowance / scale
        )
        widened[o["name"]] = framework_err
    v64 = v64.replace(
        outputs=outputs, status="passed" if all(o["passed"] for o in outputs) else "failed"
    )
    return v64, (widened if v64.status == "passed" else {})


def _as_float64(a: Any, dtype: str) -> np.ndarray | None:
    """A framework output's values as float64: float arrays as they are, bf16 from its raw bits
    (uint16/int16, as golden data holds it: the high half of a float32); f8 bits: None."""
    a = np.asarray(_core_array(a, dtype))
    if a.dtype.kind == "f":
        return a.astype(np.float64)
    if dtype == "bf16" and a.dtype == np.uint16:
        return (a.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return None


def float64_impossible(document: dict) -> str | None:
    """Why the program has nothing to recheck in float64 (None: it has)."""
    dtypes = {t["dtype"] for t in document["tensors"]}
    if not dtypes & set(_LOW_FLOATS):
        if "f64" in dtypes:
            return "the program already runs in float64"
        return "the program has no floating-point tensors"
    return None


def failed_rebuild(e: Exception) -> str:
    """Why the float64 recheck could not be made, from what its rebuild raised: a
    ``Float64UnavailableError``'s message, else the failure (a diagnosis only: the float32
    result stands, with the reason)."""
    if isinstance(e, Float64UnavailableError):
        return str(e)
    return f"the float64 run failed: {type(e).__name__}: {_first_line(str(e))}"


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
