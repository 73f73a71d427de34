"""Bad input to the command line: one line ``solar CMD: error: ...`` on stderr, exit code 1, no
traceback, and no output file (nor temporary file) left behind. Runs ``solar.cli.main`` in
process; every case writes its files under a fresh directory and checks that nothing new is
there afterwards."""

from __future__ import annotations

import os
import textwrap

import pytest

from solar import cli

GEMM = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "gemm.ir")

GOOD = """\
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2
def get_inputs():
    return [torch.randn(4, 8)]
def get_init_inputs():
    return []
"""

# name -> text of a broken model file.
MODELS = {
    "syntax.py": "import torch\nclass Model(torch.nn.Module)\n    pass\n",
    "import_error.py": "import torch\nimport solar_no_such_module_xyz\n",
    "inputs_raise.py": GOOD.replace("return [torch.randn(4, 8)]", "raise RuntimeError('boom')"),
    "init_raise.py": GOOD.replace(
        "class Model(torch.nn.Module):\n",
        "class Model(torch.nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        raise KeyError('no weights')\n",
    ),
    # __init__ without super().__init__(): nn.Module's own state is missing (issue 44)
    "no_super.py": GOOD.replace(
        "class Model(torch.nn.Module):\n",
        "class Model(torch.nn.Module):\n    def __init__(self, scale=2.0):\n"
        "        self.scale = scale\n",
    ),
    "no_super_module.py": GOOD.replace(
        "class Model(torch.nn.Module):\n",
        "class Model(torch.nn.Module):\n    def __init__(self):\n"
        "        self.fc = torch.nn.Linear(8, 8)\n",
    ),
    # an index past the embedding's 10 rows: the model's own run fails, at line 7 (import,
    # class, def __init__, super().__init__(), the embedding, def forward, return)
    "index_out_of_range.py": GOOD.replace(
        "class Model(torch.nn.Module):\n",
        "class Model(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.embed = torch.nn.Embedding(10, 8)\n",
    )
    .replace("return torch.relu(x) * 2", "return self.embed(x)")
    .replace("torch.randn(4, 8)", "torch.tensor([3, 12])"),
    "forward_raise.py": GOOD.replace("return torch.relu(x) * 2", "raise RuntimeError('fwd')"),
    "inputs_int.py": GOOD.replace("return [torch.randn(4, 8)]", "return 5"),
    "no_model.py": "import torch\ndef get_inputs():\n    return [torch.randn(4)]\n",
    "exits.py": "import sys\nsys.exit(3)\n",
    "jax_syntax.py": "import jax\ndef forward(x)\n    return x\n",
    "jax_error.py": textwrap.dedent(
        """\
        import jax.numpy as jnp
        def forward(x):
            return jnp.dot(x, jnp.ones((3, 3)))
        def get_inputs():
            return [jnp.ones((4, 5))]
        """
    ),
}

# (argv, expected message fragment); MISSING is a directory that does not exist.
CASES = [
    (["analyze", "absent.py"], "solar analyze: error: absent.py: no such file"),
    # "class Model(torch.nn.Module)" is 28 characters: Python points one past, at column 29.
    (["analyze", "syntax.py"], "solar analyze: error: syntax.py:2:29: syntax error: expected ':'"),
    (
        ["analyze", "import_error.py"],
        "import_error.py:2: import failed: ModuleNotFoundError: No module named",
    ),
    (["analyze", "inputs_raise.py"], "inputs_raise.py:6: get_inputs() failed: RuntimeError: boom"),
    # line 5 of init_raise.py: import, class, def __init__, super().__init__(), raise
    (["analyze", "init_raise.py"], "init_raise.py:5: Model(...) failed: KeyError: 'no weights'"),
    # line 3 of no_super.py: import, class, def __init__
    (
        ["analyze", "no_super.py"],
        "no_super.py:3: Model.__init__ does not call super().__init__(): the model is not an",
    ),
    # assigning a submodule before nn.Module.__init__ raises in __init__ itself, at line 4
    (
        ["analyze", "no_super_module.py"],
        "no_super_module.py:4: Model(...) failed: AttributeError: cannot assign module before",
    ),
    (["analyze", "forward_raise.py"], "RuntimeError: fwd"),
    (
        ["analyze", "index_out_of_range.py"],
        "solar analyze: error: the program failed on its inputs at index_out_of_range.py:7 in "
        "forward: IndexError: index out of range in self",
    ),
    (["analyze", "inputs_int.py"], "inputs_int.py: get_inputs() returned int, not a list"),
    (["analyze", "no_model.py"], "no_model.py: defines no 'Model'"),
    (["analyze", "exits.py"], "exits.py: import called sys.exit(3)"),
    (["analyze", "jax_syntax.py"], "jax_syntax.py:2:15: syntax error: expected ':'"),
    (["analyze", "jax_error.py"], "jax.make_jaxpr failed: TypeError: dot_general"),
    (["analyze", "good.py", "--hw", "NOPE"], "solar analyze: error: unknown device 'NOPE';"),
    (["analyze", "good.py", "--fidelity", "bogus"], "error: unknown fidelity 'bogus'"),
    # the device, the policy and the layout are checked before capture: forward_raise.py's
    # forward raises, so an error naming the option shows that nothing was captured
    (["analyze", "forward_raise.py", "--hw", "NOPE"], "solar analyze: error: unknown device"),
    (
        ["analyze", "forward_raise.py", "--policy", "nope"],
        "solar analyze: error: unknown precision policy 'nope' (valid: pytorch-cuda-default,",
    ),
    (
        ["analyze", "forward_raise.py", "--devices", "2", "--parallel", "tp=3"],
        "solar analyze: error: --parallel tp=3 uses 3 devices (tp x dp x pp), not --devices 2",
    ),
    (["analyze", "forward_raise.py", "--devices", "2"], "--devices 2 needs --parallel"),
    (["analyze", "good.py", "--verify-budget-mb", "-5"], "must be a non-negative number"),
    (["analyze", "good.py", "--verify-budget-s", "nan"], "must be a non-negative number"),
    (["analyze", "good.py", "--measured-ms", "abc"], "invalid float value: 'abc'"),
    (["analyze", "good.py", "--measured-ms", "-1"], "positive finite number of milliseconds"),
    (["analyze", "good.py", "--json", "MISSING/r.json"], "cannot write 'MISSING/r.json'"),
    (
        ["analyze", "good.py", "--html", "r.html", "--json", "MISSING/r.json"],
        "cannot write 'MISSING/r.json'",
    ),
    (["analyze", "good.py", "--html", "MISSING/r.html"], "cannot write 'MISSING/r.html'"),
    (["analyze", "good.py", "--csv", "r.csv", "--json", "r.csv"], "same file 'r.csv'"),
    (["capture", "good.py", "-o", "MISSING/c.json"], "cannot write 'MISSING/c.json'"),
    (["sol", "syntax.py", "--hw", "H100-SXM"], "solar sol: error: syntax.py:2:29"),
    (["compare", "inputs_raise.py", "--hw", "H100-SXM"], "solar compare: error: inputs_raise.py:6"),
    (["provision", "no_model.py", "--latency", "1ms"], "solar provision: error: no_model.py"),
    (["curve", "import_error.py", "--hw", "H100-SXM"], "solar curve: error: import_error.py:2"),
    (["sol", "good.py", "--hw", "NOPE"], "solar sol: error: unknown device 'NOPE';"),
    (
        ["curve", "good.py", "--hw", "H100-SXM", "--csv", "c.csv", "--json", "MISSING/c.json"],
        "solar curve: error: cannot write 'MISSING/c.json': No such file or directory",
    ),
    # C++ commands on an IR file: every output or none.
    (
        ["sol", GEMM, "--hw", "H100-SXM", "--html", "r.html", "--json", "MISSING/r.json"],
        "solar sol: error: cannot write 'MISSING/r.json': No such file or directory",
    ),
    (["sol", GEMM, "--hw", "H100-SXM", "--html", "."], "cannot write '.': it is a directory"),
    (["sol", GEMM, "--hw", "H100-SXM", "--measured-ms", "nan"], "positive finite number"),
    (["sol", GEMM, "--hw", "H100-SXM", "--fidelity", "cache", "--capacity", "0"], "'0' is not a"),
    (["sol", GEMM, "--hw", "TPU-v5e", "--fidelity", "cache"], "TPU-v5e has no L2 capacity"),
    (["sol", GEMM, "--hw", "H100-SXM", "--top", "-1"], "--top: '-1' is negative"),
    (["curve", GEMM, "--hw", "H100-SXM", "--capacity", "1MiB"], "not expected"),
    (["curve", "absent.ir", "--hw", "H100-SXM"], "solar curve: error: cannot read absent.ir"),
    # LLM translation (no endpoint: the default config file is looked up under $HOME).
    (["translate", "good.py", "-o", "t.ir"], "no LLM base_url is set"),
    (
        [
            "translate",
            "good.py",
            "-o",
            "t.ir",
            "--llm-base-url",
            "localhost:8000",
            "--llm-model",
            "m",
        ],
        "must start with http:// or https://",
    ),
    (["translate", "good.py", "-o", "t.ir", "--llm-config", "bad.toml"], "unknown key 'colour'"),
    (
        ["translate", "good.py", "-o", "MISSING/t.ir", "--llm-base-url", "http://127.0.0.1:9/v1"],
        "cannot write 'MISSING/t.ir'",
    ),
    (["calibrate", "-o", "MISSING/d.yaml", "--quick"], "cannot write 'MISSING/d.yaml'"),
    (["bench", "empty", "--hw", "H100-SXM", "--out", "res"], "empty: no *.py problem files"),
    (["bench", "absent", "--hw", "H100-SXM", "--out", "res"], "absent: not a folder"),
    (
        ["bench", "suite", "--hw", "H100-SXM", "--out", "res", "--timings", "bad.json"],
        "bad.json:1:2: invalid JSON",
    ),
    (["bench", "suite", "--hw", "NOPE", "--out", "res"], "solar bench: error: unknown device"),
]


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    for var in ("SOLAR_LLM_BASE_URL", "SOLAR_LLM_MODEL", "SOLAR_LLM_CONFIG", "SOLAR_LLM_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    (tmp_path / "good.py").write_text(GOOD)
    for name, text in MODELS.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "bad.toml").write_text('base_url = "http://x/v1"\ncolour = 1\n')
    (tmp_path / "bad.json").write_text("{bad json\n")
    (tmp_path / "empty").mkdir()
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "good.py").write_text(GOOD)
    return tmp_path


def _files(root) -> set[str]:
    return {
        os.path.relpath(os.path.join(d, f), root)
        for d, _, names in os.walk(root)
        for f in names
        if "__pycache__" not in d
    }


def _case_id(value: list[str] | str) -> str:
    return " ".join(os.path.basename(a) for a in value)[:60] if isinstance(value, list) else ""


@pytest.mark.parametrize(("argv", "fragment"), CASES, ids=_case_id)
def test_bad_input_is_one_line_and_writes_nothing(workdir, capsys, argv, fragment):
    missing = str(workdir / "missing")
    argv = [a.replace("MISSING", missing) for a in argv]
    before = _files(workdir)
    rc = cli.main(argv)
    err = capsys.readouterr().err
    assert rc == 1, err
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if ": error: " in line]
    assert len(errors) == 1, err
    assert errors[0].startswith(f"solar {argv[0]}: error: "), err
    assert errors[0].count(": error: ") == 1, err  # no nested "solar sol: error:"
    assert fragment.replace("MISSING", missing) in errors[0], err
    # only the optional "note:" lines of the FakeTensor fallback besides the error
    assert all(": note: " in line for line in err.splitlines() if line not in errors), err
    assert _files(workdir) == before


def test_analyze_writes_the_same_bytes_twice(workdir, capsys):
    outputs = ["--json", "r.json", "--csv", "r.csv", "--dot", "r.dot", "--ir", "r.ir"]
    assert cli.main(["analyze", "good.py", *outputs]) == 0
    first = {f: (workdir / f).read_bytes() for f in ("r.json", "r.csv", "r.dot", "r.ir")}
    out1 = capsys.readouterr().out
    assert cli.main(["analyze", "good.py", *outputs]) == 0
    assert capsys.readouterr().out == out1
    for name, data in first.items():
        assert (workdir / name).read_bytes() == data, name
    assert not [f for f in _files(workdir) if "tmp" in f]


def test_an_internal_error_is_one_line_and_exit_code_2(tmp_path, monkeypatch, capsys):
    # A bug inside the analysis (here: one made to happen) is no traceback: one line naming the
    # command, and exit code 2.
    from solar import adapters

    def broken(*args, **kwargs):
        raise RuntimeError("internal error: a broken invariant")

    monkeypatch.setattr(adapters, "run_file", broken)  # solar analyze's entry
    model = tmp_path / "m.py"
    model.write_text(GOOD)
    assert cli.main(["analyze", str(model)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("solar analyze: internal error: RuntimeError: a broken invariant")


def test_out_of_memory_in_the_core_is_one_line_as_the_native_executable_says_it(
    tmp_path, monkeypatch, capsys
):
    # The core's std::bad_alloc reaches Python as MemoryError: the native executable's one line
    # (src/cli/guard.cpp), exit code 1, not an internal error.
    from solar import adapters

    def too_big(*args, **kwargs):
        raise MemoryError("std::bad_alloc")

    monkeypatch.setattr(adapters, "run_file", too_big)
    model = tmp_path / "m.py"
    model.write_text(GOOD)
    assert cli.main(["analyze", str(model)]) == 1
    assert capsys.readouterr().err == "solar analyze: error: out of memory (run at smaller sizes)\n"


@pytest.mark.parametrize(
    "command", ["analyze", "capture", "translate", "bench", "calibrate", "sweep"]
)
def test_help_of_a_python_command_is_its_help(command, capsys):
    # `solar help COMMAND` for a command of the Python package prints that command's options.
    assert cli.main(["help", command]) == 0
    out = capsys.readouterr().out
    assert f"solar {command}" in out and "--help" in out


NEVER_BUILT = """import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(4, 4) for _ in range(10**12))

    def forward(self, x):
        return x


def get_inputs():
    return [torch.randn(2, 4)]


def get_init_inputs():
    return []
"""


def test_a_model_that_builds_for_hours_is_one_line_at_its_line(tmp_path, capsys):
    # The second hour fuzz run's reproducer had nn.RNN(num_layers=10**12): the file's own code
    # runs for hours. Past --build-budget-s, one line naming the line it was running (line 8).
    model = tmp_path / "never.py"
    model.write_text(NEVER_BUILT)
    assert cli.main(["analyze", str(model), "--build-budget-s", "2"]) == 1
    err = capsys.readouterr().err
    assert err == (
        f"solar analyze: error: {model}:8: Model(...) was still running after 2 s (the model "
        "file's own code; give it longer with --build-budget-s)\n"
    )
