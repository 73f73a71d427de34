"""Per-op verification: each distinct op configuration run alone by the framework (the
adapter's ``per_op_cases``: ``OpConfig`` objects, each with its ``OpCase`` sizes) and by SOLAR
(``check_op``), and the record of them all (``per_op_verification``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from solar import _core, ir
from solar.verify import Verification
from solar.verify.budget import over_time_budget
from solar.verify.whole import _failed_output, _listed, compare_output


def per_op_verification(ops: list[dict], framework: str) -> Verification:
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
    return Verification(status, "per_op", detail, ops=ops)


def _failed_op(case: dict) -> str:
    """``OP at SIZE: OUTPUT dtype[shape] max_abs_err=E max_rel_err=R (rtol=.. atol=..)`` of a
    failed op configuration's first mismatching output (its whole list is in the JSON)."""
    bad = [o for o in case.get("outputs") or [] if not o.get("passed")]
    where = f" at {case['size']}" if case.get("size") else ""
    if not bad:
        return f"{case['op']}{where}"
    return f"{case['op']}{where}: {_failed_output(bad[0])}"


@dataclass(frozen=True)
class OpCase:
    """One op configuration at one size, as the framework ran it (``OpConfig.cases``): ``how``
    the size ("reduced (exact, sizes / 4)", "real size"), and the one-node capture
    (``document``, its JSON), the inputs it ran on (``feed``), the framework's outputs
    (``expected``), their dtypes by name and the shapes of both; or ``refused``: why the
    framework could not run the op at that size (the next size is then tried)."""

    how: str
    document: str = ""
    feed: dict[str, np.ndarray] = field(default_factory=dict)
    expected: dict[str, np.ndarray] = field(default_factory=dict)
    dtypes: dict[str, str] = field(default_factory=dict)
    shapes: dict[str, list[int]] = field(default_factory=dict)
    refused: str | None = None


@dataclass(frozen=True)
class OpConfig:
    """One distinct op configuration of a capture (``Captured.per_op_cases``): its ``op``, how
    many ``nodes`` share it, the ``example_node`` checked and its ``real_shapes``, and its
    ``cases``, the sizes to try in turn (made by the framework only as they are asked for)."""

    op: str
    nodes: int
    example_node: str
    real_shapes: dict[str, list[int]]
    cases: Iterable[OpCase]


def check_op(config: OpConfig, disabled_rules: Sequence[str], budget_s: float) -> dict:
    """The check of one op configuration: its first case that SOLAR lowers (by the rules, less
    ``disabled_rules``) and runs within ``budget_s`` of estimated executor time, compared output
    by output with the framework's; "not_verified" with each size's reason when none is."""
    entry = {
        "op": config.op,
        "nodes": config.nodes,
        "example_node": config.example_node,
        "real_shapes": config.real_shapes,
    }
    errors = []
    for case in config.cases:
        if case.refused is not None:
            errors.append(f"{case.how}: {case.refused}")
            continue
        try:  # the one-op program: parsed and checked once (by its lowering), lifted once
            program = _core.lower_capture_detailed(case.document, False, list(disabled_rules))
        except ValueError as e:  # the rule refuses the reduced node
            errors.append(f"{case.how}: lowering: {first_line(str(e))}")
            continue
        too_slow = over_time_budget(program, budget_s)
        if too_slow is not None:  # too slow at this size in SOLAR's executor: the next one
            errors.append(f"{case.how}: {too_slow}")
            continue
        got = ir.run(program, case.feed)
        compared = [
            compare_output(n, case.dtypes[n], np.asarray(got[n]), e)
            for n, e in case.expected.items()
        ]
        entry.update(
            size=case.how,
            shapes=case.shapes,
            outputs=compared,
            result="passed" if all(c["passed"] for c in compared) else "failed",
        )
        return entry
    entry.update(
        size=None,
        shapes=None,
        outputs=[],
        result="not_verified",
        reason="; ".join(errors) or "too big to run at its real size, and cannot be reduced",
    )
    return entry


def first_line(text: str) -> str:
    """The first non-blank line of ``text``, stripped ("" when none)."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else ""
