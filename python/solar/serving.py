"""Serving (docs/serving.md): a framework-neutral loop over batch sizes. Each batch's step (one
prefill or one decode step of a decoder, built by the model's adapter: ``solar.torch.serve``
for PyTorch) is a ``solar.stages.Captured`` that ``solar.stages.run`` captures, lowers, verifies
and analyses like any model; the serving figures (SOL per token, tokens/s, the batch at which
decode turns compute bound) are the C++ core's (``_core.serving_report``,
include/solar/sol/serving.h). Framework-free: no torch, no jax.

- ``parse_batches(text)``: ``--batch-sweep``'s batch sizes.
- ``check_step(phase, batch, context)``: a step that cannot be served is a one-line error.
- ``run_serving(source, load_steps, options, stage_times)``: the loop; ``load_steps()`` returns
  ``step(batch) -> Captured`` (timed as the capture).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from solar.options import SERVE_PHASES, AnalysisError, Options
from solar.stages import run, timed

PHASES = SERVE_PHASES

__all__ = ["PHASES", "ServingReport", "check_step", "parse_batches", "run_serving"]


def parse_batches(text: str) -> list[int]:
    """``--batch-sweep``: ``1,2,4,8`` (increasing, each >= 1) or ``A..B`` (the powers of two
    from A to B, and B itself)."""
    text = text.strip()
    try:
        if ".." in text:
            lo_text, hi_text = text.split("..", 1)
            lo, hi = int(lo_text), int(hi_text)
            if lo < 1 or hi < lo:
                raise ValueError
            batches, b = [], 1
            while b <= hi:
                if b >= lo:
                    batches.append(b)
                b *= 2
            if not batches or batches[0] != lo:
                batches.insert(0, lo)
            if batches[-1] != hi:
                batches.append(hi)
            return batches
        batches = [int(part) for part in text.split(",")]
    except ValueError:
        raise AnalysisError(
            f"--batch-sweep '{text}': expected batch sizes such as 1,2,4,8 or a range 1..512"
        ) from None
    if any(b < 1 for b in batches) or batches != sorted(set(batches)):
        raise AnalysisError(
            f"--batch-sweep '{text}': batch sizes must be increasing and at least 1"
        )
    return batches


def check_step(phase: str, batch: int, context: int) -> None:
    """A user error (one line) for a phase, batch or context that cannot be served (the rules
    of ``solar.options``)."""
    Options.of(serve=phase, batch=batch, context=context)


SERVING_TOP = 3  # the cache groups and ops a serving step's own report lists (as insights: 3)


@dataclass
class ServingReport:
    """The serving figures (``data``: the JSON, ``table``: the terminal rendering) and the SOL
    report of each step analysed (``steps``: ``solar.stages.Report``, by batch)."""

    data: dict
    table: str
    steps: list[Any] = field(default_factory=list)
    core: Any = field(default=None, repr=False)

    def to_json(self) -> str:
        import json

        return json.dumps(self.data, sort_keys=True, indent=2, allow_nan=False) + "\n"


def run_serving(
    source: str,
    load_steps: Callable[[], Callable[[int], Any]],
    options: Options,
    stage_times: dict[str, float] | None = None,
) -> ServingReport:
    """The serving report of the model ``source`` under ``options`` (``options.program``: the
    phase, the batches, the context): ``load_steps()`` (timed as the capture) gives
    ``step(batch)``, the ``Captured`` step at a batch size; one step per batch size, each
    captured, lowered and analysed by ``solar.stages.run``; the first (smallest) batch is
    verified as ``solar analyze`` verifies (a failed check rechecked in float64), the others
    differ from it only in the batch size and are not run again (each says so)."""
    import json

    from solar import _core

    program = options.program
    phase, batches, context = program.phase, program.batches, program.context
    verify = options.verification.enabled
    analysis = options.analysis
    changes: dict[str, Any] = {}
    if analysis.parallel is not None or analysis.devices is not None:
        # In parallel, the step's outputs (its KV-cache rows, its logits) stay on the devices
        # that write them (docs/serving.md, "Serving in parallel").
        changes["serving"] = True
    if analysis.top is None:
        # The step's report shows its 3 heaviest cache groups and slowest ops (the JSON has
        # them all), so that a decode step's report and table fit one screen.
        changes["top"] = SERVING_TOP
    if changes:
        options = options.replace(analysis=changes)
    reports = []
    with timed(stage_times, "capture"):
        step = load_steps()
    step_options = options
    for i, batch in enumerate(batches):
        report = run(lambda batch=batch: step(batch), step_options, stage_times)
        if i == 0 and report.verification["status"] == "failed":
            raise AnalysisError(
                f"{source}: verification of the {phase} step at batch {batch} failed: "
                f"{report.verification['detail']}"
            )
        if i == 0 and len(batches) > 1:  # the others are not run again: made once, saying so
            status = report.verification["status"]
            skipped = (
                f"the step of batch {batch} was verified ({status}); these differ from it "
                "only in the batch size"
            )
            step_options = options.replace(
                verification={"enabled": False, "skipped": skipped if verify else None}
            )
        reports.append(report)
    verifications = [r.verification for r in reports]
    with timed(stage_times, "analysis"):
        core = _core.serving_report(
            phase,
            context,
            [(b, r.core) for b, r in zip(batches, reports, strict=True)],
            [json.dumps(v, sort_keys=True) for v in verifications],
        )
    return ServingReport(json.loads(core.to_json()), core.render(), reports, core)
