"""The JAX frontend (docs/jax.md): capture of JAX functions and Flax models, lowering of lax
primitives, verification against JAX's own outputs, and the errors for what is not supported.

Every MAC count below is worked out by hand from the model's shapes (a dense layer of a [rows, k]
input into n features is rows * k * n MACs; a convolution is batch * out_features * output
positions * (in_features / groups) * window size)."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path

import pytest

jax = pytest.importorskip("jax")
pytest.importorskip("flax")

import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

import solar  # noqa: E402
import solar.jax as solar_jax  # noqa: E402

MODELS = Path(__file__).resolve().parent / "jax_models"


@functools.cache
def report(name: str):
    return solar_jax.analyze_file(MODELS / f"{name}.py")


# MACs by hand:
# - mlp: x [8, 16] -> Dense 32 -> Dense 32 -> Dense 4: 8*16*32 + 8*32*32 + 8*32*4
#   = 4096 + 8192 + 1024 = 13312.
# - cnn: x [2, 16, 16, 3]; conv 3->8, 3x3, stride 2, pad 1: output 8x8 ((16 + 2 - 3) // 2 + 1):
#   2*8*(8*8)*(3*9) = 27648; grouped conv 8->16, 4 groups (2 inputs each), SAME: 2*16*(8*8)*(2*9)
#   = 36864; max pool and mean: none; Dense 16->10: 2*16*10 = 320. Total 64832.
# - transformer: 2*8 = 16 tokens, d 16, 2 heads of 8: qkv 16*16*48 = 12288; scores and values,
#   each 2 batch * 2 heads * 8 queries * 8 keys * 8 = 2048 (JAX's attention computes the full
#   square, the causal mask is applied after); proj 16*16*16 = 4096; up 16*16*64 = 16384; down
#   16*64*16 = 16384; layer norms: no MACs. Total 12288 + 2*2048 + 4096 + 2*16384 = 53248.
# - rnn_scan: 5 steps of batch 2: x_t @ w_x 2*6*8 = 96 and h @ w_h 2*8*8 = 128 each: 5*224 = 1120.
HAND_MACS = {"mlp": 13312, "cnn": 64832, "transformer": 53248, "rnn_scan": 1120}


@pytest.mark.parametrize("name", ["mlp", "cnn", "transformer", "rnn_scan", "ops"])
def test_model_verifies_against_jax(name):
    r = report(name)
    v = r.verification
    assert v["status"] == "passed", r.summary()
    assert all(o["passed"] for o in v["outputs"])
    assert r.data["capture"]["framework"] == "jax"
    assert r.data["capture"]["method"] == "jax.make_jaxpr"
    assert r.data["capture"]["source"] == f"{name}.py"


@pytest.mark.parametrize("name", sorted(HAND_MACS))
def test_macs_by_hand(name):
    assert report(name).data["totals"]["macs"] == HAND_MACS[name]


def test_ops_model_has_every_output():
    # ops.py returns 51 arrays (counted in its list): each is one verified output
    r = report("ops")
    assert len(r.verification["outputs"]) == 51
    ops = {n["op"] for n in json.loads(r.capture_json)["nodes"]}
    for prim in (
        "sort",
        "top_k",
        "cumsum",
        "cummax",
        "cumprod",
        "argmax",
        "argmin",
        "gather",
        "scatter-add",
        "scatter",
        "pad",
        "rev",
        "dynamic_slice",
        "dynamic_update_slice",
        "conv_general_dilated",
        "reduce_precision",
        "erf_inv",
        "rem",
        "pow",
        "clamp",
    ):
        assert f"jax.{prim}" in ops, prim


def test_mlp_fused_bytes_by_hand():
    # x 8*16*4 = 512; weights (16*32 + 32 + 32*32 + 32 + 32*4 + 4) * 4 = 1732 * 4 = 6928;
    # output 8*4*4 = 128: 512 + 6928 + 128 = 7568 bytes
    assert report("mlp").data["bytes"]["fused"] == 7568


def test_capture_document():
    apply, weights, inputs, names = solar_jax.load_model_file(MODELS / "mlp.py")
    cap = solar_jax._capture(apply, weights, inputs, names, "mlp.py")
    doc = cap.document
    assert doc["framework"] == "jax" and doc["framework_version"] == jax.__version__
    roles = {t["name"]: t["role"] for t in doc["tensors"]}
    assert roles["x"] == "input"
    assert roles["Dense_0_kernel"] == "weight" and roles["Dense_2_bias"] == "weight"
    assert all(n["op"].startswith("jax.") for n in doc["nodes"])
    dot = next(n for n in doc["nodes"] if n["op"] == "jax.dot_general")
    assert dot["args"]["arg0"] == {"tensor": "x"}
    assert dot["args"]["dimension_numbers.0.0"] == [1]  # contracting dims, flattened
    assert dot["location"].startswith("mlp.py:")
    again = solar_jax._capture(*solar_jax.load_model_file(MODELS / "mlp.py"), "mlp.py")
    assert again.to_json() == cap.to_json()  # same model, same bytes


def test_analyze_function():
    def f(a, b):
        return jax.nn.softmax(jnp.einsum("bij,bjk->bik", a, b), axis=-1)

    a = jnp.ones((3, 4, 5), jnp.float32)
    b = jnp.linspace(-1, 1, 3 * 5 * 2, dtype=jnp.float32).reshape(3, 5, 2)
    r = solar_jax.analyze(f, (a, b))
    assert r.verification["status"] == "passed"
    assert r.data["totals"]["macs"] == 3 * 4 * 5 * 2  # batch 3, [4, 5] @ [5, 2]: 120
    top = solar.analyze(f, (a, b))  # the package-level entry dispatches on JAX arrays
    assert top.data["totals"]["macs"] == 120


def test_unsupported_primitive_is_named():
    with pytest.raises(Exception, match=r"unsupported operator 'jax\.shift_left'") as err:
        solar_jax.analyze(lambda x: lax.shift_left(x, 1), (jnp.arange(4, dtype=jnp.int32),))
    assert "operators have lowering rules" in str(err.value)


def test_data_dependent_while_is_an_error():
    def f(x):
        return lax.while_loop(lambda c: jnp.sum(c) < 100.0, lambda c: c * 2.0, x)

    with pytest.raises(solar_jax.CaptureError, match="trip count depends on input data"):
        solar_jax.capture(f, (jnp.ones(3),))


def test_data_dependent_cond_is_an_error():
    def f(x):
        return lax.cond(jnp.sum(x) > 0, lambda v: v + 1.0, lambda v: v - 1.0, x)

    with pytest.raises(solar_jax.CaptureError, match="predicate that depends on input data"):
        solar_jax.capture(f, (jnp.ones(3),))


def test_static_loops_are_unrolled():
    def f(x):
        return lax.fori_loop(0, 4, lambda i, h: jnp.tanh(h @ x), jnp.ones((1, 3)))

    cap = solar_jax.capture(f, (jnp.eye(3) * 0.5,))
    dots = [n for n in cap.document["nodes"] if n["op"] == "jax.dot_general"]
    assert len(dots) == 4  # one [1, 3] @ [3, 3] per iteration


def test_cli_analyze_jax_file(tmp_path):
    out = tmp_path / "r.json"
    proc = subprocess.run(
        [sys.executable, "-m", "solar", "analyze", str(MODELS / "cnn.py"), "--json", str(out)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert data["verification"]["status"] == "passed"
    assert data["totals"]["macs"] == HAND_MACS["cnn"]


def test_dispatch_sends_jax_files_to_jax():
    r = solar.analyze_file(MODELS / "rnn_scan.py")
    assert r.data["capture"]["framework"] == "jax"
    assert r.data["totals"]["macs"] == HAND_MACS["rnn_scan"]
