"""Measurement files (docs/calibrate.md, "Measurement files"): ``solar analyze --measure
--measure-out F`` writes the times it took, ``--measurement F`` reports the same headroom from
them without timing the model again, and a bad file or a bad combination of options is a
one-line error."""

from __future__ import annotations

import json
import os

import pytest

pytest.importorskip("torch")

from solar import cli  # noqa: E402
from solar.timing import measurement  # noqa: E402
from solar.timing.clock import Timing  # noqa: E402

MLP = os.path.join(os.path.dirname(__file__), "models", "mlp.py")


def test_measure_out_then_measurement_reproduces_the_headroom(tmp_path) -> None:
    times, first, second = tmp_path / "t.json", tmp_path / "a.json", tmp_path / "b.json"
    argv = ["analyze", MLP, "--hw", "H100-SXM"]
    assert cli.main([*argv, "--measure", "--measure-out", str(times), "--json", str(first)]) == 0
    doc = json.loads(times.read_text())
    assert doc["format"] == "solar-measurement" and doc["version"] == 1
    assert doc["model"] == "mlp.py"
    assert len(doc["samples_s"]) == 20  # solar.torch.measure: 20 timed samples
    assert {n["node"] for n in doc["nodes"]["nodes"]} == {
        "permute",
        "addmm",
        "relu",
        "permute_1",
        "addmm_1",
    }
    assert cli.main([*argv, "--measurement", str(times), "--json", str(second)]) == 0
    a = json.loads(first.read_text())["headroom"]
    b = json.loads(second.read_text())["headroom"]
    assert a == b  # the same samples, the same per-node times: the same section, every field
    # The median of the 20 samples recorded is the measured time.
    samples = sorted(doc["samples_s"])
    assert b["measured_s"] == pytest.approx((samples[9] + samples[10]) / 2, rel=1e-12)


def test_a_file_without_per_node_times_gives_the_whole_program_headroom(tmp_path, capsys):
    # The median of [4e-5, 5e-5, 6e-5] s is 5e-5 s; with no per-node times, none are reported.
    times = tmp_path / "t.json"
    measurement.write(str(times), Timing([4e-5, 5e-5, 6e-5], "cpu-x", "wall clock"), None, MLP)
    out = tmp_path / "r.json"
    assert cli.main(["analyze", MLP, "--measurement", str(times), "--json", str(out)]) == 0
    h = json.loads(out.read_text())["headroom"]
    assert h["measured_s"] == pytest.approx(5e-5, rel=1e-12)
    assert h["what_if"] is True  # measured on cpu-x, SOL of H100-SXM (the default --hw)
    assert not h.get("nodes")


def write(path, text: str) -> str:
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "not JSON"),
        ('{"format": "other"}', "not a measurement file"),
        (
            '{"format": "solar-measurement", "version": 2}',
            "measurement file version 2; this SOLAR reads 1",
        ),
        (
            '{"format": "solar-measurement", "version": 1, "model": "cnn.py"}',
            "the times were taken of 'cnn.py', not of 'mlp.py'",
        ),
        (
            '{"format": "solar-measurement", "version": 1, "model": "mlp.py", "device": "d",'
            ' "method": "m", "samples_s": []}',
            "'samples_s' is empty",
        ),
        (
            '{"format": "solar-measurement", "version": 1, "model": "mlp.py", "device": "d",'
            ' "method": "m", "samples_s": [1, -1]}',
            "samples_s[1] is not a time in seconds >= 0: -1",
        ),
        (
            '{"format": "solar-measurement", "version": 1, "model": "mlp.py", "device": 3}',
            "'device' has the wrong type (int)",
        ),
    ],
)
def test_a_bad_measurement_file_is_a_one_line_error(tmp_path, capsys, content, message):
    path = write(tmp_path / "t.json", content)
    assert cli.main(["analyze", MLP, "--measurement", path]) != 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and path in err, err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--measure-out", "T.json"], "--measure-out writes the times --measure takes"),
        (["--measurement", "T.json", "--measured-ms", "1"], "not --measurement and --measured-ms"),
        (["--measure", "--measurement", "T.json"], "not --measure and --measurement"),
    ],
)
def test_options_that_do_not_go_together_are_one_line_errors(tmp_path, capsys, extra, message):
    os.chdir(tmp_path)
    assert cli.main(["analyze", MLP, *extra]) != 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "T.json").exists()


def test_written_files_get_the_umask_permissions_not_mkstemps(tmp_path) -> None:
    # write_atomic writes through a temporary file (mkstemp: mode 0600); the file it leaves is
    # what open() would give a new file, 0666 less the umask (0644 under umask 022), and an
    # existing file keeps its own mode (0640 here).
    from solar._files import write_atomic

    old = os.umask(0o022)
    try:
        write_atomic(str(tmp_path / "new.json"), "{}\n")
        existing = tmp_path / "old.json"
        existing.write_text("x")
        existing.chmod(0o640)
        write_atomic(str(existing), "{}\n")
    finally:
        os.umask(old)
    assert (tmp_path / "new.json").stat().st_mode & 0o777 == 0o644
    assert existing.stat().st_mode & 0o777 == 0o640
