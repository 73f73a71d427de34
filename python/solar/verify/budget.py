"""Whole program or per op: the verification's budgets of memory and of SOLAR's executor
time (``--verify-budget-mb``, ``--verify-budget-s``)."""

from __future__ import annotations

from typing import Any

from solar import _core
from solar.document import format_bytes, graph_bytes
from solar.options import AnalysisError

# The rates of SOLAR's executor its time is estimated at (``executor_seconds``; exec/estimate.h,
# bench/README.md "Verification time"): multiply-adds, other ops, and bytes read and written.
EXECUTOR_MACS_PER_S = _core.EXECUTOR_MACS_PER_S
EXECUTOR_OPS_PER_S = _core.EXECUTOR_OPS_PER_S
EXECUTOR_BYTES_PER_S = _core.EXECUTOR_BYTES_PER_S


def choose_mode(captured: Any, program: Any, budget_mb: float, budget_s: float) -> tuple[str, str]:
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
    seconds = executor_seconds(program)
    if seconds > budget_s:
        return "per_op", (
            f"the whole program would take about {seconds:.3g} s in SOLAR's executor, over the "
            f"verification budget of {budget_s:g} s (--verify-budget-s)"
        )
    return "whole_program", (
        f"the whole program fits the verification budget ({format_bytes(need)} of tensors, "
        f"about {seconds:.2g} s)"
    )


def over_time_budget(program: Any, budget_s: float) -> str | None:
    """Why running ``program`` (as ``executor_seconds`` takes it) in SOLAR's executor would
    exceed ``budget_s`` (None: it fits)."""
    seconds = executor_seconds(program)
    if seconds <= budget_s:
        return None
    return (
        f"about {seconds:.3g} s in SOLAR's executor, over the verification budget of "
        f"{budget_s:g} s (--verify-budget-s)"
    )


def executor_seconds(program: Any) -> float:
    """The estimated time of SOLAR's executor on ``program`` (IR text, a ``Program`` or a
    ``LoweringResult``, whose graph is lifted once): its multiply-adds at
    ``EXECUTOR_MACS_PER_S``, its other ops at ``EXECUTOR_OPS_PER_S`` and the bytes its ops read
    and write at ``EXECUTOR_BYTES_PER_S`` (``_core.executor_seconds``, the estimate of ``solar ir
    run --budget-s``)."""
    try:
        return _core.executor_seconds(program)
    except _core.IRError as e:
        raise AnalysisError(str(e)) from e
