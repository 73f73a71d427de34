"""jax.random in JAX programs (issue 13; docs/jax.md, "Random draws"): a sampler call is one
random draw generated on chip and fed JAX's own values in verification, PRNG keys and the key
operations are left out, and what SOLAR cannot capture is a one-line error naming the primitive.
Counts worked out by hand; f32 is 4 bytes, bool 1."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

jax = pytest.importorskip("jax")
pytest.importorskip("flax")

import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

import solar.jax as solar_jax  # noqa: E402
from solar import _core, stages  # noqa: E402
from solar.verify.whole import verify_whole  # noqa: E402

MODELS = Path(__file__).resolve().parent / "jax_models"


@functools.cache
def report(name: str):
    return solar_jax.analyze_file(MODELS / f"{name}.py")


def draw_nodes(r) -> list[dict]:
    return [n for n in r.data["nodes"] if n["name"].startswith("draw:")]


def capture_of(name: str):
    apply, weights, inputs, names = solar_jax.load_model_file(MODELS / f"{name}.py")
    return solar_jax._capture(apply, weights, inputs, names, f"{name}.py")


def test_normal_noise_is_a_draw_verified_with_jax_values():
    r = report("random_noise")
    v = r.verification
    assert v["status"] == "passed", r.summary()
    assert "the 1 random draw(s) take JAX's values from the same run" in v["detail"]
    # x [8, 16] @ w [16, 32]: 8 * 16 * 32 = 4096 MACs; the draw has none
    assert r.data["totals"]["macs"] == 4096
    (draw,) = draw_nodes(r)
    # one simple operation per drawn element, no DRAM read: 8 * 32 = 256
    assert draw["name"] == "draw:normal"
    assert draw["other_ops"] == 256 and draw["bytes_read"] == 0
    # other ops: the draw 256, `0.1 *` 256, `+` 256 = 768
    assert r.data["totals"]["other_ops"] == 768
    # fused: read x 8*16*4 = 512 and w 16*32*4 = 2048, write y 8*32*4 = 1024: 3584 B. The key
    # (uint32[2]) is no tensor of the program and the draw stays on chip.
    assert r.data["bytes"]["fused"] == 3584
    assert "random normal : f32[8, 32]" in r.ir


def test_capture_leaves_out_the_key():
    cap = capture_of("random_noise")
    doc = cap.document
    assert [t["name"] for t in doc["tensors"] if t["role"] == "input"] == ["x", "w"]
    (node,) = [n for n in doc["nodes"] if n["op"].startswith("jax.random")]
    # jax.random.normal(key, (8, 32)): the key is its only operand, left out
    assert node == {
        "name": "normal",
        "op": "jax.random.normal",
        "args": {},
        "outputs": ["normal"],
        "location": "random_noise.py:10 in forward",
    }
    assert cap.to_json() == capture_of("random_noise").to_json()  # same model, same bytes


def test_golden_draw_is_jax_own_draw():
    # the recorded value of the draw is what jax.random.normal gives for the model's key
    golden = capture_of("random_noise").golden()
    expected = jax.random.normal(jax.random.PRNGKey(7), (8, 32), jnp.float32)
    np.testing.assert_array_equal(golden["normal"], np.asarray(expected))


def test_verification_fails_with_another_draw():
    # the draw's values matter: the same program fed zeros for the draw does not verify
    cap = capture_of("random_noise")
    lowered = stages.lower_detailed(cap.to_json(), False, ())
    golden = cap.golden()
    assert verify_whole(lowered.ir, cap.document, golden, lowered).status == "passed"
    golden["normal"] = np.zeros_like(golden["normal"])
    result = verify_whole(lowered.ir, cap.document, golden, lowered)
    assert result.status == "failed"


def test_bernoulli_dropout_mask():
    r = report("random_dropout")
    assert r.verification["status"] == "passed", r.summary()
    assert r.data["totals"]["macs"] == 8 * 16 * 32  # 4096
    (draw,) = draw_nodes(r)
    assert draw["name"] == "draw:bernoulli"
    assert draw["other_ops"] == 8 * 32 and draw["bytes_read"] == 0  # 256 mask elements
    # other ops: relu 256, `/ 0.75` 256, the draw 256, the select 256 = 1024
    assert r.data["totals"]["other_ops"] == 1024
    # unfused: dot reads 512 + 2048, writes 1024 (3584); relu and div read and write 1024 each
    # (2 * 2048); the zeros broadcast writes 1024; the mask is written as bool, 256 B; the select
    # reads 1024 + 1024 + 256 and writes 1024 (3328): 3584 + 4096 + 1024 + 256 + 3328 = 12288
    assert r.data["bytes"]["unfused"] == 12288
    (node,) = [n for n in json.loads(r.capture_json)["nodes"] if n["op"] == "jax.random.bernoulli"]
    assert node["args"] == {"arg0": 0.75}  # p; the typed key<fry> operand is left out


def test_split_and_fold_in_are_dropped():
    r = report("random_keys")
    assert r.verification["status"] == "passed", r.summary()
    # uniform and normal before the scan, one normal per scan step (3): 5 draws
    assert "the 5 random draw(s)" in r.verification["detail"]
    assert [n["name"] for n in draw_nodes(r)] == [
        "draw:uniform",
        "draw:normal",
        "draw:normal_1",
        "draw:normal_2",
        "draw:normal_3",
    ]
    ops = {n["op"] for n in json.loads(r.capture_json)["nodes"]}
    assert not any(op.startswith("jax.random_") for op in ops)  # split, fold_in, wrap: no nodes
    assert "jax.random.uniform" in ops and "jax.random.normal" in ops
    # x [4, 8] = 32 elements: 5 draws of 32 = 160; x * a and + b: 64; each of the 3 steps adds,
    # tanh and sums 32: 3 * 96 = 288. 160 + 64 + 288 = 512 other ops, no MACs
    assert r.data["totals"]["other_ops"] == 512
    assert r.data["totals"]["macs"] == 0


def test_nnx_dropout_key_state_is_left_out():
    r = report("random_nnx_dropout")
    assert r.verification["status"] == "passed", r.summary()
    roles = {t["name"]: t["role"] for t in json.loads(r.capture_json)["tensors"]}
    # the Linear's kernel and bias are weights; the dropout's key and counter are not tensors
    assert sorted(k for k, v in roles.items() if v == "weight") == ["lin_bias", "lin_kernel"]
    assert r.data["totals"]["macs"] == 8 * 16 * 32  # 4096
    (draw,) = draw_nodes(r)
    assert draw["name"] == "draw:bernoulli" and draw["other_ops"] == 256


def test_draws_inside_while_and_cond_replay_the_capture_path():
    def f(x, key):
        def body(c):
            i, h, k = c
            k, sub = jax.random.split(k)
            return i + 1, h + jax.random.uniform(sub, h.shape), k

        h = lax.while_loop(lambda c: c[0] < 3, body, (0, x, key))[1]
        return lax.cond(True, lambda v: v * jax.random.normal(key, v.shape), lambda v: v, h)

    r = solar_jax.analyze(f, (jnp.ones((4, 8), jnp.float32), jax.random.key(5)))
    assert r.verification["status"] == "passed", r.summary()
    # 3 uniform draws (one per trip) and the cond's normal: 4 draws
    assert "the 4 random draw(s)" in r.verification["detail"]
    # 4 draws * 32 + 3 adds * 32 + the product 32 = 256 other ops
    assert r.data["totals"]["other_ops"] == 256


def test_draw_as_a_graph_output():
    def f(x, key):
        return x + 1.0, jax.random.randint(key, (2, 3), 0, 10)

    r = solar_jax.analyze(f, (jnp.ones((2, 3), jnp.float32), jax.random.PRNGKey(0)))
    assert r.verification["status"] == "passed", r.summary()
    assert len(r.verification["outputs"]) == 2  # the drawn integers are compared too


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (
            lambda x, k: x + jax.random.bits(k, x.shape).astype(jnp.float32),
            r"^\S+:\d+ in <lambda>: unsupported random primitive 'jax\.random_bits'",
        ),
        (
            lambda x, k: x + jax.random.key_data(k).astype(jnp.float32).sum(),
            r"unsupported use of a PRNG key: 'jax\.convert_element_type' computes a f32 value",
        ),
        (lambda x, k: (x, jax.random.split(k)), r"^output 1 of the function is a PRNG key"),
    ],
)
def test_unsupported_random_use_is_a_one_line_capture_error(fn, message):
    with pytest.raises(solar_jax.CaptureError, match=message) as err:
        solar_jax.capture(fn, (jnp.ones((4, 8), jnp.float32), jax.random.key(0)))
    assert "\n" not in str(err.value)


def test_sampler_without_a_rule_is_named():
    with pytest.raises(Exception, match=r"unsupported operator 'jax\.random\.orthogonal'") as err:
        solar_jax.analyze(
            lambda x, k: x @ jax.random.orthogonal(k, 8),
            (jnp.ones((4, 8), jnp.float32), jax.random.key(0)),
        )
    assert "\n" not in str(err.value)


def test_every_sampler_rule_is_a_draw():
    # loops over the registry: each jax.random.<sampler> rule declares its output `random`
    samplers = [op for op in _core.registered_ops() if op.startswith("jax.random.")]
    assert "jax.random.normal" in samplers and "jax.random.bernoulli" in samplers
    for op in samplers:
        doc = {
            "format": "solar-capture",
            "version": 1,
            "framework": "jax",
            "framework_version": jax.__version__,
            "capture_method": "jax.make_jaxpr",
            "source": None,
            "tensors": [
                {"name": "x", "role": "input", "dtype": "f32", "shape": [3]},
                {"name": "d", "role": "intermediate", "dtype": "f32", "shape": [3]},
                {"name": "y", "role": "output", "dtype": "f32", "shape": [3]},
            ],
            "nodes": [
                {"name": "d", "op": op, "args": {}, "outputs": ["d"]},
                {
                    "name": "y",
                    "op": "jax.add",
                    "args": {"arg0": {"tensor": "x"}, "arg1": {"tensor": "d"}},
                    "outputs": ["y"],
                },
            ],
            "outputs": ["y"],
        }
        lowered = stages.lower_detailed(json.dumps(doc), False, ())
        assert "random d : f32[3]" in lowered.ir, op
        assert [r["tensor"] for r in lowered.random] == ["d"], op


def test_cli_error_is_one_line(tmp_path):
    model = tmp_path / "bits_model.py"
    model.write_text(
        "import jax\nimport jax.numpy as jnp\n\n\n"
        "def forward(x, key):\n"
        "    return x + jax.random.bits(key, x.shape).astype(jnp.float32)\n\n\n"
        "def get_inputs():\n"
        "    return [jnp.ones((2, 3), jnp.float32), jax.random.key(0)]\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "solar", "analyze", str(model)], capture_output=True, text=True
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "bits_model.py:6 in forward: unsupported random primitive 'jax.random_bits'" in lines[0]
