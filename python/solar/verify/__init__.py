"""Verification: SOLAR's run of a lowered program checked against the framework's
(docs/capture.md, "Verification"). Framework-free: no torch or jax here. The stage that
chooses and runs the checks is ``solar.stages.verify``; the checks are here:

- ``solar.verify.whole``: the whole program run on the framework's golden data, output by
  output (``check_whole``: the golden run and ``verify_whole``; ``compare_output`` by the C++
  oracle, ``TOLERANCES``);
- ``solar.verify.float64``: a failed check run again in float64, both sides
  (``recheck_in_float64``, ``conditioned_recheck``);
- ``solar.verify.budget``: whole program or per op, by the budgets (``choose_mode``, the
  executor's estimated time ``executor_seconds``);
- ``solar.verify.per_op``: the record of each op configuration run alone
  (``per_op_verification``).

A verification is a frozen ``Verification`` record (``status``, ``mode``, ``detail``, ``why``,
and the outputs or ops it compared); its ``to_dict()`` is the report's ``verification`` section
(docs/report.md).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any


class GoldenUnavailableError(Exception):
    """Raised by a capture's golden function when its framework cannot record a tensor the
    verification needs (e.g. an intermediate of JAX's jitted run); the verification is then
    "not_run" with the message as its reason."""


@dataclass(frozen=True)
class Verification:
    """The outcome of one verification (the report's ``verification`` section, docs/report.md):
    ``status`` ("passed", "partial", "failed", "not_verified", "not_run"), ``mode``
    ("whole_program", "per_op", "twin", "reduced"; None: nothing ran), ``detail`` (what ran, in
    words), ``why`` that mode; what it compared: the whole program's ``outputs`` and the outputs
    it did not compare (``not_compared``), the float64 recheck of a failed check
    (``conditioning``), the op configurations run alone (``ops``); ``notes``: how the golden run
    was made. A field that is None (or ``notes`` empty) is absent from the section."""

    status: str
    mode: str | None
    detail: str
    why: str | None = None
    outputs: list[dict] | None = None
    not_compared: list[str] | None = None
    conditioning: dict | None = None
    ops: list[dict] | None = None
    notes: tuple[str, ...] = ()

    def replace(self, **changes: Any) -> Verification:
        """A copy with ``changes`` (the record itself never changes)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        """The report's ``verification`` section: ``status``, ``mode`` and ``detail`` always,
        every other field when it is set."""
        section: dict[str, Any] = {"status": self.status, "mode": self.mode, "detail": self.detail}
        for f in dataclasses.fields(self)[3:]:
            value = getattr(self, f.name)
            if value is not None and value != ():
                section[f.name] = list(value) if f.name == "notes" else value
        return section


def not_run(detail: str, mode: str | None = None) -> Verification:
    """A verification that ran nothing (``detail``: why, and what that means)."""
    return Verification("not_run", mode, detail)
