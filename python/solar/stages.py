"""One analysis, written once (docs/architecture.md): ``Options`` -> ``Captured`` -> ``Lowered``
-> ``Verified`` -> ``Analysed``. Framework-free: no torch or jax here.

- ``Options`` (frozen): the program (a forward, a training step or a serving step; the LLM
  agent's part), the lowering, the verification and the analysis options, built once from
  keywords (``Options.of``) or from the command line (``solar.cli``), where every rule between
  options is checked, once (``Options.__post_init__``).
- ``Captured``: what every adapter (PyTorch, JAX, a training step, a serving step, the LLM
  agent's translation) gives: the capture document, ``golden(wanted)``, ``in_float64()``,
  ``per_op_cases(skip, budget_bytes)`` (``OpConfig`` objects: ``solar.verify.per_op``).
- ``lower(captured, options.lowering) -> Lowered``: the lowered program, held once, with its
  coverage; ``verify(lowered, options.verification) -> Verified``; ``analyse(verified,
  options.analysis) -> Analysed`` (``Report``: a handle on the engine's report).
- ``verify_on_twin``: a capture built without weights that has a reduced twin (``twin``: a
  ``solar.torch.serve`` step of a large causal LM) is verified on the twin, and per op at full
  size (docs/serving.md, "Verification on a reduced twin").
- ``run(capture, options)``: the one place the sequence is written; every entry point (``solar
  analyze``, ``solar capture``, ``solar sol MODEL.py``, bench and sweep children, ``--serve``,
  ``--train``, ``--llm``, ``--llm-fallback``, ``solar.analyze``) goes through it.
"""

from __future__ import annotations

import contextlib
import functools
import json
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from solar import _core
from solar.document import capture_section, format_bytes, framework_name, graph_bytes
from solar.options import (
    AnalysisError,
    AnalysisOptions,
    LoweringOptions,
    Options,
    VerificationOptions,
)
from solar.verify import Verification, not_run
from solar.verify.budget import choose_mode
from solar.verify.float64 import (
    Float64UnavailableError,
    conditioned_recheck,
    failed_rebuild,
    float64_capture_differs,
    float64_impossible,
    recheck_in_float64,
)
from solar.verify.per_op import OpConfig, check_op, per_op_verification
from solar.verify.whole import check_whole, recorded, topk_indices, verify_whole

# The stages ``run`` can stop after.
UNTIL = ("captured", "lowered", "verified", "analysed")
# The default option groups.
LOWERING, VERIFICATION, ANALYSIS = LoweringOptions(), VerificationOptions(), AnalysisOptions()

__all__ = [
    "Analysed",
    "Captured",
    "Float64UnavailableError",
    "Lowered",
    "Translation",
    "Verified",
    "analyse",
    "lower",
    "run",
    "verify",
]


# ---------------------------------------------------------------------------------------------
# The report, and the engine calls


# The stages of one analysis, in order, as ``stage_times`` names them (seconds each).
STAGES = ("capture", "lowering", "verification", "analysis")


@dataclass
class Report:
    """The SOL report of a captured model, over the engine's report (``core``, a
    ``_core.Report``): the ``sol`` command's JSON report (docs/report.md) with three more
    sections, ``capture``, ``coverage`` and ``verification`` (``data``, read from ``core``
    once), its terminal table, and what the analysis was made from: the lowered program
    (``ir``), the capture and the golden data of a whole-program check."""

    core: Any = field(repr=False)
    ir: str = ""  # the lowered program
    capture_json: str = ""
    golden: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    @functools.cached_property
    def data(self) -> dict:
        return json.loads(self.core.to_json())

    @property
    def table(self) -> str:
        """The ``sol`` command's terminal table (``_core.Report.render``)."""
        return self.core.render()

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
        return self.core.render(details=True) if details else self.table

    def write_outputs(self, outputs: Sequence[tuple[str, str]]) -> None:
        """Writes ``[(kind, path), ...]`` (kind: html, trace, csv, dot), all or none."""
        if outputs:
            self.core.write(list(outputs))


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


def lower_detailed(
    capture_json: str, allow_unsupported: bool = False, disabled_rules: Sequence[str] = ()
) -> Any:
    """``_core.lower_capture_detailed``: a ``_core.LoweringResult`` (``ir``, ``program``,
    ``unsupported``: [{node, op, location, reason, index, inputs, outputs, output_bytes}],
    ``random``, ``coverage``, ``nodes``, ``lowered``, ``tensor_phases``, ...)."""
    return _core.lower_capture_detailed(capture_json, allow_unsupported, list(disabled_rules))


def provenance(sections: dict[str, Any] | None = None) -> Any:
    """The ``_core.Provenance`` of ``sections`` (its keywords: ``source``, ``capture``,
    ``coverage``, ``verification`` (a ``Verification``), ``agent``; None or absent: an IR
    file's)."""
    given = {k: v for k, v in (sections or {}).items() if v is not None}
    if isinstance(given.get("verification"), Verification):
        given["verification"] = given["verification"].to_dict()
    return _core.Provenance(**given)


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


def report_of(core: Any, ir_text: str = "", capture_json: str = "", golden: dict | None = None):
    """A ``Report`` of a ``_core.Report``."""
    return Report(core, ir=ir_text, capture_json=capture_json, golden=golden or {})


class AgentReport(Report):
    """A Report whose summary starts with the parts the LLM agent wrote (its ``agent``
    section, docs/llm.md)."""

    @staticmethod
    def of(report: Report) -> AgentReport:
        return AgentReport(report.core, report.ir, report.capture_json, report.golden)

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


Analysed = Report  # the last stage: Report, over the engine's _core.Report


# ---------------------------------------------------------------------------------------------
# The stages


@dataclass(frozen=True)
class Translation:
    """A program the LLM agent wrote whole (``--llm``), verified as it was written."""

    ir: str
    verification: Verification


class Captured(Protocol):
    """What an adapter gives for one program (module doc)."""

    document: dict  # the capture document (docs/capture.md)
    golden_notes: list[str]  # how the last golden run was made (listed in the report)
    has_data: bool  # real values: whole-program verification possible
    rechecks_in_float64: bool  # a failed whole-program check is rechecked in float64
    default_policy: str | None  # the framework's precision policy (JAX: jax-default)
    translation: Translation | None  # --llm: the program, already verified
    agent: list[dict] | None  # the parts the LLM agent wrote (None: no agent asked)
    # A model built without weights: its reduced twin's step, ``() -> (Captured, what)``,
    # verified in its place (``verify_on_twin``); None: the capture is verified itself.
    twin: Callable[[], tuple[Any, str]] | None
    # A benchmark workload: the same program at a reduced workload, ``() -> (Captured, what)``
    # (an ``AnalysisError`` when none can be made), verified whole where the whole program is
    # over the verification budgets (``verify``); None: none.
    reduced: Callable[[], tuple[Any, str]] | None

    def to_json(self) -> str: ...

    def golden(self, wanted: Sequence[str]) -> dict[str, np.ndarray]:
        """Every input, weight and output (and the ``wanted`` intermediates) by capture name,
        from one run of the framework (``GoldenUnavailableError`` when it cannot)."""

    def in_float64(self) -> Captured | None:
        """The program rebuilt with float64 weights and inputs (None: the framework does not
        recheck; ``Float64UnavailableError``: it cannot)."""

    def per_op_cases(self, skip: set[str], budget_bytes: int) -> Iterable[OpConfig] | None:
        """Each distinct op configuration (its nodes not in ``skip``), with the sizes the
        framework ran it at, tensors under ``budget_bytes`` (None: per-op verification is not
        available for this framework)."""


@dataclass(frozen=True)
class Lowered:
    """The lowered program of a capture, held once: ``result`` is the engine's
    ``_core.LoweringResult`` (ir, program, unsupported, random, coverage, tensor_phases, ...)."""

    captured: Captured
    result: _core.LoweringResult
    options: LoweringOptions

    @property
    def ir(self) -> str:
        return self.result.ir

    @property
    def program(self) -> _core.Program:
        """The checked ``solar.Program``: the one parse of the analysis (verification, the
        mode's estimate and the analysis read it)."""
        return self.result.program

    def coverage(self) -> dict | None:
        return None if self.captured.translation is not None else self.result.coverage


@dataclass(frozen=True)
class Verified:
    """A lowered program and its verification (``golden``: the data of a whole-program
    check)."""

    lowered: Lowered
    verification: Verification
    golden: dict[str, np.ndarray] = field(default_factory=dict)

    @staticmethod
    def skipped(lowered: Lowered, reason: str) -> Verified:
        """``lowered``, not verified ("not_run"; ``reason``: why, and what that means)."""
        return Verified(lowered, not_run(reason))


def lower(captured: Captured, options: LoweringOptions = LOWERING) -> Lowered:
    """The lowered program of ``captured`` (``_core.lower_capture_detailed``)."""
    if captured.translation is not None:  # written whole: nothing left out
        return Lowered(captured, _core.LoweringResult(captured.translation.ir), options)
    result = lower_detailed(captured.to_json(), options.allow_unsupported, options.disabled_rules)
    return Lowered(captured, result, options)


def verify(lowered: Lowered, options: VerificationOptions = VERIFICATION) -> Verified:
    """Checks the lowered program against the framework: the whole program on the framework's
    golden data, or each op alone (``options.mode``; "auto" by the budgets); a failed
    whole-program check is rechecked in float64 (``recheck_in_float64``)."""
    captured = lowered.captured
    if captured.translation is not None:
        return Verified(lowered, captured.translation.verification)
    if not options.enabled:
        return Verified.skipped(lowered, options.skipped or NO_VERIFY)
    if captured.twin is not None and options.mode == "auto":  # built without weights
        return Verified(lowered, verify_on_twin(lowered, options, captured.twin))
    mode, why = options.mode, f"{options.mode} verification requested"
    on_reduced = None
    if mode == "auto":
        mode, why = choose_mode(captured, lowered.result, options.budget_mb, options.budget_s)
        on_reduced, why = _on_reduced_workload(lowered, options, mode, why)
    golden: dict[str, np.ndarray] = {}
    if on_reduced is not None:
        verification = on_reduced
    elif mode == "whole_program":
        verification, golden = _verify_whole(lowered, options.budget_mb)
    else:
        verification = _verify_per_op(lowered, options.budget_mb, options.budget_s)
    notes = tuple(captured.golden_notes or ())
    return Verified(lowered, verification.replace(why=why, notes=notes), golden)


def analyse(verified: Verified, options: AnalysisOptions = ANALYSIS) -> Analysed:
    """The SOL report of a verified program (``_core.analyze`` on the lowering result: its
    program, and a training step's phases), on ``options.hw`` under ``options.policy`` (None:
    the capture's default policy)."""
    lowered = verified.lowered
    captured = lowered.captured
    document = captured.document
    sections = {
        "source": document.get("source"),
        "capture": capture_section(document),
        "coverage": lowered.coverage(),
        "verification": verified.verification,
        "agent": captured.agent,  # the parts the LLM agent wrote (None: no agent asked)
    }
    engine_options = options.core(captured.default_policy)
    core = analyze(lowered.result, options.hw, engine_options, sections)
    capture_json = "" if captured.translation is not None else captured.to_json()
    report = report_of(core, lowered.ir, capture_json, verified.golden)
    if captured.agent is not None:  # --llm, --llm-fallback: the summary names what it wrote
        report = AgentReport.of(report)
    return report


def run(
    capture: Callable[[], Captured],
    options: Options,
    stage_times: dict[str, float] | None = None,
    until: str = "analysed",
) -> Any:
    """The one sequence: ``capture()``, lower, verify, analyse, each stage timed into
    ``stage_times`` (``STAGES``). ``until``: the last stage made and returned,
    "captured" (``solar capture -o OUT.json``), "lowered" (``-o OUT.ir``), "verified" (``solar
    sol MODEL.py`` runs the C++ command on the verified program) or "analysed"."""
    if until not in UNTIL:
        raise ValueError(f"unknown stage '{until}' (valid: {', '.join(UNTIL)})")
    with timed(stage_times, "capture"):
        captured = capture()
    if until == "captured":
        return captured
    with timed(stage_times, "lowering"):
        lowered = lower(captured, options.lowering)
    if until == "lowered":
        return lowered
    with timed(stage_times, "verification"):
        verified = verify(lowered, options.verification)
    if until == "verified":
        return verified
    with timed(stage_times, "analysis"):
        return analyse(verified, options.analysis)


# ---------------------------------------------------------------------------------------------
# Verification helpers

NO_VERIFY = (
    "verification skipped (--no-verify): the lowered program was NOT checked against the "
    "framework; the numbers are unverified"
)


def _verify_whole(lowered: Lowered, budget_mb: float) -> tuple[Verification, dict]:
    """The whole program run on the framework's golden data (``check_whole``) and the data; a
    failed check rechecked in float64 (``_recheck_in_float64``)."""
    if not lowered.captured.has_data:
        raise AnalysisError("whole-program verification needs real inputs")
    verification, golden = check_whole(lowered.result, lowered.captured)
    if verification.status == "failed":
        verification = _recheck_in_float64(verification, lowered, golden, budget_mb)
    return verification, golden


def _on_reduced_workload(
    lowered: Lowered, options: VerificationOptions, mode: str, why: str
) -> tuple[Verification | None, str]:
    """The verification of a benchmark workload whose whole program is over the budgets
    (``mode`` "per_op") on a reduced workload of its definition: ``verify_on_twin`` with the
    reduced workload, whole, as the twin, and the full-size program per op, in place of per op
    alone. ``(None, why)`` when the capture has no reduced workload or its whole program fits
    (``why`` then says why none was made, where one was tried; else the reduced one's why)."""
    reduced = getattr(lowered.captured, "reduced", None)
    if reduced is None or mode != "per_op":
        return None, why
    try:
        twin = reduced()
    except AnalysisError as e:
        return None, f"{why}; no reduced workload ({e})"
    reason = f"{why}: verified on a reduced workload of the same definition"
    return verify_on_twin(lowered, options, lambda: twin, reason), reason


def verify_on_twin(
    lowered: Lowered,
    options: VerificationOptions,
    twin: Callable[[], tuple[Any, str]],
    why: str = "the model was built without its weights (larger built for real than "
    "--verify-budget-mb)",
) -> Verification:
    """The verification of a program built without weights on its reduced twin: the twin
    (``twin()``: its ``Captured``, with real weights, and what it is) lowered and verified as
    any program (whole when it fits, a failed check rechecked in float64), and the full-size
    program per op. The status is the worse of the two; the detail says exactly what ran; a
    twin that cannot be built says so (never a silent skip)."""
    try:
        twin_captured, what = twin()
    except AnalysisError as e:
        twin_v, what = not_run(f"{e}; the architecture was NOT run whole"), None
    else:
        twin_lowered = lower(twin_captured, lowered.options)
        twin_v = verify(twin_lowered, options).verification
    full = _verify_per_op(lowered, options.budget_mb, options.budget_s)
    order = ("passed", "partial", "not_verified", "not_run", "failed")
    status = max(twin_v.status, full.status, key=order.index)
    if status == "not_run" and "passed" in (twin_v.status, full.status):
        status = "partial"
    head = f"verified on {what}" if what is not None else "no reduced twin"
    detail = f"{head}: {twin_v.status} ({twin_v.detail}); per op at full size: "
    detail += f"{full.status} ({full.detail})"
    return Verification(
        status,
        "twin",
        detail,
        why=why,
        ops=full.ops if full.ops is not None else [],
        outputs=twin_v.outputs,
        not_compared=twin_v.not_compared,
        conditioning=twin_v.conditioning,
    )


def _recheck_in_float64(
    verification: Verification, lowered: Lowered, golden: dict, budget_mb: float
) -> Verification:
    """``recheck_in_float64`` with the outcome of ``float64_check`` (``verification`` as it is
    when the framework does not recheck), or why there is none."""
    captured = lowered.captured
    if not captured.rechecks_in_float64:
        return verification
    outcome: tuple[Verification, dict] | str | None = float64_impossible(captured.document)
    if outcome is None:
        try:
            outcome = float64_check(lowered, golden, budget_mb)
        except Exception as e:  # noqa: BLE001 - a diagnosis only: the reason is recorded
            outcome = failed_rebuild(e)
    return recheck_in_float64(verification, captured.document, outcome)


def float64_check(lowered: Lowered, golden: dict, budget_mb: float) -> tuple[Verification, dict]:
    """The whole-program check of ``lowered``'s capture rebuilt in float64
    (``Captured.in_float64``), lowered and run again, and the outputs whose allowance the
    framework's own conditioning widened (``conditioned_recheck``; ``golden``: the first
    check's data, whose outputs give the framework's own float32 error). A float64 program
    whose tensors exceed ``budget_mb`` (its float tensors at 8 bytes an element) is not run:
    ``Float64UnavailableError``, as when the program cannot be rebuilt."""
    captured = lowered.captured
    need = graph_bytes(captured.document, float_bytes=8)
    if need > budget_mb * 1e6:
        budget = format_bytes(budget_mb * 1e6)
        raise Float64UnavailableError(
            f"the float64 program would hold {format_bytes(need)} of tensors, over "
            f"the verification budget of {budget} (--verify-budget-mb)"
        )
    captured64 = captured.in_float64()
    reason = float64_capture_differs(captured.document, captured64.document)
    if reason is not None:
        raise Float64UnavailableError(reason)
    lowered64 = lower(captured64, lowered.options)
    golden64 = captured64.golden(recorded(lowered64.result))
    got64: dict[str, np.ndarray] = {}
    v64 = verify_whole(
        lowered64.result,
        captured64.document,
        golden64,
        lowered64.result,
        topk_indices(captured64.document),
        got64,
    )
    if v64.status != "failed":
        return v64, {}
    return conditioned_recheck(v64, captured.document, captured64.document, golden, golden64, got64)


def _verify_per_op(lowered: Lowered, budget_mb: float, budget_s: float) -> Verification:
    """Each distinct lowered op configuration alone at reduced size, as the capture's
    ``per_op_cases`` ran it, run by SOLAR (``check_op``: a size whose estimated executor time is
    over ``budget_s`` is refused, and the next one tried); "not_run" for a framework without
    it."""
    captured = lowered.captured
    framework = framework_name(captured.document)
    # Not checked alone: nodes without a rule, and random draws (their values are the
    # framework's, not computed by SOLAR).
    result = lowered.result
    skip = {u["node"] for u in result.unsupported} | {d["node"] for d in result.random}
    configs = captured.per_op_cases(skip, int(budget_mb * 1e6))
    if configs is None:
        return not_run(f"per-op verification is not available for {framework} captures", "per_op")
    disabled = lowered.options.disabled_rules
    return per_op_verification([check_op(c, disabled, budget_s) for c in configs], framework)
