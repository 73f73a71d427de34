"""``solar translate`` end to end through a scripted chat-completions server on loopback: the
whole loop runs for real (prompt, answer, extraction, parse and check, run, compare), and the
feedback sent at each step is asserted. Also the cache, --offline, the attempt and token caps,
and an API key that never appears in any output or file."""

from __future__ import annotations

import json

import numpy as np
import pytest
from test_llm_server import SECRET, ScriptedServer, answer, isolate

import solar
from solar import cli

MODEL = """\
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        return torch.relu(self.fc(x)) * 2.0


def get_inputs():
    return [torch.randn(3, 8)]


def get_init_inputs():
    return []
"""

# The correct translation (lines numbered for the diagnostics below).
GOOD = """\
input in0 : f32[3, 8]
weight fc_weight : f32[4, 8]
weight fc_bias : f32[4]
tensor acc : f32[3, 4]
output out0 : f32[3, 4]
kernel fc {
  for i in 0..3, j in 0..4, k in 0..8:
    acc[i, j] += in0[i, k] * fc_weight[j, k]
}
kernel act {
  for i in 0..3, j in 0..4:
    out0[i, j] = max(acc[i, j] + fc_bias[j], 0.0) * 2.0
}
"""
# Line 12, column 18: `maxx` (4 spaces, `out0[i, j]` in columns 5-14, ` = ` in 15-17).
SYNTAX_ERROR = GOOD.replace("= max(", "= maxx(")
# Runs, but adds the bias by row (i < 3 < 4: in bounds) instead of by column.
WRONG_INDEX = GOOD.replace("fc_bias[j]", "fc_bias[i]")


def fenced(program: str) -> str:
    return f"Here is the program.\n```ir\n{program}```\n"


@pytest.fixture
def env(tmp_path, monkeypatch):
    """A model file, an empty cache and no config file or LLM variables from the machine."""
    isolate(tmp_path, monkeypatch)
    (tmp_path / "model.py").write_text(MODEL)
    return tmp_path


def translate(env, server, *extra) -> int:
    return cli.main(
        [
            "translate",
            str(env / "model.py"),
            "-o",
            str(env / "model.ir"),
            "--llm-base-url",
            server.url,
            "--llm-model",
            "test-model",
            "--llm-backoff",
            "0",
            "--llm-log",
            str(env / "log.json"),
            *extra,
        ]
    )


def files_text(root) -> str:
    return "".join(p.read_text() for p in root.rglob("*") if p.is_file())


def test_translate_loop_feeds_back_syntax_then_values_then_verifies(env, capsys):
    script = [
        answer(fenced(SYNTAX_ERROR), 1000, 200),
        answer(fenced(WRONG_INDEX), 1300, 210),
        answer(GOOD, 1600, 190),  # unfenced
    ]
    with ScriptedServer(script) as s:
        assert translate(env, s) == 0
    out, err = capsys.readouterr()
    assert len(s.requests) == 3

    # Request 1: the IR reference, the contract and the source.
    first = s.requests[0]["body"]["messages"]
    assert first[0]["role"] == "system" and "## Grammar" in first[0]["content"]
    assert "  input in0 : f32[3, 8]\n" in first[1]["content"]
    assert "  weight fc_weight : f32[4, 8]    # fc.weight\n" in first[1]["content"]
    assert "  weight fc_bias : f32[4]    # fc.bias\n" in first[1]["content"]
    assert "  output out0 : f32[3, 4]\n" in first[1]["content"]
    assert "return torch.relu(self.fc(x)) * 2.0" in first[1]["content"]

    # Request 2: the answer, then the parser's diagnostic with its position.
    second = s.requests[1]["body"]["messages"]
    assert second[:2] == first
    assert second[2] == {"role": "assistant", "content": fenced(SYNTAX_ERROR)}
    assert second[3]["content"] == (
        "Your program is not valid IR:\n"
        "attempt1.ir:12:18: error: unknown function 'maxx' (did you mean 'max'?)\n"
        "Fix it and reply with the complete corrected program in one ```ir block."
    )

    # Request 3: the whole conversation, then the per-output error summary.
    third = s.requests[2]["body"]["messages"]
    assert third[:4] == second
    feedback = third[5]["content"]
    assert feedback.startswith("Your program runs, but its outputs differ from the original")
    assert "\n- out0 f32[3, 4]: max_abs_err=" in feedback
    assert "(rtol=0.0001 atol=1e-05) MISMATCH; largest error at [" in feedback

    # The verified program, in canonical form, and what was printed.
    written = (env / "model.ir").read_text()
    assert written == solar.format_ir(GOOD)
    assert "verified: out0 f32[3, 4] max_abs_err=" in out
    # tokens: prompt 1000 + 1300 + 1600 = 3900, completion 200 + 210 + 190 = 600
    assert "3 attempt(s), 3900 prompt + 600 completion tokens" in out
    assert "attempt 1: invalid (1000 prompt + 200 completion tokens): attempt1.ir:12:18" in err
    assert "attempt 2: mismatch (1300 prompt + 210 completion tokens): out0 f32[3, 4]" in err
    assert "attempt 3: verified (1600 prompt + 190 completion tokens)" in err

    # The written program computes the model: check it against the golden run here.
    import torch

    from solar.torch.capture import load_model_file

    model, (x,) = load_model_file(env / "model.py")
    feed = {
        "in0": x.numpy(),
        "fc_weight": model.fc.weight.detach().numpy(),
        "fc_bias": model.fc.bias.detach().numpy(),
    }
    with torch.no_grad():
        want = model(x).numpy()
    np.testing.assert_allclose(solar.run(written, feed)["out0"], want, rtol=1e-5, atol=1e-6)

    # The log file has every attempt; no file and no output holds the key.
    log = json.loads((env / "log.json").read_text())
    assert [a["outcome"] for a in log["translations"][0]["attempts"]] == [
        "invalid",
        "mismatch",
        "verified",
    ]
    assert s.requests[0]["headers"]["Authorization"] == f"Bearer {SECRET}"
    assert SECRET not in out + err + files_text(env)


def test_second_run_uses_the_cache_and_offline_needs_it(env, capsys):
    with ScriptedServer([answer(fenced(GOOD))]) as s:
        assert translate(env, s) == 0
    assert len(s.requests) == 1
    (entry,) = (env / "cache" / "llm").glob("*.json")
    assert json.loads(entry.read_text())["ir"] == solar.format_ir(GOOD)
    capsys.readouterr()

    with ScriptedServer([]) as s:  # no answer scripted: any request would fail the run
        assert translate(env, s) == 0
        assert translate(env, s, "--offline") == 0
    assert s.requests == []
    assert "from the cache, verified again" in capsys.readouterr().out

    # --offline with an empty cache: a clear failure, no request.
    with ScriptedServer([]) as s:
        assert translate(env, s, "--offline", "--llm-cache-dir", str(env / "empty")) == 1
    assert s.requests == []
    err = capsys.readouterr().err
    assert err.startswith("solar translate: error: model.py: no cached translation (key ")
    assert "and --offline is set" in err


def test_changed_source_misses_the_cache(env):
    with ScriptedServer([answer(fenced(GOOD))]) as s:
        assert translate(env, s) == 0
    (env / "model.py").write_text(MODEL.replace("* 2.0", "* 2.0  # a comment"))
    with ScriptedServer([answer(fenced(GOOD))]) as s:
        assert translate(env, s) == 0
    assert len(s.requests) == 1  # the source is part of the key


def test_attempt_cap(env, capsys):
    script = [answer(fenced(SYNTAX_ERROR)), answer(fenced(WRONG_INDEX)), answer(fenced(GOOD))]
    with ScriptedServer(script) as s:
        assert translate(env, s, "--llm-max-attempts", "2") == 1
    assert len(s.requests) == 2
    assert not (env / "model.ir").exists()
    err = capsys.readouterr().err
    (first,) = [line for line in err.splitlines() if line.startswith("solar translate: error")]
    assert first.startswith(
        "solar translate: error: model.py: no verified translation after 2 attempt(s) "
        "(max_attempts 2); last problem: out0 f32[3, 4]: max_abs_err="
    )
    assert "attempt 1: invalid (" in err and "attempt 2: mismatch (" in err
    assert "last diagnostics:\nYour program runs, but its outputs differ" in err
    assert not list((env / "cache").rglob("*.json"))  # nothing unverified is cached


def test_token_cap(env, capsys):
    with ScriptedServer([answer(fenced(SYNTAX_ERROR), 90, 30), answer(fenced(GOOD))]) as s:
        assert translate(env, s, "--llm-token-budget", "100") == 1
    assert len(s.requests) == 1  # 90 + 30 = 120 >= 100 after the first answer
    err = capsys.readouterr().err
    assert (
        "error: model.py: token budget exhausted: 120 of 100 tokens used in 1 attempt(s); "
        "last problem: attempt1.ir:12:18: error: unknown function 'maxx'" in err
    )


def test_max_tokens_is_sent_and_a_cut_answer_is_reported(env):
    cut = answer(fenced(GOOD)[:60], finish_reason="length")
    with ScriptedServer([cut, answer(fenced(GOOD))]) as s:
        assert translate(env, s, "--llm-max-tokens", "50") == 0
    assert s.requests[0]["body"]["max_tokens"] == 50
    assert s.user_messages(1)[-1].startswith(
        "Your answer was cut off at the limit of 50 tokens; write a shorter program.\n"
    )


def test_no_program_and_contract_feedback(env):
    renamed = GOOD.replace("in0", "x")
    script = [answer("I cannot help."), answer(fenced(renamed)), answer(fenced(GOOD))]
    with ScriptedServer(script) as s:
        assert translate(env, s) == 0
    assert s.user_messages(1)[-1].startswith("I found no IR program in your answer.")
    assert s.user_messages(2)[-1] == (
        "Your program does not follow the contract:\n"
        "- input 'x' is not one of the contract's (valid: fc_bias, fc_weight, in0)\n"
        "Fix it and reply with the complete corrected program in one ```ir block."
    )


def test_server_errors_end_the_translation_with_a_clear_message(env, capsys):
    with ScriptedServer([{"status": 500}] * 2) as s:
        assert translate(env, s, "--llm-retries", "1") == 1
    assert len(s.requests) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"solar translate: error: {s.url}/chat/completions: HTTP 500 ")
    assert "(after 2 tries)" in err
    assert SECRET not in err


JAX_MODEL = """\
import jax
import jax.numpy as jnp


def forward(x, y):
    return jnp.tanh(x) * y


def get_inputs():
    return [jax.random.normal(jax.random.PRNGKey(0), (2, 3)), jnp.full((2, 3), 0.5)]
"""

JAX_IR = """\
input in0 : f32[2, 3]
input in1 : f32[2, 3]
output out0 : f32[2, 3]
kernel k {
  for i in 0..2, j in 0..3:
    out0[i, j] = tanh(in0[i, j]) * in1[i, j]
}
"""


def test_translate_jax_file(env, capsys):
    pytest.importorskip("jax")
    (env / "model.py").write_text(JAX_MODEL)
    with ScriptedServer([answer(fenced(JAX_IR))]) as s:
        assert translate(env, s) == 0, capsys.readouterr().err
    prompt = s.user_messages(0)[0]
    assert "Translate the JAX program below (file model.py)" in prompt
    assert "  input in0 : f32[2, 3]\n  input in1 : f32[2, 3]\n" in prompt
    assert "Weights" not in prompt  # forward(*get_inputs()) has none
    assert "verified: out0 f32[2, 3]" in capsys.readouterr().out
