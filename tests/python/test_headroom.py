"""Headroom = measured / SOL (docs/calibrate.md): ``--measured-ms`` on ``solar sol`` (an IR file,
no PyTorch) and on ``solar analyze`` (a model file), exact to the last bit; the what-if note when
the device that measured is not the target; bad values are one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

from solar import cli
from solar.ir import run_cli_captured

ROOT = Path(__file__).resolve().parents[2]


def sol_json(tmp_path: Path, *args: str) -> tuple[int, dict | None, str]:
    out = tmp_path / "r.json"
    rc, _stdout, err = run_cli_captured(
        ["sol", str(ROOT / "examples" / "mlp.ir"), "--hw", "H100-SXM", "--json", str(out), *args]
    )
    return rc, (json.loads(out.read_text()) if rc == 0 else None), err


def test_measured_ms_gives_measured_over_sol(tmp_path):
    rc, r, err = sol_json(tmp_path, "--measured-ms", "2.5", "--kernel-floor", "off")
    assert rc == 0, err
    h = r["headroom"]
    assert h["measured_s"] == 2.5e-3
    # examples/mlp.ir on H100-SXM, without the kernel floor: unfused 5,920 bytes, fused 3,616
    # bytes, both memory-bound at 3.35e12 B/s, so SOL = bytes / 3.35e12 and headroom =
    # 2.5e-3 * 3.35e12 / bytes.
    assert r["sol"]["unfused_s"] == 5920 / 3.35e12
    assert r["sol"]["fused_s"] == 3616 / 3.35e12
    for f in r["bytes"]:
        assert h["by_fidelity"][f] == 2.5e-3 / r["sol"][f + "_s"]
    assert abs(h["by_fidelity"]["unfused"] - 2.5e-3 * 3.35e12 / 5920) < 1e-6
    assert h["bound_s"] == min(r["sol"][f + "_s"] for f in r["bytes"])
    assert h["violation"] is False
    assert h["what_if"] is False
    assert h["measured_on"] is None
    assert h["note"] == "the device that measured is not stated: headroom assumes it was H100-SXM"


def test_another_device_is_a_what_if(tmp_path):
    rc, r, err = sol_json(tmp_path, "--measured-ms", "1", "--measured-on", "cpu-laptop")
    assert rc == 0, err
    assert r["headroom"]["what_if"] is True
    assert r["headroom"]["note"] == (
        "measured on cpu-laptop, SOL of H100-SXM: headroom is a what-if "
        "(the program did not run on H100-SXM)"
    )
    rc, r, _ = sol_json(tmp_path, "--measured-ms", "1", "--measured-on", "H100-SXM")
    assert r["headroom"]["what_if"] is False


def test_a_time_below_the_bound_is_a_violation(tmp_path):
    # 1e-6 ms = 1e-9 s is below the fused SOL 3616 / 3.35e12 = 1.079e-9 s (kernel floor off),
    # and far below H100-SXM's one-kernel floor, 400 ns (on, the default).
    rc, r, err = sol_json(tmp_path, "--measured-ms", "1e-6", "--kernel-floor", "off")
    assert rc == 0, err
    assert r["headroom"]["violation"] is True
    mlp = ["sol", str(ROOT / "examples" / "mlp.ir"), "--hw", "H100-SXM", "--measured-ms", "1e-6"]
    rc, out, _ = run_cli_captured([*mlp, "--kernel-floor", "off"])
    assert "VIOLATION: the measured time is below the SOL bound 1.079 ns" in out
    rc, out, _ = run_cli_captured(mlp)
    assert "VIOLATION: the measured time is below the SOL bound 400 ns" in out


def test_bad_measured_times_are_one_line_errors(tmp_path):
    for args in (["--measured-ms", "0"], ["--measured-ms", "-3"], ["--measured-on", "x"]):
        rc, r, err = sol_json(tmp_path, *args)
        assert rc == 1
        assert len(err.strip().splitlines()) == 1, err
        assert not (tmp_path / "r.json").exists()


def test_analyze_passes_the_measured_time(tmp_path, capsys):
    out = tmp_path / "a.json"
    model = ROOT / "tests" / "python" / "models" / "mlp.py"
    args = ["analyze", str(model), "--hw", "H100-SXM", "--json", str(out)]
    assert cli.main([*args, "--measured-ms", "0.125", "--measured-on", "cpu-x"]) == 0
    r = json.loads(out.read_text())
    assert r["headroom"]["measured_s"] == 0.125e-3
    for f in r["bytes"]:
        assert r["headroom"]["by_fidelity"][f] == 0.125e-3 / r["sol"][f + "_s"]
    assert r["headroom"]["what_if"] is True
    assert "Headroom (measured / SOL): measured 125 us" in capsys.readouterr().out
