"""The record of a per-op verification: each distinct op configuration run alone by the
framework and by SOLAR (the adapter's ``per_op_cases``)."""

from __future__ import annotations

from solar import _core
from solar.verify.whole import _failed_output, _listed


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


def _failed_op(case: dict) -> str:
    """``OP at SIZE: OUTPUT dtype[shape] max_abs_err=E max_rel_err=R (rtol=.. atol=..)`` of a
    failed op configuration's first mismatching output (its whole list is in the JSON)."""
    bad = [o for o in case.get("outputs") or [] if not o.get("passed")]
    where = f" at {case['size']}" if case.get("size") else ""
    if not bad:
        return f"{case['op']}{where}"
    return f"{case['op']}{where}: {_failed_output(bad[0])}"
