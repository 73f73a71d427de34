"""An unknown ``--hw`` is rejected before anything is captured, at every entry point that takes a
device: ``solar analyze`` (a model file, ``--serve``, ``--measure``, a kernel-benchmark
definition), ``solar sol|compare|provision|curve MODEL.py``, ``solar sol FILE.ir``,
``solar.analyze_file``. The model file below leaves a marker file when it is imported, so a
capture that started is seen; the error is one line naming the close built-in names and where
the list is, exit code 1."""

from __future__ import annotations

import os
import shutil

import pytest

import solar
from solar import _core, cli

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")

# Importing this file (the first step of any capture) writes imported.txt next to it.
MARKED = """\
import pathlib
import torch
pathlib.Path(__file__).with_name("imported.txt").write_text("captured")
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
def get_inputs():
    return [torch.randn(4, 8)]
def get_init_inputs():
    return []
"""

CASES = [
    ["analyze", "m.py", "--hw", "H100-SMX"],
    ["analyze", "m.py", "--hw", "H100-SMX", "--json", "r.json"],
    ["analyze", "m.py", "--hw", "H100-SMX", "--measure"],
    ["analyze", "m.py", "--hw", "H100-SMX", "--serve", "decode"],
    ["analyze", "m.py", "--hw", "H100-SMX", "--train"],
    ["analyze", "defn", "--hw", "H100-SMX"],
    ["sol", "m.py", "--hw", "H100-SMX"],
    ["curve", "m.py", "--hw", "H100-SMX"],
    ["compare", "m.py", "--hw", "H100-SXM,H100-SMX"],
    ["provision", "m.py", "--hw", "H100-SMX", "--latency", "1ms"],
]


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    (tmp_path / "m.py").write_text(MARKED)
    # A kernel-benchmark definition (docs/benchmarks.md): its reference is captured after the
    # options are made.
    shutil.copytree(os.path.join(EXAMPLES, "benchmarks", "gemm_fp32"), tmp_path / "defn")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("argv", CASES, ids=lambda a: " ".join(a[:1] + a[3:]))
def test_an_unknown_device_is_refused_before_the_capture(workdir, capsys, argv):
    rc = cli.main(argv)
    err = capsys.readouterr().err
    assert rc == 1, err
    assert err.count("\n") == 1, err
    assert err.startswith(f"solar {argv[0]}: error: unknown device 'H100-SMX'"), err
    assert "did you mean 'H100-SXM'?" in err, err
    assert "built-in devices: B200, " in err, err  # where the list is
    assert not (workdir / "imported.txt").exists(), "the model was captured before the check"
    assert sorted(p.name for p in workdir.iterdir()) == ["defn", "m.py"]  # no file written


def test_a_missing_device_file_is_refused_before_the_capture(workdir, capsys):
    assert cli.main(["sol", "m.py", "--hw", "absent.yaml"]) == 1
    err = capsys.readouterr().err
    assert "solar sol: error: cannot read device file 'absent.yaml'" in err, err
    assert not (workdir / "imported.txt").exists()


def test_other_bad_arguments_are_refused_before_the_capture(workdir, capsys):
    # A missing --latency, an unknown policy, a bad layout, a bad --set: all found without the
    # program.
    for argv, fragment in (
        (["provision", "m.py", "--hw", "H100-SXM"], "--latency is required"),
        (["sol", "m.py", "--hw", "H100-SXM", "--policy", "nope"], "unknown precision policy"),
        (["sol", "m.py", "--hw", "H100-SXM", "--parallel", "tp=0"], "tp"),
        (["curve", "m.py", "--hw", "H100-SXM", "--set", "no_such_key=1"], "no_such_key"),
        (["sol", "m.py", "--hw", "H100-SXM", "--routing", "sideways"], "sideways"),
    ):
        assert cli.main(argv) == 1, argv
        err = capsys.readouterr().err
        assert fragment in err, err
        assert not (workdir / "imported.txt").exists(), argv


def test_help_of_a_model_file_command_needs_no_capture(workdir, capsys):
    assert cli.main(["sol", "m.py", "--help"]) == 0
    assert "--hw" in capsys.readouterr().out
    assert not (workdir / "imported.txt").exists()


def test_good_arguments_go_on_to_the_capture(workdir, capsys):
    assert _core.check_program_args("sol", ["m.py", "--hw", "H100-SXM"]) is None
    assert _core.check_program_args("compare", ["m.py"]) is None  # every built-in device
    assert cli.main(["sol", "m.py", "--hw", "H100-SXM"]) == 0, capsys.readouterr().err
    assert (workdir / "imported.txt").exists()


def test_the_python_api_refuses_an_unknown_device_before_the_capture(workdir):
    with pytest.raises(ValueError, match=r"^unknown device 'H100-SMX' \(did you mean"):
        solar.analyze_file("m.py", hw="H100-SMX")
    assert not (workdir / "imported.txt").exists()


def test_an_ir_file_is_refused_before_it_is_read(workdir, capsys):
    # absent.ir does not exist: the device is the error named, found first.
    assert cli.main(["sol", "absent.ir", "--hw", "H100-SMX"]) == 1
    assert "unknown device 'H100-SMX'" in capsys.readouterr().err
