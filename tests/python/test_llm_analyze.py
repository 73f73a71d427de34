"""``solar analyze --llm-fallback`` and ``--llm`` through a scripted chat-completions server: an
operator whose lowering rule is disabled is translated by the agent on its own, verified against
PyTorch's operator, spliced into the program as a ``solar.ir_fragment`` node, and the whole
program is verified against the model; the report lists what the agent wrote."""

from __future__ import annotations

import json

import pytest
from test_llm_server import SECRET, ScriptedServer, answer, isolate
from test_llm_translate import GOOD, MODEL

from solar import _core, cli

GELU_MODEL = """\
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        return nn.functional.gelu(self.fc(x))


def get_inputs():
    return [torch.randn(3, 8)]


def get_init_inputs():
    return []
"""

# gelu(x) = 0.5 x (1 + erf(x / sqrt 2)); 1 / sqrt 2 = 0.7071067811865476
GELU = """\
input in0 : f32[3, 4]
output out0 : f32[3, 4]
kernel gelu {
  for i in 0..3, j in 0..4:
    out0[i, j] = 0.5 * in0[i, j] * (1.0 + erf(in0[i, j] * 0.7071067811865476))
}
"""
# x * sigmoid(1.702 x): an approximation off by up to ~0.02, far outside f32's tolerance
GELU_SIGMOID = GELU.replace(
    "0.5 * in0[i, j] * (1.0 + erf(in0[i, j] * 0.7071067811865476))",
    "in0[i, j] * sigmoid(1.702 * in0[i, j])",
)

needs_detailed_lowering = pytest.mark.skipif(
    not hasattr(_core, "lower_capture_detailed"),
    reason="this build has no _core.lower_capture_detailed",
)


@pytest.fixture
def env(tmp_path, monkeypatch):
    isolate(tmp_path, monkeypatch)
    (tmp_path / "gelu.py").write_text(GELU_MODEL)
    (tmp_path / "model.py").write_text(MODEL)
    return tmp_path


def analyze(env, server, model: str, *extra) -> int:
    return cli.main(
        [
            "analyze",
            str(env / model),
            "--json",
            str(env / "report.json"),
            "--ir",
            str(env / "out.ir"),
            "--llm-base-url",
            server.url,
            "--llm-model",
            "test-model",
            *extra,
        ]
    )


@needs_detailed_lowering
def test_fallback_translates_an_op_without_a_rule_and_verifies_the_program(env, capsys):
    script = [answer(f"```ir\n{GELU_SIGMOID}```", 700, 60), answer(f"```ir\n{GELU}```", 800, 70)]
    with ScriptedServer(script) as s:
        rc = analyze(env, s, "gelu.py", "--llm-fallback", "--llm-disable-rule", "aten.gelu.default")
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert len(s.requests) == 2

    # The op-level prompt: the operator, its schema and arguments, the contract.
    prompt = s.user_messages(0)[0]
    assert "Translate one call of the PyTorch ATen operator aten.gelu.default" in prompt
    assert 'Schema: aten::gelu(Tensor self, *, str approximate="none") -> Tensor' in prompt
    assert '  self = in0\n  approximate = "none"\n' in prompt
    assert "  input in0 : f32[3, 4]" in prompt and "  output out0 : f32[3, 4]" in prompt
    # The wrong approximation was caught against torch's gelu, with its error summary.
    feedback = s.user_messages(1)[-1]
    assert feedback.startswith("Your program runs, but its outputs differ")
    assert "\n- out0 f32[3, 4]: max_abs_err=" in feedback and "MISMATCH" in feedback

    report = json.loads((env / "report.json").read_text())
    assert report["verification"]["status"] == "passed"
    (entry,) = report["agent"]
    assert entry == {
        "scope": "node",
        "name": "gelu",
        "op": "aten.gelu.default",
        "attempts": 2,
        "prompt_tokens": 1500,  # 700 + 800
        "completion_tokens": 130,  # 60 + 70
        "cached": False,
        "model": "test-model",
    }
    ir = (env / "out.ir").read_text()
    assert "kernel gelu_gelu {" in ir  # the fragment's kernel, named after the node
    assert "agent: node 'gelu' (aten.gelu.default) written by the LLM agent (2 attempt(s)" in out
    assert SECRET not in out + err + json.dumps(report)

    # Again: the op comes from the cache, verified again; no request.
    with ScriptedServer([]) as s:
        rc = analyze(env, s, "gelu.py", "--llm-fallback", "--llm-disable-rule", "aten.gelu.default")
    assert rc == 0
    assert s.requests == []
    (entry,) = json.loads((env / "report.json").read_text())["agent"]
    assert (entry["cached"], entry["attempts"], entry["prompt_tokens"]) == (True, 0, 0)


@needs_detailed_lowering
def test_fallback_without_unsupported_ops_asks_nothing(env):
    with ScriptedServer([]) as s:
        assert analyze(env, s, "gelu.py", "--llm-fallback") == 0
    assert s.requests == []
    assert json.loads((env / "report.json").read_text())["agent"] == []


@needs_detailed_lowering
def test_fallback_failure_names_the_node_and_prints_the_attempts(env, capsys):
    script = [answer(f"```ir\n{GELU_SIGMOID}```")] * 2
    with ScriptedServer(script) as s:
        rc = analyze(
            env,
            s,
            "gelu.py",
            "--llm-fallback",
            "--llm-disable-rule",
            "aten.gelu.default",
            "--llm-max-attempts",
            "2",
        )
    assert rc == 1
    err = capsys.readouterr().err
    assert "attempt 1: mismatch (" in err and "attempt 2: mismatch (" in err
    assert (
        "solar analyze: error: node 'gelu' (aten.gelu.default): no verified translation after "
        "2 attempt(s)" in err
    )
    assert not (env / "report.json").exists()


def test_llm_translates_and_analyses_the_whole_file(env, capsys):
    with ScriptedServer([answer(f"```ir\n{GOOD}```", 900, 100)]) as s:
        rc = analyze(env, s, "model.py", "--llm")
    out, err = capsys.readouterr()
    assert rc == 0, err
    report = json.loads((env / "report.json").read_text())
    assert report["capture"]["method"] == "llm"
    assert report["capture"]["framework"] == "torch"
    assert report["verification"]["status"] == "passed"
    assert [o["name"] for o in report["verification"]["outputs"]] == ["out0"]
    assert report["agent"] == [
        {
            "scope": "program",
            "name": "model.py",
            "op": None,
            "attempts": 1,
            "prompt_tokens": 900,
            "completion_tokens": 100,
            "cached": False,
            "model": "test-model",
        }
    ]
    assert "agent: model.py written by the LLM agent (1 attempt(s), 900 prompt + 100" in out
