"""Each fidelity a true lower bound on the runs it models (issue 12), on small model files that
reproduce the patterns where it was not (tests/python/models/fidelity/):

- unfused runs one framework operation as one kernel (docs/fidelities.md, "Unfused"): its bytes
  are the operation's inputs read once and outputs written once, counted by hand below;
- no phantom data movement: a pad folded into the pooling window, a reshape into an output;
- the laws on every model of tests/python/models: fused <= cache-aware, and unfused per op <=
  the same kernels run one by one.

f32 throughout: 4 bytes per element; a [64, 128] tensor is 8192 elements, 32768 bytes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import solar  # noqa: E402

MODELS = Path(__file__).resolve().parent / "models"
PATTERNS = MODELS / "fidelity"

# name -> unfused DRAM bytes, by hand (each framework operation read its inputs once and writes
# its outputs once; what it produces and consumes itself stays on chip).
HAND_UNFUSED_BYTES = {
    # one hardsigmoid (export: add, clamp, clamp, div): read x 32768 + write y 32768 = 65536,
    # not 4 x 65536 = 262144 for four kernels
    "hardsigmoid": 65536,
    # one softmax: read x 32768 + write y 32768; the row max and sum stay on chip
    "softmax_rows": 65536,
    # one max over dim 1: read x 32768 once; write values 64 x 4 = 256 and indices (i64)
    # 64 x 8 = 512: 33536
    "max_dim": 33536,
    # torch.log: read p 32768, write log(p) 32768 = 65536; aten.kl_div (export: xlogy, sub, sum):
    # read log(p) and q, 2 x 32768, write the sum, a scalar: 4 B = 65540; the batch-mean
    # division: read 4 B, write 4 B = 8. Total 131084.
    "kl_div": 131084,
    # one instance norm (export: view, batch norm without statistics, view): read x
    # 2*4*16*16 = 2048 elements = 8192 B, write y 8192 B; mean and rstd stay on chip: 16384
    "instance_norm": 16384,
    # one max_pool3d_with_indices (kernel 3, stride 2, padding 1, 8^3 -> 4^3, 2 channels): read
    # x 2*8^3 = 1024 elements = 4096 B; write the max 2*4^3 = 128 elements = 512 B: 4608. The
    # indices (128 x 8 B = 1024 B) are computed by a kernel of their own that no output reads:
    # dead code, removed before counting (issue 29; before, 5632 with them)
    "maxpool3d_pad": 4608,
    # JAX: x * 2.0, one primitive: read x 32768, write 32768 = 65536; the jitted softmax_rows,
    # one operation of five primitives: read 32768, write 32768 = 65536. Total 131072.
    "jax_jit_softmax": 131072,
}


@pytest.fixture(scope="module")
def reports() -> dict[str, dict]:
    out = {}
    for name in HAND_UNFUSED_BYTES:
        report = solar.analyze_file(PATTERNS / f"{name}.py", hw="H100-SXM")
        out[name] = report.data
    return out


@pytest.mark.parametrize("name", sorted(HAND_UNFUSED_BYTES))
def test_unfused_bytes_are_one_kernel_per_framework_op(reports, name):
    data = reports[name]
    assert data["verification"]["status"] == "passed", data["verification"]
    assert data["bytes"]["unfused"] == HAND_UNFUSED_BYTES[name]
    # The unfused time is the sum over the operations, each max(compute, memory).
    ops = data["ops"]
    assert data["sol"]["unfused_s"] == pytest.approx(sum(o["sol_unfused_s"] for o in ops))
    assert sum(o["bytes"] for o in ops) == data["bytes"]["unfused"]


def test_hardsigmoid_is_one_op_of_four_kernels(reports):
    ops = reports["hardsigmoid"]["ops"]
    assert len(ops) == 1
    assert ops[0]["name"] == "hardsigmoid"
    assert len(ops[0]["nodes"]) == 4  # add, clamp, clamp, div
    # The four kernels run one by one would move 4 x 65536 bytes: 4 x (32768 / 3.35e12 x 2).
    assert ops[0]["nodes_alone_s"] == pytest.approx(4 * 65536 / 3.35e12)
    assert ops[0]["sol_unfused_s"] == pytest.approx(65536 / 3.35e12)


def test_a_jitted_jax_helper_is_one_op(reports):
    ops = reports["jax_jit_softmax"]["ops"]
    assert [o["name"] for o in ops][1] == "softmax_rows"
    assert len(ops) == 2 and len(ops[1]["nodes"]) == 5  # max, sub, exp, sum, div
    assert ops[1]["bytes"] == 65536


def test_kl_div_ops_follow_the_program(reports):
    names = [o["name"] for o in reports["kl_div"]["ops"]]
    # torch.log and the batch-mean division are one kernel each (named by their kernel);
    # aten.kl_div is one op block of the nodes export decomposed it into.
    assert len(names) == 3 and names[1] == "kl_div", names


def test_max_pool_padding_is_not_a_copy(reports):
    kinds = [n["kind"] for n in reports["maxpool3d_pad"]["nodes"]]
    assert "movement" not in kinds, reports["maxpool3d_pad"]["nodes"]
    # fused: x 4096 B read, y 512 B written; the unused indices are not a graph output
    assert reports["maxpool3d_pad"]["bytes"]["fused"] == 4608


def test_instance_norm_writes_its_output_without_a_copy(reports):
    kinds = [n["kind"] for n in reports["instance_norm"]["nodes"]]
    assert "movement" not in kinds, reports["instance_norm"]["nodes"]
    assert reports["instance_norm"]["bytes"]["fused"] == 16384


def _all_models() -> list[Path]:
    return sorted(MODELS.glob("*.py")) + sorted(PATTERNS.glob("*.py"))


@pytest.mark.parametrize("path", _all_models(), ids=lambda p: p.stem)
def test_laws_on_every_model(path):
    """fused <= cache-aware (any capacity: the default L2 and 64 KiB); unfused per op <= the
    same kernels run one by one; fused <= unfused."""
    for extra in ({}, {"capacity": "64KiB"}):
        data = solar.analyze_file(path, hw="H100-SXM", verify=False, sol_options=extra).data
        sol, nbytes = data["sol"], data["bytes"]
        assert nbytes["fused"] <= nbytes["cache_aware"], path.name
        assert sol["fused_s"] <= sol["cache_aware_s"] * (1 + 1e-12), path.name
        assert sol["fused_s"] <= sol["unfused_s"] * (1 + 1e-12), path.name
        alone = sum(n["sol_unfused_s"] for n in data["nodes"])
        assert sol["unfused_s"] <= alone * (1 + 1e-12), path.name
        assert nbytes["unfused"] <= sum(n["bytes_unfused"] for n in data["nodes"]), path.name
