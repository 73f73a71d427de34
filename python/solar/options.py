"""The options of one analysis (docs/architecture.md), built once: ``Options`` (frozen) holds
four groups, the program (a forward, a training step or a serving step; the LLM agent's part),
the lowering, the verification and the analysis. It is made from keywords (``Options.of``,
``solar.analyze``) or from the command line (``solar.cli.options_of``); every rule between
options is checked when it is made (``_check``), once. Framework-free, and no numpy: the command
line builds it before anything heavy is imported.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

DEFAULT_HW = "H100-SXM"
DEFAULT_VERIFY_BUDGET_MB = 2048.0  # MB (1e6 bytes) of the captured graph's tensors
DEFAULT_VERIFY_BUDGET_S = 60.0  # estimated seconds of SOLAR's executor on the whole program
VERIFY_MODES = ("auto", "whole_program", "per_op")
# The optimizers of a training step (docs/training.md), for every framework.
OPTIMIZERS = ("sgd", "adam", "adamw")
PROGRAMS = ("forward", "train", "serve")
SERVE_PHASES = ("prefill", "decode")
LLM_MODES = ("program", "fallback")  # --llm, --llm-fallback
# The precision policy of a framework's programs when none is given (docs/precision.md).
DEFAULT_POLICIES = {"jax": "jax-default"}

__all__ = [
    "KEYWORDS",
    "SERVING_KEYWORDS",
    "SOL_KEYWORDS",
    "OPTIMIZERS",
    "AnalysisError",
    "AnalysisOptions",
    "LoweringOptions",
    "Options",
    "ProgramOptions",
    "VerificationOptions",
]


class ArgumentParser(argparse.ArgumentParser):
    """The commands' parser (``solar analyze``, ``solar capture``, ``solar sweep``): a usage
    error is one line (not argparse's usage block), exit code 2 (the commands make it 1)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


class AnalysisError(ValueError):
    """A user error in analysis: a model that cannot be captured, an op with no lowering, an
    unknown device, options that exclude each other. The message is one line."""


# ---------------------------------------------------------------------------------------------
# Options


@dataclass(frozen=True)
class ProgramOptions:
    """What program of the model is analysed: its forward, one training step (``train``: the
    loss, its backward and ``optimizer``'s update) or one serving step (``serve``: ``phase`` at
    each of ``batches`` x ``context``); ``llm``: the LLM agent writes the whole program
    ("program") or the operators without a rule ("fallback")."""

    kind: str = "forward"
    optimizer: str | None = None
    loss: Callable[..., Any] | None = None
    phase: str | None = None
    batches: tuple[int, ...] = (1,)
    context: int = 1024
    llm: str | None = None
    llm_config: Any = None  # solar.llm.config.LLMConfig


@dataclass(frozen=True)
class LoweringOptions:
    """``allow_unsupported``: nodes without a rule are left out and listed in the report's
    coverage (their outputs fed from the framework's run); ``disabled_rules``: ops treated as
    having no rule."""

    allow_unsupported: bool = False
    disabled_rules: tuple[str, ...] = ()


@dataclass(frozen=True)
class VerificationOptions:
    """``enabled`` False: verification "not_run", ``skipped`` saying why (None: ``--no-verify``'s
    words); ``mode``: "auto" (whole program when it fits ``budget_mb`` and ``budget_s``, else per
    op), "whole_program" or "per_op"."""

    enabled: bool = True
    mode: str = "auto"
    budget_mb: float = DEFAULT_VERIFY_BUDGET_MB
    budget_s: float = DEFAULT_VERIFY_BUDGET_S
    skipped: str | None = None


# The keywords of ``_core.AnalysisOptions`` that ``AnalysisOptions`` names (the rest ride in
# ``extra``).
_NAMED_KEYWORDS = (
    "fidelity",
    "routing",
    "cache_state",
    "kernel_floor",
    "parallel",
    "devices",
    "measured_ms",
    "measured_on",
    "measured_method",
    "measured_nodes",
    "top",
    "serving",
)


@dataclass(frozen=True)
class AnalysisOptions:
    """The device, the precision policy (None: the adapter's default) and the keywords of the
    engine's analysis options (``_core.AnalysisOptions``: docs/report.md; ``top``: the groups and
    ops a report shows; ``serving``: a serving step, whose outputs stay on the devices that
    write them); ``extra``: its other keywords (``capacity``, ``level``, ``sizes``, ``sets``),
    as ``(name, value)`` pairs."""

    hw: str = DEFAULT_HW
    policy: str | None = None
    fidelity: str | None = None
    routing: str | None = None
    cache_state: str | None = None
    kernel_floor: str | None = None
    parallel: str | None = None
    devices: int | None = None
    measured_ms: float | None = None
    measured_on: str | None = None
    measured_method: str | None = None
    measured_nodes: str | None = None
    top: int | None = None
    serving: bool | None = None
    extra: tuple[tuple[str, Any], ...] = ()

    def keywords(self) -> dict[str, Any]:
        """The keywords of ``_core.AnalysisOptions`` (those given only)."""
        out = {k: getattr(self, k) for k in _NAMED_KEYWORDS if getattr(self, k) is not None}
        if "parallel" in out or "devices" in out:
            out["parallel"], out["devices"] = self.parallel or "", self.devices or 0
        out.update(dict(self.extra))
        return out

    def core(self, default_policy: str | None = None) -> Any:
        """The engine's options object (``_core.AnalysisOptions``): these, under ``policy`` (None:
        ``default_policy``, the adapter's; None too: the engine's default)."""
        from solar import _core

        return _core.AnalysisOptions(policy=self.policy or default_policy or "", **self.keywords())

    @staticmethod
    def of(hw: str = DEFAULT_HW, policy: str | None = None, **keywords: Any) -> AnalysisOptions:
        """From ``_core.AnalysisOptions``'s keywords (``sol_options``)."""
        named = {k: keywords.pop(k) for k in _NAMED_KEYWORDS if k in keywords}
        return AnalysisOptions(hw, policy, **named, extra=tuple(sorted(keywords.items())))


@dataclass(frozen=True)
class Options:
    """Every option of one analysis, in four groups; the rules between them are checked when
    it is made (one line each, ``AnalysisError``)."""

    program: ProgramOptions = ProgramOptions()
    lowering: LoweringOptions = LoweringOptions()
    verification: VerificationOptions = VerificationOptions()
    analysis: AnalysisOptions = AnalysisOptions()

    def __post_init__(self) -> None:
        _check(self)

    def replace(self, **groups: Any) -> Options:
        """A copy with some groups replaced (each a group, or a dict of its fields)."""
        new = {}
        for name, value in groups.items():
            old = getattr(self, name)
            new[name] = dataclasses.replace(old, **value) if isinstance(value, dict) else value
        return dataclasses.replace(self, **new)

    # The keywords of ``solar.analyze`` and ``solar.analyze_file`` (``OPTIONS``).
    @staticmethod
    def of(hw: str = DEFAULT_HW, **options: Any) -> Options:
        """From the keywords of ``solar.analyze`` (``KEYWORDS``; another is a TypeError that
        lists them)."""
        unknown = sorted(set(options) - set(KEYWORDS))
        if unknown:
            raise TypeError(
                f"unknown option(s) {', '.join(unknown)} (valid: {', '.join(KEYWORDS)})"
            )
        get = options.get
        sol = dict(get("sol_options") or {})
        for name in SOL_KEYWORDS:
            if get(name) is not None:
                sol[name] = options[name]
        fidelity = get("fidelity") or sol.pop("fidelity", None)
        serve = get("serve")
        batches = get("batches") or (_given(options, "batch", 1),)
        program = ProgramOptions(
            kind="train" if get("train") else ("serve" if serve else "forward"),
            optimizer=get("optimizer"),
            loss=get("loss"),
            phase=serve,
            batches=tuple(batches),
            context=_given(options, "context", 1024),
        )
        return Options(
            program=program,
            lowering=LoweringOptions(
                bool(get("allow_unsupported")), tuple(get("disabled_rules") or ())
            ),
            verification=VerificationOptions(
                True if get("verify") is None else bool(options["verify"]),
                get("verify_mode") or "auto",
                _given(options, "verify_budget_mb", DEFAULT_VERIFY_BUDGET_MB),
                _given(options, "verify_budget_s", DEFAULT_VERIFY_BUDGET_S),
            ),
            analysis=AnalysisOptions.of(hw, get("policy"), fidelity=fidelity, **sol),
        )


# ``Options.of``'s keywords (``source`` and ``stage_times`` are the entry points', not options).
KEYWORDS = (
    "policy",
    "allow_unsupported",
    "disabled_rules",
    "verify",
    "verify_mode",
    "verify_budget_mb",
    "verify_budget_s",
    "fidelity",
    "sol_options",
    "train",  # a training step (docs/training.md)
    "optimizer",
    "loss",
    "serve",  # a serving step (docs/serving.md): "prefill" or "decode"
    "batch",
    "batches",
    "context",
    "cache_state",  # "cold" (the default) or "warm" (docs/cache-state.md)
    "kernel_floor",  # "on" (the default) or "off": the one-kernel floor (docs/cache-state.md)
    "routing",
    "parallel",
    "devices",
)
# The keywords of ``KEYWORDS`` that are keywords of the analysis itself
# (``_core.AnalysisOptions``): also accepted inside ``sol_options``, where ``Options.of`` folds
# them.
SOL_KEYWORDS = ("cache_state", "kernel_floor", "routing", "parallel", "devices")
# The keywords of ``KEYWORDS`` that describe a serving step (docs/serving.md).
SERVING_KEYWORDS = ("serve", "batch", "batches", "context")


def _check(options: Options) -> None:
    """Every rule between options, once (one line each)."""
    p, v, a = options.program, options.verification, options.analysis
    if p.kind not in PROGRAMS:
        raise AnalysisError(f"unknown program '{p.kind}' (valid: {', '.join(PROGRAMS)})")
    if p.optimizer is not None and p.kind != "train":
        raise AnalysisError("--optimizer needs --train (an optimizer updates a training step)")
    if p.loss is not None and p.kind != "train":
        raise AnalysisError("a loss function needs train=True")
    check_optimizer(p.optimizer)
    if p.loss is not None and not callable(p.loss):
        raise AnalysisError(f"the loss must be a function of (output, *inputs), not {p.loss!r}")
    if p.llm is not None and p.llm not in LLM_MODES:
        raise AnalysisError(f"unknown LLM mode '{p.llm}' (valid: {', '.join(LLM_MODES)})")
    if p.kind == "train" and p.llm is not None:
        raise AnalysisError(
            "--train captures the framework's joint graph; it cannot be given with --llm"
        )
    if p.kind == "serve":
        if p.phase not in SERVE_PHASES:
            raise AnalysisError(
                f"unknown serving phase '{p.phase}' (valid: {', '.join(SERVE_PHASES)})"
            )
        refused_with_serve(
            ("--llm", p.llm is not None),
            ("--measure", a.measured_method is not None),
            ("--measured-ms", a.measured_ms is not None),
        )
        if a.parallel is not None or a.devices is not None:
            serving_tp(a.devices or 0, a.parallel or "")
        if not p.batches:
            raise AnalysisError("no batch size to analyse")
        for b in p.batches:
            if b < 1:
                raise AnalysisError(f"--batch must be at least 1, not {b}")
        if p.context < 1:
            raise AnalysisError(f"--context must be at least 1, not {p.context}")
    if v.mode not in VERIFY_MODES:
        raise AnalysisError(f"unknown verify mode '{v.mode}' (valid: {', '.join(VERIFY_MODES)})")
    if a.devices is not None and a.devices < 1:
        raise AnalysisError(f"--devices must be at least 1, not {a.devices}")
    check_device(a.hw)
    # the policy and the layout too: a wrong one costs no capture (minutes on a large model)
    if a.policy is not None:
        _engine_check("check_policy", a.policy)
    if p.kind != "serve" and (a.parallel is not None or a.devices is not None):
        _engine_check("check_layout", a.devices or 0, a.parallel or "")


def check_device(hw: str) -> None:
    """A device as the analysis takes it (a built-in name or a .yaml file), checked before
    anything is captured: an unknown one is one line naming the close built-in names and the
    list (``AnalysisError``)."""
    _engine_check("check_device", hw)


def _engine_check(name: str, *args: Any) -> None:
    """``_core.NAME(*args)``, one of the engine's checks of an option; its one-line refusal
    (an IRError, a ValueError) as an ``AnalysisError``."""
    from solar import _core

    try:
        getattr(_core, name)(*args)
    except ValueError as e:
        raise AnalysisError(str(e)) from None


def _given(options: dict, name: str, default: Any) -> Any:
    return default if options.get(name) is None else options[name]


def serving_tp(devices: int, parallel: str) -> int:
    """The tensor-parallel degree of ``--devices --parallel`` for ``--serve`` (docs/serving.md,
    "Serving in parallel": tp only); a one-line error for any other layout."""
    from solar import _core

    try:
        return int(_core.serving_tp(devices, parallel))
    except ValueError as e:
        raise AnalysisError(str(e)) from None


def refused_with_serve(*given: tuple[str, bool]) -> None:
    """The options a serving step does not take (docs/serving.md): the first given is a
    one-line error."""
    refused = [name for name, on in given if on]
    if refused:
        raise AnalysisError(f"{refused[0]} cannot be given with --serve")


# The analysis options a suite (``solar bench``, ``solar sweep``) passes unchanged to ``solar
# analyze`` (or ``solar sol``) in each child: (flag, choices; None: any value).
CHILD_FLAGS = (
    ("--fidelity", None),
    ("--routing", ("balanced", "concentrated")),
    ("--cache-state", ("cold", "warm")),
    ("--kernel-floor", ("on", "off")),
)


# What each of ``CHILD_FLAGS`` does in the child, for the suite's ``--help``.
_CHILD_HELP = {
    "--fidelity": "unfused, fused, cache (the cache-aware model) or all (the default: the three; "
    "docs/fidelities.md)",
    "--routing": "a top-k router's expert-weight reads: concentrated (the default: the fewest any "
    "routing reads) or balanced (every index distinct; docs/einsum.md)",
    "--cache-state": "cold (the default: every byte from DRAM) or warm (what fits in L2 comes "
    "from L2; docs/cache-state.md)",
    "--kernel-floor": "on (the default): each unfused operation, and the fused and cache-aware "
    "program, takes at least the device's min_kernel_s; off: no floor (docs/cache-state.md)",
}


def add_child_arguments(parser: Any, skip: tuple[str, ...] = ()) -> None:
    """``CHILD_FLAGS`` (but ``skip``) as options of a suite's command line, passed to each child
    unchanged; ``parser``: an ``argparse`` parser or one of its argument groups (whose title
    says so)."""
    for flag, choices in CHILD_FLAGS:
        if flag not in skip:
            parser.add_argument(flag, choices=choices, help=_CHILD_HELP[flag])


def child_flags(args: Any, skip: tuple[str, ...] = ()) -> list[str]:
    """The ``CHILD_FLAGS`` given on a suite's command line, as the children's arguments."""
    flags: list[str] = []
    for flag, _ in CHILD_FLAGS:
        value = getattr(args, flag[2:].replace("-", "_"), None)
        if flag not in skip and value is not None:
            flags += [flag, value]
    return flags


def check_optimizer(optimizer: str | None) -> None:
    """A one-line error for an optimizer that is not one of ``OPTIMIZERS`` (None: no update)."""
    if optimizer is not None and optimizer not in OPTIMIZERS:
        raise AnalysisError(f"unknown optimizer '{optimizer}' (valid: {', '.join(OPTIMIZERS)})")
