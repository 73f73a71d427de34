"""``solar analyze --llm`` and ``--llm-fallback`` (docs/llm.md): the SOL report of a model file
whose IR comes, in whole or in part, from the LLM agent. The report's ``agent`` section lists
every part the agent wrote (docs/report.md)."""

from __future__ import annotations

import copy
import dataclasses
import os
from collections.abc import Callable
from typing import Any

from solar import _core, pipeline
from solar.llm.agent import report_entry, translate
from solar.llm.config import LLMConfig, LLMError
from solar.llm.tasks import op_task, program_task

FRAGMENT_OP = "solar.ir_fragment"


def analyze_translated(
    path: str,
    config: LLMConfig,
    hw: str = pipeline.DEFAULT_HW,
    policy: str | None = None,
    log: Callable[[str], None] | None = None,
) -> pipeline.Report:
    """The whole model file translated by the agent (verified against the framework on the
    model's own inputs), then analysed."""
    task, framework = program_task(path)
    t = translate(task, config, log=log)
    source = os.path.basename(path)
    names = {"PyTorch": "torch", "JAX": "jax"}
    detail = (
        f"{len(t.verification)} output(s) compared with {framework} on the same inputs "
        "(program written by the LLM agent)"
    )
    core = pipeline.sol_report(
        t.ir,
        hw,
        policy,
        source=source,
        capture={
            "framework": names[framework],
            "framework_version": _framework_version(framework),
            "method": "llm",
            "source": source,
        },
        verification={
            "status": "passed",
            "mode": "whole_program",
            "detail": detail,
            "outputs": t.verification,
        },
    )
    report = pipeline.report_of(core, t.ir)
    report.data["agent"] = [report_entry(t, "program", source, None)]
    return AgentReport(**{f.name: getattr(report, f.name) for f in dataclasses.fields(report)})


class AgentReport(pipeline.Report):
    """A Report whose summary starts with the parts the agent wrote."""

    def summary(self) -> str:
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
        return "".join(line + "\n" for line in lines) + super().summary()


def _framework_version(framework: str) -> str:
    if framework == "JAX":
        import jax

        return jax.__version__
    import torch

    return torch.__version__.split("+")[0]


def analyze_with_fallback(
    path: str,
    config: LLMConfig,
    hw: str = pipeline.DEFAULT_HW,
    policy: str | None = None,
    disabled_rules: list[str] | None = None,
    log: Callable[[str], None] | None = None,
    **options: Any,
) -> pipeline.Report:
    """Capture and lower the model; every node without a lowering rule (or whose operator is in
    ``disabled_rules``) is translated by the agent on its own, verified against PyTorch's
    operator, and spliced in as a ``solar.ir_fragment`` node; then the whole program is verified
    and analysed as usual (``options``: those of ``pipeline.analyze_capture``)."""
    from solar.capture import capture, load_model_file

    model, inputs = load_model_file(path)
    cap = capture(model, inputs, source=os.path.basename(path))
    golden = cap.golden(model, inputs)
    document, entries = translate_unsupported(cap.document, config, disabled_rules or [], log)
    patched = dataclasses.replace(cap, document=document)
    report = pipeline.analyze_capture(patched, golden, hw, policy, **options)
    report.data["agent"] = entries
    return AgentReport(**{f.name: getattr(report, f.name) for f in dataclasses.fields(report)})


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
    unsupported = _core.lower_capture_detailed(text, True, list(disabled_rules))["unsupported"]
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
