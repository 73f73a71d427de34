"""``solar analyze`` on a JAX model file honours every option it honours on a PyTorch one: the
report files, the fidelity, verification off or per op, unsupported operators, the stage
times, the measured time, the routing, the IR, and ``solar capture`` (docs/jax.md)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

pytest.importorskip("jax")
pytest.importorskip("flax")

import solar  # noqa: E402
from solar import cli  # noqa: E402

MLP = str(Path(__file__).resolve().parent / "jax_models" / "mlp.py")
# Dense 16->32, 32->32, 32->4 over 8 rows (tests/python/jax_models/mlp.py)
MLP_MACS = 8 * (16 * 32 + 32 * 32 + 32 * 4)  # = 13312

# A JAX model with an operator that has no lowering rule (shift_left) feeding a matmul.
SHIFTED = """\
import jax
import jax.numpy as jnp
from jax import lax


def get_inputs():
    return [jnp.arange(12, dtype=jnp.int32).reshape(3, 4),
            jax.random.normal(jax.random.PRNGKey(0), (4, 5), jnp.float32)]


def forward(a, w):
    return jnp.tanh(lax.shift_left(a, 1).astype(jnp.float32) @ w)
"""


# An embedding lookup (a data-dependent read) and a projection.
LOOKUP = """\
import jax
import jax.numpy as jnp


def get_inputs():
    return [jnp.array([3, 1, 4, 1, 5, 9], dtype=jnp.int32),
            jax.random.normal(jax.random.PRNGKey(0), (16, 8), jnp.float32),
            jax.random.normal(jax.random.PRNGKey(1), (8, 4), jnp.float32)]


def forward(ids, table, w):
    return jnp.take(table, ids, axis=0) @ w
"""


def analyze_json(tmp_path: Path, capsys, *args: str, model: str = MLP) -> tuple[int, dict]:
    out = tmp_path / "r.json"
    rc = cli.main(["analyze", model, "--json", str(out), *args])
    capsys.readouterr()
    return rc, json.loads(out.read_text()) if out.exists() else {}


def test_report_files_and_ir(tmp_path, capsys):
    files = {k: tmp_path / f"r.{k}" for k in ("html", "csv", "trace", "dot")}
    args = [a for k, p in files.items() for a in (f"--{k}", str(p))]
    rc, report = analyze_json(tmp_path, capsys, *args, "--ir", str(tmp_path / "m.ir"))
    assert rc == 0 and report["verification"]["status"] == "passed"
    assert report["totals"]["macs"] == MLP_MACS
    assert "<html" in files["html"].read_text() and "mlp.py" in files["html"].read_text()
    rows = list(csv.DictReader(files["csv"].open()))
    assert sum(int(r["macs"]) for r in rows) == MLP_MACS
    assert json.loads(files["trace"].read_text())["traceEvents"]
    assert files["dot"].read_text().startswith("digraph")
    assert outputs_of(tmp_path / "m.ir") == [("add_4", "f32")]  # the last Dense's bias add


def outputs_of(ir_file: Path) -> list[tuple[str, str]]:
    """The outputs a written IR file declares (it parses and checks)."""
    program = solar.parse(ir_file)
    solar.check(program)
    return [(name, dtype) for name, role, dtype in program.tensors if role == "output"]


def test_fidelity_no_verify_and_routing(tmp_path, capsys):
    rc, report = analyze_json(
        tmp_path, capsys, "--fidelity", "fused", "--no-verify", "--routing", "concentrated"
    )
    assert rc == 0
    assert sorted(report["sol"]) == ["bottleneck_fused", "compute_s", "fused_s", "memory_fused_s"]
    assert report["verification"]["status"] == "not_run"
    assert "--no-verify" in report["verification"]["detail"]


def test_routing(tmp_path, capsys):
    model = tmp_path / "lookup.py"
    model.write_text(LOOKUP)
    rc, balanced = analyze_json(tmp_path, capsys, "--routing", "balanced", model=str(model))
    assert rc == 0 and balanced["verification"]["status"] == "passed"
    rc, concentrated = analyze_json(tmp_path, capsys, model=str(model))  # the default
    assert rc == 0 and concentrated["verification"]["status"] == "passed"
    assert (balanced["routing"], concentrated["routing"]) == ("balanced", "concentrated")
    # The ids are inputs, no router's choice: both routings count the 6 ids as the 6 distinct rows
    # they name (--routing governs only a top-k router's takes): 6 rows of 8 f32 = 192 B read of
    # the table's 16 * 8 * 4 = 512, the same fused bytes under both.
    assert balanced["bytes"]["fused"] == concentrated["bytes"]["fused"]
    assert any(
        "48 elements read" in a and "counted as 48 of its 128" in a and "not a router's" in a
        for a in concentrated["routing_assumptions"]
    )


def test_per_op_verification_is_said_not_available(tmp_path, capsys):
    rc, report = analyze_json(tmp_path, capsys, "--verify-mode", "per_op")
    assert rc == 0
    v = report["verification"]
    assert (v["status"], v["mode"]) == ("not_run", "per_op")
    assert v["detail"] == "per-op verification is not available for JAX captures"
    # A budget the whole program does not fit in picks per-op verification, as for PyTorch.
    rc, report = analyze_json(tmp_path, capsys, "--verify-budget-mb", "0.001")
    assert report["verification"]["mode"] == "per_op"
    assert "over the verification budget" in report["verification"]["why"]


def test_allow_unsupported_lists_the_operator(tmp_path, capsys):
    model = tmp_path / "shifted.py"
    model.write_text(SHIFTED)
    rc = cli.main(["analyze", str(model)])
    assert rc == 1 and "unsupported operator 'jax.shift_left'" in capsys.readouterr().err
    rc, report = analyze_json(tmp_path, capsys, "--allow-unsupported", model=str(model))
    assert rc == 0
    ops = report["coverage"]["unsupported_ops"]
    assert [u["op"] for u in ops] == ["jax.shift_left"]
    # [3, 4] @ [4, 5]: 60 MACs, analysed without the shift
    assert report["totals"]["macs"] == 3 * 4 * 5
    v = report["verification"]
    assert v["status"] == "not_run"
    assert "cannot be recorded from JAX's jitted run" in v["detail"]


def test_stage_times_and_measure(tmp_path, capsys):
    times = tmp_path / "t.json"
    rc, report = analyze_json(tmp_path, capsys, "--stage-times", str(times), "--measure")
    assert rc == 0
    stages = json.loads(times.read_text())
    assert sorted(stages) == ["analysis", "capture", "lowering", "verification"]
    assert all(s > 0 for s in stages.values())
    h = report["headroom"]
    assert h["measured_s"] > 0 and h["method"].startswith("JAX jit on cpu, wall clock")
    # Measured on this machine's CPU, SOL of H100-SXM: a what-if (its SOL is nanoseconds, a CPU
    # run microseconds: every headroom is above 1); JAX runs one executable: no per-node times.
    assert h["what_if"] is True and min(h["by_fidelity"].values()) > 1
    assert "nodes" not in h


def test_capture_writes_document_and_golden(tmp_path, capsys):
    doc, npz = tmp_path / "c.json", tmp_path / "g.npz"
    assert cli.main(["capture", MLP, "-o", str(doc), "--golden", str(npz)]) == 0
    document = json.loads(doc.read_text())
    assert document["framework"] == "jax"
    import numpy as np

    golden = np.load(npz)
    assert set(document["outputs"]) <= set(golden.files)
    assert cli.main(["capture", MLP, "-o", str(tmp_path / "m.ir")]) == 0
    assert outputs_of(tmp_path / "m.ir") == [("add_4", "f32")]
