"""The translation loop (docs/llm.md): prompt -> answer -> extract the IR -> parse and check ->
run on the golden inputs -> compare with the golden outputs -> feed the problem back -> repeat,
up to ``max_attempts`` answers and ``token_budget`` tokens. A translation succeeds only when
every output passes ``solar.verify.whole.compare_output``. The answer is data: it is parsed as IR
and run by SOLAR's executor; nothing the model writes is executed as Python.

Verified translations are cached under ``config.cache_path()`` by a content hash of the task
(source, names, dtypes and shapes, SOLAR's version); a cached program is verified again before
it is used. With ``config.offline`` only the cache is used.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np

from solar import _core, ir
from solar._files import write_atomic
from solar.llm.client import ChatClient
from solar.llm.config import LLMConfig, LLMError
from solar.llm.prompt import extract_ir
from solar.verify.whole import compare_output

CACHE_FORMAT = 1

_FIX = "Fix it and reply with the complete corrected program in one ```ir block."


@dataclass
class Task:
    """What to translate and how to verify it.

    ``feed``: every input and weight the program may read, by IR name; ``expected``: every
    output, by IR name, as (SOLAR dtype, array); ``key``: what identifies the task in the cache
    (JSON-serialisable: the source and the contract's names, dtypes and shapes)."""

    label: str  # "model.py", or "node 'gelu' (aten.gelu.default)"
    messages: list[dict]
    feed: dict[str, np.ndarray]
    expected: dict[str, tuple[str, np.ndarray]]
    key: dict
    feed_dtypes: dict[str, str] = field(default_factory=dict)  # SOLAR dtype of each feed entry


@dataclass
class Attempt:
    number: int
    outcome: str  # no_program, invalid, contract, run_error, mismatch, verified
    prompt_tokens: int
    completion_tokens: int
    problem: str  # one line ("" when verified)
    feedback: str  # what was sent back ("" when verified)
    answer: str


@dataclass
class Translation:
    label: str
    ir: str  # canonical text of the verified program
    cached: bool
    key: str
    verification: list[dict]  # compare_output of each output
    attempts: list[Attempt] = field(default_factory=list)
    model: str | None = None

    @property
    def prompt_tokens(self) -> int:
        return sum(a.prompt_tokens for a in self.attempts)

    @property
    def completion_tokens(self) -> int:
        return sum(a.completion_tokens for a in self.attempts)


class TranslationError(LLMError):
    """No verified translation: ``attempts`` holds every attempt, ``last_feedback`` the last
    diagnostics in full."""

    def __init__(self, message: str, attempts: list[Attempt], last_feedback: str = "") -> None:
        super().__init__(message)
        self.attempts = attempts
        self.last_feedback = last_feedback


def translate(
    task: Task,
    config: LLMConfig,
    client: ChatClient | None = None,
    log: Callable[[str], None] | None = None,
) -> Translation:
    """Runs the loop for ``task``; returns a verified Translation or raises TranslationError
    (LLMError for an endpoint that fails). ``log`` receives one line per attempt."""
    key = cache_key(task.key)
    if config.cache or config.offline:
        cached = _load_cached(task, config, key)
        if cached is not None:
            return cached
    if config.offline:
        raise TranslationError(
            f"{task.label}: no cached translation (key {key[:16]}) in {config.cache_path()}, "
            "and --offline is set",
            [],
        )
    client = client or ChatClient(config)
    messages = list(task.messages)
    attempts: list[Attempt] = []
    used = 0
    for number in range(1, config.max_attempts + 1):
        if used >= config.token_budget:
            raise TranslationError(
                f"{task.label}: token budget exhausted: {used} of {config.token_budget} tokens "
                f"used in {len(attempts)} attempt(s); last problem: {attempts[-1].problem}",
                attempts,
                attempts[-1].feedback,
            )
        reply = client.complete(messages)
        used += reply.prompt_tokens + reply.completion_tokens
        file = f"attempt{number}.ir"
        outcome, problem, feedback, verification, ir_text = check_answer(reply.content, task, file)
        if outcome != "verified" and reply.finish_reason == "length":
            feedback = (
                f"Your answer was cut off at the limit of {config.max_tokens} tokens; "
                "write a shorter program.\n" + feedback
            )
        attempt = Attempt(
            number,
            outcome,
            reply.prompt_tokens,
            reply.completion_tokens,
            problem,
            feedback,
            reply.content,
        )
        attempts.append(attempt)
        if log:
            log(f"{task.label}: {_attempt_line(attempt)}")
        if outcome == "verified":
            result = Translation(
                task.label,
                ir.format_ir(ir_text),
                False,
                key,
                verification,
                attempts,
                config.model,
            )
            if config.cache:
                _store(config, key, task, result)
            return result
        messages += [
            {"role": "assistant", "content": reply.content},
            {"role": "user", "content": feedback},
        ]
    raise TranslationError(
        f"{task.label}: no verified translation after {len(attempts)} attempt(s) "
        f"(max_attempts {config.max_attempts}); last problem: {attempts[-1].problem}",
        attempts,
        attempts[-1].feedback,
    )


def _attempt_line(a: Attempt) -> str:
    tokens = f"{a.prompt_tokens} prompt + {a.completion_tokens} completion tokens"
    detail = f": {a.problem}" if a.problem else ""
    return f"attempt {a.number}: {a.outcome} ({tokens}){detail}"


# ---------------------------------------------------------------------------------------------
# Checking one answer


def check_answer(answer: str, task: Task, file: str) -> tuple[str, str, str, list[dict], str]:
    """(outcome, problem, feedback, verification, ir_text) of one answer."""
    ir_text = extract_ir(answer)
    if ir_text is None:
        feedback = (
            "I found no IR program in your answer. Reply with the complete program in one "
            "fenced block that starts with ```ir."
        )
        return "no_program", "no IR program in the answer", feedback, [], ""
    try:
        program = _core.parse(ir_text, file)
        ir.check(program)
    except _core.IRError as e:
        lines = list(getattr(e, "diagnostics", None) or [str(e)])
        feedback = "Your program is not valid IR:\n" + "\n".join(lines) + "\n" + _FIX
        return "invalid", lines[0], feedback, [], ir_text
    problems = _contract_problems(program, task)
    if problems:
        feedback = (
            "Your program does not follow the contract:\n"
            + "\n".join(f"- {p}" for p in problems)
            + "\n"
            + _FIX
        )
        return "contract", problems[0], feedback, [], ir_text
    declared = {name for name, role, _ in program.tensors if role in ("input", "weight")}
    try:
        got = ir.run(program, {k: v for k, v in task.feed.items() if k in declared})
    except _core.IRError as e:
        feedback = (
            "Your program failed when run on the original program's inputs:\n"
            + str(e)
            + "\n"
            + _FIX
        )
        return "run_error", str(e), feedback, [], ir_text
    verification = [
        compare_output(name, dtype, np.asarray(got[name]), expected)
        for name, (dtype, expected) in task.expected.items()
    ]
    failed = [v for v in verification if not v["passed"]]
    if not failed:
        return "verified", "", "", verification, ir_text
    lines = [
        _mismatch_line(v, np.asarray(got[v["name"]]), task.expected[v["name"]][1])
        for v in verification
    ]
    feedback = (
        "Your program runs, but its outputs differ from the original program's on the same "
        "inputs (an element passes when |got - expected| <= atol * max(1, max|expected|) + "
        "rtol * |expected|):\n" + "\n".join(lines) + "\n" + _FIX
    )
    problem = "; ".join(line.removeprefix("- ") for line in lines if "MISMATCH" in line)
    return "mismatch", problem, feedback, verification, ir_text


def _contract_problems(program: _core.Program, task: Task) -> list[str]:
    problems = []
    declared = {name: (role, dtype) for name, role, dtype in program.tensors}
    shapes = {}
    if any(role in ("input", "weight") for role, _ in declared.values()):
        try:
            shapes = {k: v.shape for k, v in ir.random_inputs(program).items()}
        except _core.IRError as e:
            return [str(e)]
    for name, (role, dtype) in declared.items():
        if role in ("input", "weight"):
            if name not in task.feed:
                valid = ", ".join(sorted(task.feed)) or "none"
                problems.append(f"{role} '{name}' is not one of the contract's (valid: {valid})")
                continue
            want_dtype = task.feed_dtypes.get(name)
            want_shape = tuple(task.feed[name].shape)
            if (want_dtype and dtype != want_dtype) or tuple(shapes.get(name, ())) != want_shape:
                problems.append(
                    f"{role} '{name}' is declared {dtype}{list(shapes.get(name, ()))} but it is "
                    f"{want_dtype}{list(want_shape)}"
                )
        elif role == "output" and name not in task.expected:
            problems.append(
                f"output '{name}' is not one of the contract's outputs "
                f"({', '.join(task.expected)}); declare it as `tensor`"
            )
    for name, (dtype, _expected) in task.expected.items():
        role_dtype = declared.get(name)
        if role_dtype is None or role_dtype[0] != "output":
            problems.append(f"output '{name}' is not declared as an output")
        elif role_dtype[1] != dtype:
            problems.append(f"output '{name}' is declared {role_dtype[1]} but it is {dtype}")
    return problems


def _err(value: float | None) -> str:
    """An error of a comparison, or "undefined" where it is no number (its ``err_reason``)."""
    return "undefined" if value is None else f"{value:.3g}"


def _mismatch_line(v: dict, got: np.ndarray, expected: np.ndarray) -> str:
    head = f"- {v['name']} {v['dtype']}{v['shape']}: "
    if v.get("error"):
        return head + v["error"] + " MISMATCH"
    reason = f" ({v['err_reason']})" if v.get("err_reason") else ""
    if v["passed"]:
        return head + f"max_abs_err={_err(v['max_abs_err'])}{reason} ok"
    text = (
        head + f"max_abs_err={_err(v['max_abs_err'])} max_rel_err={_err(v['max_rel_err'])}"
        f"{reason} (rtol={v['rtol']:g} atol={v['atol']:g}) MISMATCH"
    )
    try:
        g = got.astype(np.float64)
        e = expected.astype(np.float64)
        diff = np.where((g == e) | (np.isnan(g) & np.isnan(e)), 0.0, np.abs(g - e))
        diff = np.where(np.isnan(diff), np.inf, diff)
        at = np.unravel_index(int(np.argmax(diff)), diff.shape) if diff.size else ()
        index = ", ".join(str(int(i)) for i in at)
        text += f"; largest error at [{index}]: got {g[at]:.6g}, expected {e[at]:.6g}"
    except (TypeError, ValueError):  # raw-bits dtypes (bf16, f8): the summary alone
        pass
    return text


# ---------------------------------------------------------------------------------------------
# Cache


def cache_key(material: dict) -> str:
    """The content hash of a task: sha256 of its canonical JSON, with the cache format and
    SOLAR's version."""
    payload = {"format": CACHE_FORMAT, "solar_version": _core.__version__, "task": material}
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _cache_file(config: LLMConfig, key: str) -> str:
    return os.path.join(config.cache_path(), key + ".json")


def _store(config: LLMConfig, key: str, task: Task, t: Translation) -> None:
    entry = {
        "format": CACHE_FORMAT,
        "key": key,
        "label": task.label,
        "solar_version": _core.__version__,
        "model": t.model,
        "ir": t.ir,
        "attempts": len(t.attempts),
        "prompt_tokens": t.prompt_tokens,
        "completion_tokens": t.completion_tokens,
    }
    os.makedirs(config.cache_path(), exist_ok=True)
    write_atomic(_cache_file(config, key), json.dumps(entry, sort_keys=True, indent=1) + "\n")


def _load_cached(task: Task, config: LLMConfig, key: str) -> Translation | None:
    """The cached translation of the task, verified again; None when there is none (or it no
    longer verifies, or the entry is unreadable)."""
    try:
        with open(_cache_file(config, key), encoding="utf-8") as f:
            entry = json.load(f)
        ir_text = entry["ir"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    outcome, _problem, _feedback, verification, _ = check_answer(
        f"```ir\n{ir_text}```", task, f"cache/{key[:16]}.ir"
    )
    if outcome != "verified":
        return None
    return Translation(task.label, ir_text, True, key, verification, [], entry.get("model"))


def report_entry(t: Translation, scope: str, name: str, op: str | None) -> dict:
    """The report's "agent" entry of a translation (docs/report.md)."""
    return {
        "scope": scope,
        "name": name,
        "op": op,
        "attempts": len(t.attempts),
        "prompt_tokens": t.prompt_tokens,
        "completion_tokens": t.completion_tokens,
        "cached": t.cached,
        "model": t.model,
    }


def attempts_as_dicts(attempts: list[Attempt]) -> list[dict]:
    return [asdict(a) for a in attempts]
