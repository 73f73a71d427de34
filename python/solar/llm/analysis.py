"""``solar analyze --llm`` and ``--llm-fallback`` (docs/llm.md): the SOL report of a model file
whose IR comes, in whole or in part, from the LLM agent. The report's ``agent`` section lists
every part the agent wrote (docs/report.md)."""

from __future__ import annotations

import copy
import dataclasses
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from solar import _core, stages
from solar.llm.agent import report_entry, translate
from solar.llm.config import LLMConfig, LLMError
from solar.llm.tasks import op_task, program_task
from solar.options import DEFAULT_HW, DEFAULT_POLICIES, Options
from solar.stages import Translation, run
from solar.verify import GoldenUnavailableError, Verification

FRAGMENT_OP = "solar.ir_fragment"


@dataclass
class TranslatedProgram:
    """The Captured (``solar.stages``) of a model file the agent translated whole: a capture
    document with no nodes (the capture section says "llm"), and the verified program."""

    document: dict
    translation: Translation
    agent: list[dict]
    default_policy: str | None = None
    golden_notes: list[str] = field(default_factory=list)
    has_data: bool = False
    rechecks_in_float64: bool = False
    twin: None = None

    def to_json(self) -> str:
        from solar.document import to_json

        return to_json(self.document)

    def golden(self, wanted: Any) -> dict:
        raise GoldenUnavailableError("the agent's program was verified when it was written")

    def in_float64(self) -> None:
        return None

    def per_op_cases(self, *args: Any) -> None:
        return None


def translated(path: str, config: LLMConfig, log: Callable[[str], None] | None = None):
    """The model file translated by the agent (verified against the framework on the model's
    own inputs), as a Captured."""
    task, framework = program_task(path)
    t = translate(task, config, log=log)
    source = os.path.basename(path)
    name = {"PyTorch": "torch", "JAX": "jax"}[framework]
    detail = (
        f"{len(t.verification)} output(s) compared with {framework} on the same inputs "
        "(program written by the LLM agent)"
    )
    document = {
        "framework": name,
        "framework_version": _framework_version(framework),
        "capture_method": "llm",
        "source": source,
        "tensors": [],
        "nodes": [],
        "outputs": [],
    }
    verification = Verification("passed", "whole_program", detail, outputs=t.verification)
    return TranslatedProgram(
        document,
        Translation(t.ir, verification),
        [report_entry(t, "program", source, None)],
        DEFAULT_POLICIES.get(name),
    )


def analyze_translated(
    path: str,
    config: LLMConfig,
    hw: str = DEFAULT_HW,
    log: Callable[[str], None] | None = None,
    **options: Any,
) -> stages.Report:
    """The whole model file translated by the agent, then analysed (``options``:
    ``solar.options.Options.of``'s keywords)."""
    opts = Options.of(hw, **options).replace(program={"llm": "program", "llm_config": config})
    return run_llm(path, opts, log)


def run_llm(path: str, options: Options, log: Callable[[str], None] | None = None) -> stages.Report:
    """``solar analyze --llm`` (``options.program.llm`` "program": the agent writes the whole
    program) or ``--llm-fallback`` ("fallback": it writes each operator without a rule), under
    every other option, through ``solar.stages.run``."""
    from solar.llm.agent import TranslationError

    config = options.program.llm_config
    disabled = options.lowering.disabled_rules
    try:
        if options.program.llm == "program":
            return run(lambda: translated(path, config, log), options)
        return run(lambda: with_fallback(path, config, disabled, log), options)
    except TranslationError as e:  # its attempts were logged as they ran
        if e.last_feedback:
            print("last diagnostics:\n" + e.last_feedback, file=sys.stderr)
        raise


def progress(line: str) -> None:
    """The agent's progress, one line each, on stderr (``solar analyze --llm``)."""
    print(line, file=sys.stderr, flush=True)


def _framework_version(framework: str) -> str:
    """The framework's release (PyTorch's without its local build tag: 2.13.0, not 2.13.0+cpu),
    from its installed metadata: the framework itself is not imported here."""
    from importlib.metadata import version

    return version("jax" if framework == "JAX" else "torch").split("+")[0]


def analyze_with_fallback(
    path: str,
    config: LLMConfig,
    hw: str = DEFAULT_HW,
    log: Callable[[str], None] | None = None,
    **options: Any,
) -> stages.Report:
    """Capture and lower the model; every node without a lowering rule (or whose operator is in
    ``disabled_rules``) is translated by the agent on its own, verified against PyTorch's
    operator, and spliced in as a ``solar.ir_fragment`` node; then the whole program is verified
    and analysed as usual (``options``: ``solar.options.Options.of``'s keywords)."""
    opts = Options.of(hw, **options).replace(program={"llm": "fallback", "llm_config": config})
    return run_llm(path, opts, log)


def with_fallback(
    path: str, config: LLMConfig, disabled_rules: Any, log: Callable[[str], None] | None = None
):
    """The model file captured, each node without a rule replaced by the agent's verified
    fragment (``translate_unsupported``), as a Captured with the real model's golden data."""
    from solar.torch import _no_recapture, capture_file
    from solar.torch.capture import TorchCaptured

    cap, run_golden = capture_file(path, golden=True)
    golden = run_golden()
    document, entries = translate_unsupported(cap.document, config, list(disabled_rules), log)
    patched = dataclasses.replace(cap, document=document)
    return TorchCaptured(patched, _no_recapture, given=golden, agent=entries)


def translate_unsupported(
    document: dict,
    config: LLMConfig,
    disabled_rules: list[str],
    log: Callable[[str], None] | None = None,
) -> tuple[dict, list[dict]]:
    """The capture document with each node that has no lowering rule replaced by a verified
    ``solar.ir_fragment`` node, and the report's ``agent`` entries."""
    if not hasattr(_core, "lower_capture_detailed"):
        raise LLMError("this build of solar has no solar._core.lower_capture_detailed")
    from solar.document import to_json

    text = to_json(document)
    unsupported = _core.lower_capture_detailed(text, True, list(disabled_rules)).unsupported
    document = copy.deepcopy(document)
    nodes = {n["name"]: i for i, n in enumerate(document["nodes"])}
    entries = []
    for u in unsupported:
        node = document["nodes"][nodes[u["node"]]]
        task, bound, outputs = op_task(document, node)
        t = translate(task, config, log=log)
        document["nodes"][nodes[u["node"]]] = fragment_node(node, t.ir, bound, outputs)
        entries.append(report_entry(t, "node", node["name"], node["op"]))
    return document, entries


def fragment_node(node: dict, ir_text: str, bound: list[str], outputs: list[str]) -> dict:
    """A ``solar.ir_fragment`` node in place of ``node``: the program's inputs ``inK`` and
    outputs ``outK`` (in their declaration order) bound to the capture's tensors."""
    from solar import ir

    program = ir.parse(ir_text)
    ins = [n for n, role, _ in program.tensors if role in ("input", "weight")]
    outs = [n for n, role, _ in program.tensors if role == "output"]
    entry = {
        "name": node["name"],
        "op": FRAGMENT_OP,
        "args": {
            "program": ir_text,
            "inputs": [{"tensor": bound[int(n[2:])]} for n in ins],
            "replaces": node["op"],
        },
        "outputs": [outputs[int(n[3:])] for n in outs],
    }
    if "location" in node:
        entry["location"] = node["location"]
    return entry
