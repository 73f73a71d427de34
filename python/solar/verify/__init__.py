"""Verification: SOLAR's run of a lowered program checked against the framework's
(docs/capture.md, "Verification"). Framework-free: no torch or jax here. The stage that
chooses and runs the checks is ``solar.stages.verify``; the checks are here:

- ``solar.verify.whole``: the whole program run on the framework's golden data, output by
  output (``verify_whole``, ``compare_output`` by the C++ oracle, ``TOLERANCES``);
- ``solar.verify.float64``: a failed check run again in float64, both sides
  (``recheck_in_float64``, ``conditioned_recheck``);
- ``solar.verify.budget``: whole program or per op, by the budgets (``choose_mode``, the
  executor's estimated time ``executor_seconds``);
- ``solar.verify.per_op``: the record of each op configuration run alone
  (``per_op_verification``).

A verification is a dict (``status``, ``mode``, ``detail``, ``why``, and the outputs or ops it
compared): the report's ``verification`` section (docs/report.md).
"""

from __future__ import annotations

from typing import Any


class GoldenUnavailableError(Exception):
    """Raised by a capture's golden function when its framework cannot record a tensor the
    verification needs (e.g. an intermediate of JAX's jitted run); the verification is then
    "not_run" with the message as its reason."""


def fed_outputs(lowering: Any) -> list[str]:
    """The outputs of nodes without a rule (``lowering``: a ``_core.LoweringResult``): the
    program reads them as inputs, fed from the framework's run."""
    return [o for u in lowering.unsupported for o in u["outputs"]]


def not_run(detail: str) -> dict:
    return {"status": "not_run", "mode": None, "detail": detail}
