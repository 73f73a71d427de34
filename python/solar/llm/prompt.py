"""The prompts of the LLM agent, and extraction of the IR program from an answer (docs/llm.md).

The system message is the IR reference (docs/ir.md, without its "Canonical form" section, which
is about printing) and the rules of the answer. The user message states the task: the source
(a model file, or one operator's schema and arguments), the names, dtypes and shapes of the
program's inputs, weights and outputs, and how the answer is checked.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from solar.llm.config import LLMError

# Sections of docs/ir.md left out of the prompt: how programs print, not how to write them.
_SKIPPED_SECTIONS = ("## Canonical form",)

ANSWER_RULES = """\
You translate programs into SOLAR's Affine Loop IR, specified below. Reply with the complete IR
program in one fenced code block that starts with ```ir and nothing after it. Your answer is
data: SOLAR parses it as IR, checks it and runs it with its own executor on the same inputs as
the original program, then compares every output. When something is wrong you get the
diagnostics (file:line:col) or the per-output errors; then reply with the whole corrected
program, again in one ```ir block.
"""


@dataclass(frozen=True)
class Tensor:
    """A tensor of the contract: its name in the IR program, dtype and shape, and what it is in
    the original program (e.g. the state_dict key, or the operator's argument name)."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    origin: str = ""

    def decl(self, role: str) -> str:
        return f"{role} {self.name} : {self.dtype}[{', '.join(map(str, self.shape))}]"


def ir_reference() -> str:
    """docs/ir.md as it goes in the prompt: from the package (``solar/docs/ir.md``) or the source
    tree, or the file named by ``$SOLAR_IR_DOC``."""
    here = Path(__file__).resolve().parent
    candidates = [os.environ.get("SOLAR_IR_DOC", "")]
    candidates += [here.parent / "docs" / "ir.md", here.parents[2] / "docs" / "ir.md"]
    for candidate in candidates:
        if candidate and os.path.isfile(candidate):
            return _strip_sections(Path(candidate).read_text(encoding="utf-8"))
    raise LLMError("the IR reference docs/ir.md was not found (set SOLAR_IR_DOC to its path)")


def _strip_sections(text: str) -> str:
    out, skipping = [], False
    for line in text.splitlines():
        if line.startswith("## "):
            skipping = line.startswith(_SKIPPED_SECTIONS)
        if not skipping:
            out.append(line)
    return "\n".join(out).strip() + "\n"


def system_message() -> dict:
    return {"role": "system", "content": ANSWER_RULES + "\n" + ir_reference()}


def _contract(inputs: list[Tensor], weights: list[Tensor], outputs: list[Tensor]) -> str:
    lines = ["Inputs (declare each one the program reads, with exactly this name, dtype, shape):"]
    lines += [f"  {t.decl('input')}" + (f"    # {t.origin}" if t.origin else "") for t in inputs]
    if weights:
        lines.append("Weights (declare only those the program reads):")
        lines += [f"  {t.decl('weight')}    # {t.origin}" for t in weights]
    lines.append("Outputs (declare all of them, in this order, and write every element):")
    lines += [f"  {t.decl('output')}" + (f"    # {t.origin}" if t.origin else "") for t in outputs]
    return "\n".join(lines)


def program_prompt(
    source: str,
    filename: str,
    framework: str,
    inputs: list[Tensor],
    weights: list[Tensor],
    outputs: list[Tensor],
) -> list[dict]:
    """The messages asking for a whole model file in IR."""
    lang = "python"
    if not weights:
        weight_rule = ""
    elif framework == "JAX":
        weight_rule = (
            "- weights: the Flax model's variables, named by their path (without a leading "
            "'params') joined with '_'; each one's path is in the comment after it\n"
        )
    else:
        weight_rule = (
            "- weights: the model's parameters and buffers, named by their state_dict key with "
            "every '.' replaced by '_', with their values before the call (the module keeps its "
            "own mode: training unless the file says otherwise)\n"
        )
    task = f"""\
Translate the {framework} program below (file {filename}) into one Affine Loop IR program that
computes the same outputs. The program is called as in the file: the model is built from
get_init_inputs() and called on get_inputs() (or forward(*get_inputs())).

Contract:
- inputs: the tensors of get_inputs(), flattened in order, named in0, in1, ...
{weight_rule}- outputs: the tensors the call returns, flattened in order, named out0, out1, ...
- use the shapes below as constants (you may declare sizes for them); intermediates are
  `tensor` declarations.

{_contract(inputs, weights, outputs)}

Source of {filename}:
```{lang}
{source.rstrip()}
```
"""
    return [system_message(), {"role": "user", "content": task}]


def op_prompt(
    op: str,
    schema: str,
    arguments: list[str],
    inputs: list[Tensor],
    outputs: list[Tensor],
) -> list[dict]:
    """The messages asking for one operator call in IR. ``arguments`` are lines
    ``name = value`` (a tensor argument's value names its input)."""
    args = "\n".join(f"  {a}" for a in arguments) or "  (none)"
    task = f"""\
Translate one call of the PyTorch ATen operator {op} into an Affine Loop IR program that
computes the same outputs.

Schema: {schema}
Arguments of this call:
{args}

Contract:
- inputs: the tensor arguments, in the order above, named in0, in1, ...
- outputs: the tensors the operator returns, in order, named out0, out1, ...
- the other arguments are constants of this call: write them into the program.

{_contract(inputs, [], outputs)}
"""
    return [system_message(), {"role": "user", "content": task}]


# ---------------------------------------------------------------------------------------------
# Extraction

_THINK = re.compile(r"<think>.*?(</think>|\Z)", re.S)
# a fence line (``` or ~~~, with an optional tag), the body, and the same fence closing it
_FENCE = re.compile(
    r"^[ \t]*(`{3,}|~{3,})[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)^[ \t]*\1[ \t]*$", re.S | re.M
)
_IR_TAGS = ("ir", "solar", "solar-ir", "affine")
_FIRST_ITEM = re.compile(r"^[ \t]*(size|input|weight|output|tensor|kernel|repeat)\b", re.M)


def extract_ir(answer: str) -> str | None:
    """The IR program of an answer: the last fenced block tagged ``ir`` (or ``solar``), else the
    last fenced block, else (no fence) the text from the first line that starts a declaration or
    a kernel. Reasoning between ``<think>`` tags is dropped first. None when nothing is left."""
    text = _THINK.sub("", answer)
    blocks = [(m.group(2).lower(), m.group(3)) for m in _FENCE.finditer(text)]
    tagged = [body for tag, body in blocks if tag in _IR_TAGS]
    if tagged or blocks:
        body = (tagged or [b for _, b in blocks])[-1]
        return body.strip() + "\n" if body.strip() else None
    start = _FIRST_ITEM.search(text)
    if not start:
        return None
    head = text[: start.start()].split("\n")[:-1]  # the lines above the first item
    comments: list[str] = []
    while head and head[-1].strip().startswith("#"):  # comments just above it are kept
        comments.insert(0, head.pop())
    return "\n".join([*comments, text[start.start() :].strip()]) + "\n"
