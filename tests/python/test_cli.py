"""The installed ``solar`` console command, end to end in subprocesses: .npz files written by numpy
go in, .npz files read back by numpy come out, errors are one line with a location and exit 1,
and a failed run leaves no output file behind."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest

import solar._core

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def console_script() -> str | None:
    """The `solar` command that `pip install` put beside this Python (or on PATH); None in a dev
    build, which has none."""
    candidate = Path(sysconfig.get_path("scripts")) / "solar"
    if candidate.exists():
        return str(candidate)
    return shutil.which("solar")


# The command the tests run: `python -m solar`, the same `solar.__main__` the console script
# calls, so the tests run in a dev build (PYTHONPATH) too; the installed script is checked
# against it below where there is one.
SOLAR = [sys.executable, "-m", "solar"]


def solar_cmd(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SOLAR, *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
    )


def mlp_reference(a: dict[str, np.ndarray]) -> np.ndarray:
    f = {k: v.astype(np.float64) for k, v in a.items()}
    return np.maximum(f["x"] @ f["w1"] + f["b1"], 0) @ f["w2"] + f["b2"]


def mlp_inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    shapes = {"x": (4, 16), "w1": (16, 32), "b1": (32,), "w2": (32, 8), "b2": (8,)}
    return {k: rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()}


def test_version():
    r = solar_cmd("--version")
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"solar {solar.__version__}\n"


@pytest.mark.parametrize("save", [np.savez, np.savez_compressed], ids=["stored", "deflated"])
def test_run_reads_and_writes_npz(tmp_path, save):
    inputs = mlp_inputs()
    save(tmp_path / "in.npz", **inputs)
    r = solar_cmd(
        "ir", "run", EXAMPLES / "mlp.ir", "--inputs", "in.npz", "--out", "out.npz", cwd=tmp_path
    )
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    assert "y: f32[4, 8]" in r.stdout
    with np.load(tmp_path / "out.npz") as out:
        assert sorted(out.files) == ["y"]
        assert out["y"].dtype == np.float32
        np.testing.assert_allclose(out["y"], mlp_reference(inputs), rtol=1e-5, atol=1e-5)


def test_random_inputs_run_and_can_be_saved(tmp_path):
    r = solar_cmd(
        "ir",
        "run",
        EXAMPLES / "mlp.ir",
        "--random-inputs",
        "--seed",
        "5",
        "--save-inputs",
        tmp_path / "in.npz",
        "--out",
        tmp_path / "out.npz",
        "--no-fast-paths",
    )
    assert r.returncode == 0, r.stderr
    with np.load(tmp_path / "in.npz") as saved, np.load(tmp_path / "out.npz") as out:
        inputs = {k: saved[k] for k in saved.files}
        assert sorted(inputs) == ["b1", "b2", "w1", "w2", "x"]
        np.testing.assert_allclose(out["y"], mlp_reference(inputs), rtol=1e-5, atol=1e-5)
    # The same values as the Python API's random_inputs for the same seed.
    api = solar.random_inputs(EXAMPLES / "mlp.ir", seed=5)
    for name, value in inputs.items():
        np.testing.assert_array_equal(value, api[name])


def test_bad_program_is_one_line_with_location_and_no_output(tmp_path):
    bad = tmp_path / "bad.ir"
    bad.write_text((EXAMPLES / "mlp.ir").read_text().replace("w2[k, j]", "w3[k, j]"))
    np.savez(tmp_path / "in.npz", **mlp_inputs())
    out = tmp_path / "out.npz"
    r = solar_cmd("ir", "run", bad, "--inputs", tmp_path / "in.npz", "--out", out)
    assert r.returncode == 1
    assert r.stdout == ""
    assert re.fullmatch(re.escape(str(bad)) + r":\d+:\d+: error: .*w3.*\n", r.stderr), r.stderr
    assert not out.exists()


def test_bad_inputs_are_one_line_and_no_output(tmp_path):
    inputs = mlp_inputs()
    del inputs["w2"]
    np.savez(tmp_path / "in.npz", **inputs)
    out = tmp_path / "out.npz"
    r = solar_cmd("ir", "run", EXAMPLES / "mlp.ir", "--inputs", tmp_path / "in.npz", "--out", out)
    assert r.returncode == 1
    assert r.stderr.count("\n") == 1 and "w2" in r.stderr, r.stderr
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.npz"]  # no temporary file either


def test_check_and_fmt_on_the_examples():
    files = sorted(EXAMPLES.glob("*.ir"))
    r = solar_cmd("ir", "check", *files)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [f"{f}: ok" for f in files]
    r = solar_cmd("ir", "fmt", "--check", *files)
    assert r.returncode == 0, r.stderr


def test_unknown_command_lists_valid_ones():
    r = solar_cmd("ir", "analyse")
    assert r.returncode == 1
    assert (
        r.stderr == "solar ir: error: unknown command 'analyse' (valid: check, fmt, run, verify)\n"
    )


def test_native_executable_is_installed_and_agrees():
    # Beside the compiled module (in an editable install the sources are elsewhere).
    native = Path(solar._core.__file__).parent / "bin" / "solar"
    assert native.exists()
    r = subprocess.run([native, "--version"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout == f"solar {solar.__version__}\n"


def test_python_dash_m_solar():
    r = subprocess.run(
        [sys.executable, "-m", "solar", "ir", "check", EXAMPLES / "gemm.ir"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"{EXAMPLES / 'gemm.ir'}: ok\n"


def test_installed_console_script_is_the_same_command():
    script = console_script()
    if script is None:
        pytest.skip("no `solar` console script (a dev build: pip install . installs one)")
    for args in (["--version"], ["ir", "check", str(EXAMPLES / "gemm.ir")], ["ir", "analyse"]):
        r = subprocess.run([script, *args], capture_output=True, text=True, timeout=60)
        m = solar_cmd(*args)
        assert (r.returncode, r.stdout, r.stderr) == (m.returncode, m.stdout, m.stderr), args
