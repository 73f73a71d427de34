"""Prompt construction, extraction of the IR from answers, and the settings (flags > environment
> config file > defaults)."""

from __future__ import annotations

import pytest

from solar.llm.config import LLMConfig, LLMError, load_config
from solar.llm.prompt import Tensor, extract_ir, op_prompt, program_prompt

PROGRAM = "input x : f32[2]\noutput y : f32[2]\nkernel k {\n  for i in 0..2:\n    y[i] = x[i]\n}\n"


# --- extraction ---------------------------------------------------------------------------------


def test_extract_fenced_ir_block():
    assert extract_ir(f"Here it is:\n```ir\n{PROGRAM}```\nDone.") == PROGRAM


def test_extract_prefers_the_last_ir_tagged_block():
    answer = f"```python\nprint(1)\n```\n```ir\nsize N = 1\n```\nFixed:\n```ir\n{PROGRAM}```"
    assert extract_ir(answer) == PROGRAM


def test_extract_untagged_fence_and_tilde_fence():
    assert extract_ir(f"```\n{PROGRAM}```") == PROGRAM
    assert extract_ir(f"~~~solar\n{PROGRAM}~~~\n") == PROGRAM


def test_extract_unfenced_answer_from_the_first_declaration():
    answer = f"Sure, the program is below.\n# copy x\n{PROGRAM}"
    assert extract_ir(answer) == "# copy x\n" + PROGRAM


def test_extract_drops_reasoning_between_think_tags():
    answer = f"<think>maybe `input z : f32[1]`\n```ir\nwrong\n```</think>\n```ir\n{PROGRAM}```"
    assert extract_ir(answer) == PROGRAM


def test_extract_nothing():
    assert extract_ir("I cannot do that.") is None
    assert extract_ir("```ir\n\n```") is None


# --- prompts ------------------------------------------------------------------------------------


def test_program_prompt_has_the_reference_the_contract_and_the_source():
    messages = program_prompt(
        "class Model: ...\n",
        "m.py",
        "PyTorch",
        [Tensor("in0", "f32", (3, 8))],
        [Tensor("fc_weight", "f32", (4, 8), "fc.weight")],
        [Tensor("out0", "f32", (3, 4))],
    )
    assert [m["role"] for m in messages] == ["system", "user"]
    system, user = messages[0]["content"], messages[1]["content"]
    assert "one fenced code block that starts with ```ir" in system
    assert "## Grammar" in system and "## Checker rules" in system  # docs/ir.md
    assert "## Canonical form" not in system  # printing rules are left out
    assert "  input in0 : f32[3, 8]\n" in user
    assert "  weight fc_weight : f32[4, 8]    # fc.weight\n" in user
    assert "  output out0 : f32[3, 4]\n" in user
    assert "with every '.' replaced by '_'" in user
    assert "```python\nclass Model: ...\n```" in user


def test_op_prompt_has_schema_arguments_and_contract():
    messages = op_prompt(
        "aten.gelu.default",
        'aten::gelu(Tensor self, *, str approximate="none") -> Tensor',
        ["self = in0", 'approximate = "none"'],
        [Tensor("in0", "f32", (3, 4), "capture tensor linear")],
        [Tensor("out0", "f32", (3, 4), "capture tensor gelu")],
    )
    user = messages[1]["content"]
    assert "Translate one call of the PyTorch ATen operator aten.gelu.default" in user
    assert 'Schema: aten::gelu(Tensor self, *, str approximate="none") -> Tensor' in user
    assert '  self = in0\n  approximate = "none"\n' in user
    assert "  input in0 : f32[3, 4]    # capture tensor linear\n" in user
    assert "  output out0 : f32[3, 4]    # capture tensor gelu\n" in user


# --- settings -----------------------------------------------------------------------------------


def write(path, text):
    path.write_text(text)
    return str(path)


def test_flags_over_environment_over_file_over_defaults(tmp_path):
    file = write(
        tmp_path / "llm.toml",
        'base_url = "http://file/v1"\nmodel = "file-model"\nmax_attempts = 7\ntimeout_s = 9\n',
    )
    env = {"SOLAR_LLM_MODEL": "env-model", "SOLAR_LLM_API_KEY": "k-env"}
    c = load_config({"max_attempts": 2, "base_url": None}, config_file=file, env=env)
    assert c.base_url == "http://file/v1"  # file (the flag is unset)
    assert c.model == "env-model"  # environment over file
    assert c.api_key == "k-env"
    assert c.max_attempts == 2  # flag over file
    assert c.timeout_s == 9  # file over default
    assert c.retries == LLMConfig().retries  # default


def test_default_config_file_from_xdg_config_home(tmp_path):
    write_dir = tmp_path / "solar"
    write_dir.mkdir()
    write(write_dir / "llm.toml", 'model = "xdg"\napi_key = "k-file"\n')
    c = load_config({}, env={"XDG_CONFIG_HOME": str(tmp_path)})
    assert (c.model, c.api_key) == ("xdg", "k-file")
    assert load_config({}, env={"XDG_CONFIG_HOME": str(tmp_path / "none")}).model is None


def test_api_key_is_not_in_repr():
    assert "k-secret" not in repr(LLMConfig(api_key="k-secret"))


@pytest.mark.parametrize(
    "text, message",
    [
        ('modle = "x"\n', "unknown key 'modle' (valid: api_key, backoff_s, base_url"),
        ('max_attempts = "3"\n', "'max_attempts' must be an integer, not '3'"),
        ("max_attempts = 0\n", "LLM setting 'max_attempts' is out of range: 0"),
        ('base_url = "localhost:8000"\n', "must start with http:// or https://"),
        ("model = \n", "invalid TOML"),
    ],
)
def test_bad_config_files(tmp_path, text, message):
    file = write(tmp_path / "llm.toml", text)
    with pytest.raises(LLMError, match=message.replace("(", r"\(").replace("'", "'")):
        load_config({}, config_file=file, env={})


def test_missing_explicit_config_file(tmp_path):
    with pytest.raises(LLMError, match="no such LLM config file"):
        load_config({}, config_file=str(tmp_path / "missing.toml"), env={})
