"""Training steps of JAX programs (docs/training.md, "JAX"): ``jax.value_and_grad`` of the loss
with respect to a Flax model's parameters, captured with every node tagged forward or backward,
verified against JAX's own value_and_grad on the same inputs, and analysed per phase.

MACs by hand (a dense layer of a [rows, k] input into n features is rows * k * n MACs). JAX's
backward of ``y = x @ W + b`` is ``dW = x^T dy`` (k * rows * n MACs) and ``dx = dy W^T`` (rows *
n * k MACs), each the forward's MACs; JAX differentiates only the parameters, so the first
layer's ``dx`` (the model input's cotangent) is never formed: backward = 2 x forward minus the
first layer's forward MACs.

- jax_models/train/mlp.py (nnx, batch 16): forward fc1 16*64*32 = 32768, fc2 16*32*8 = 4096:
  36864. Backward: dW2 32*16*8 = 4096, dX2 16*8*32 = 4096, dW1 64*16*32 = 32768 (no dX1): 40960.
- jax_models/mlp.py (linen, [8, 16] -> 32 -> 32 -> 4): forward 8*16*32 + 8*32*32 + 8*32*4 =
  4096 + 8192 + 1024 = 13312; backward 2 * 13312 - 4096 = 22528.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

jax = pytest.importorskip("jax")
nnx = pytest.importorskip("flax.nnx")

import jax.numpy as jnp  # noqa: E402

import solar  # noqa: E402
import solar.jax as solar_jax  # noqa: E402
from solar import cli  # noqa: E402

MODELS = Path(__file__).resolve().parent / "jax_models"
TRAIN_MLP = MODELS / "train" / "mlp.py"


@functools.cache
def train_report(path: Path):
    return solar.analyze_file(str(path), train=True)


def phases(report) -> dict:
    return {p["phase"]: p for p in report.data["training"]["phases"]}


def checked(report) -> dict:
    """The verified outputs: name -> max_abs_err."""
    return {c["name"]: c for c in report.verification["checked"]}


def test_nnx_mlp_file_forward_backward_and_verified_gradients():
    r = train_report(TRAIN_MLP)
    assert r.verification["status"] == "passed"
    assert r.verification["mode"] == "whole_program"
    assert all(o["passed"] for o in r.verification["outputs"])
    names = [c["name"] for c in r.verification["outputs"]]
    assert names == ["loss", "grad_fc1_bias", "grad_fc1_kernel", "grad_fc2_bias", "grad_fc2_kernel"]
    p = phases(r)
    assert list(p) == ["forward", "backward"]  # no --optimizer: no update
    assert p["forward"]["totals"]["macs"] == 36864
    assert p["backward"]["totals"]["macs"] == 40960
    assert r.data["totals"]["macs"] == 36864 + 40960
    assert r.data["training"]["step"]["totals"]["macs"] == 77824
    # Kept for the backward: fc1's pre-activation (JAX's ReLU backward masks with it > 0), the
    # ReLU output (dW2 reads it), both f32[16, 32] = 2048 B, and out - 1 (the square's
    # derivative), f32[16, 8] = 512 B.
    acts = {a["tensor"]: a["bytes"] for a in r.data["training"]["activations"]}
    assert acts == {"add": 2048, "max": 2048, "sub": 512}
    assert r.data["training"]["activation_bytes"] == 4608


def test_golden_is_jax_value_and_grad():
    # The verification's reference: the step's loss and gradients from JAX's run, the same as
    # nnx.value_and_grad of the file's get_loss on a model built as the file's loader builds it.
    import importlib.util

    cap, golden = solar_jax.capture_file(TRAIN_MLP, train=True)
    data = golden()
    spec = importlib.util.spec_from_file_location("jax_train_mlp", TRAIN_MLP)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = module.Model(rngs=nnx.Rngs(0))
    (x,) = module.get_inputs()
    loss, grads = nnx.value_and_grad(lambda m: module.get_loss(m(x), x))(model)
    assert abs(float(data["loss"]) - float(loss)) <= 1e-5 * abs(float(loss))
    for layer in ("fc1", "fc2"):
        for param in ("kernel", "bias"):
            want = getattr(getattr(grads, layer), param)[...]
            got = data[f"grad_{layer}_{param}"]
            assert got.shape == want.shape
            assert float(jnp.max(jnp.abs(got - want))) <= 1e-5 * float(jnp.max(jnp.abs(want)))
            assert float(jnp.max(jnp.abs(want))) > 0.1  # gradients of order 1, not tiny


def test_capture_document_phases():
    cap, _ = solar_jax.capture_file(TRAIN_MLP, train=True)
    doc = cap.document
    nodes = doc["nodes"]
    assert all(n["phase"] in ("forward", "backward") for n in nodes)
    kinds = [n["phase"] for n in nodes]
    assert kinds == sorted(kinds, key=["forward", "backward"].index)  # forward nodes first
    producer = {o: n for n in nodes for o in n["outputs"]}
    assert doc["outputs"][0] == "loss" and producer["loss"]["phase"] == "forward"
    assert producer["loss"]["op"] == "jax.reduce_sum"
    for name in doc["outputs"][1:]:
        assert name.startswith("grad_") and producer[name]["phase"] == "backward"
    weights = [t["name"] for t in doc["tensors"] if t["role"] == "weight"]
    assert weights == ["fc1_bias", "fc1_kernel", "fc2_bias", "fc2_kernel"]
    # 4 dot_generals: fc1 and fc2 forward, then dW2, dX2, dW1 in the backward (no dX1).
    dots = [n["phase"] for n in nodes if n["op"] == "jax.dot_general"]
    assert dots == ["forward", "forward", "backward", "backward", "backward"]


def test_linen_file_backward_is_twice_the_forward_less_the_first_dx():
    r = train_report(MODELS / "mlp.py")
    assert r.verification["status"] == "passed"
    p = phases(r)
    assert p["forward"]["totals"]["macs"] == 13312
    assert p["backward"]["totals"]["macs"] == 2 * 13312 - 4096
    grads = sorted(c["name"] for c in r.verification["outputs"] if c["name"] != "loss")
    assert grads == sorted(f"grad_Dense_{i}_{p}" for i in range(3) for p in ("bias", "kernel"))


def test_nnx_module_api_with_a_loss():
    class Linear(nnx.Module):
        def __init__(self, rngs: nnx.Rngs) -> None:
            self.fc = nnx.Linear(64, 32, rngs=rngs)

        def __call__(self, x: jax.Array) -> jax.Array:
            return self.fc(x)

    model = Linear(nnx.Rngs(0))
    x = jax.random.normal(jax.random.PRNGKey(3), (16, 64), jnp.float32)
    r = solar.analyze(model, (x,), train=True, loss=lambda out, x: jnp.sum(out * out))
    assert r.verification["status"] == "passed"
    p = phases(r)
    # forward 16*64*32 = 32768; backward dW only (the input needs no gradient): 64*16*32.
    assert p["forward"]["totals"]["macs"] == 32768
    assert p["backward"]["totals"]["macs"] == 32768
    assert {c["name"] for c in r.verification["outputs"]} == {
        "loss",
        "grad_fc_bias",
        "grad_fc_kernel",
    }


def test_dropout_step_takes_jax_draws():
    # nnx.Dropout in training mode: the mask is a random draw taken from JAX's own run.
    r = train_report(MODELS / "random_nnx_dropout.py")
    assert r.verification["status"] == "passed"
    assert list(phases(r)) == ["forward", "backward"]


def test_cli_train_json(tmp_path, capsys):
    out = tmp_path / "r.json"
    rc = cli.main(["analyze", str(TRAIN_MLP), "--train", "--json", str(out)])
    assert rc == 0
    data = json.loads(out.read_text())
    assert [p["phase"] for p in data["training"]["phases"]] == ["forward", "backward"]
    table = capsys.readouterr().out
    assert "Training step: each phase run alone, and the whole step" in table
    for row in ("forward", "backward", "step"):
        assert any(line.startswith(row + " ") for line in table.splitlines()), row


@pytest.mark.parametrize(
    "path, args, message",
    [
        (
            MODELS / "rnn_scan.py",  # forward(*inputs): every argument is an input
            ["--train"],
            "--train: the model has no parameters to differentiate",
        ),
        (
            MODELS / "cnn.py",  # max pooling's backward
            ["--train"],
            "unsupported operator 'jax.select_and_scatter_add'",
        ),
    ],
)
def test_errors_are_one_line(path, args, message, capsys):
    rc = cli.main(["analyze", str(path), *args])
    err = capsys.readouterr().err
    assert rc == 1
    assert err.count("\n") == 1 and "Traceback" not in err
    assert message in err


@pytest.mark.parametrize(
    "body, message",
    [
        ("return output * 2.0", "get_loss returned a float32 array of shape [16, 8]"),
        ("raise KeyError('labels')", "get_loss failed: KeyError: 'labels'"),
    ],
)
def test_bad_loss_is_one_line(tmp_path, body, message, capsys):
    text = TRAIN_MLP.read_text().replace("return jnp.sum(jnp.square(output - 1.0))", body)
    path = tmp_path / "bad_loss.py"
    path.write_text(text)
    rc = cli.main(["analyze", str(path), "--train"])
    err = capsys.readouterr().err
    assert rc == 1 and err.count("\n") == 1
    assert message in err


def test_api_errors():
    def f(x):
        return x * 2.0

    x = jnp.ones((2, 2))
    with pytest.raises(ValueError, match="no parameters to differentiate"):
        solar.analyze(f, (x,), train=True)
    with pytest.raises(ValueError, match="a loss function needs train=True"):
        solar.analyze(f, (x,), loss=lambda out, x: out.sum())
    with pytest.raises(ValueError, match="--optimizer needs --train"):
        solar.analyze(f, (x,), optimizer="sgd")
    with pytest.raises(ValueError, match="unknown optimizer 'lion'"):
        solar.analyze(f, (x,), train=True, optimizer="lion")


def test_docs_output_block_is_a_real_run(capsys):
    # docs/training.md's JAX report block is this command's output, from its first line to the
    # activations; the errors' digits depend on XLA's CPU kernels, so they are not compared.
    import re

    docs = Path(__file__).resolve().parents[2] / "docs" / "training.md"
    block = docs.read_text().split("$ solar analyze tests/python/jax_models/train/mlp.py --train\n")
    expected = block[1].split("\n```")[0]
    rc = cli.main(["analyze", str(TRAIN_MLP), "--train"])
    assert rc == 0
    out = capsys.readouterr().out

    def digits(text: str) -> str:
        return re.sub(r"max_(abs|rel)_err=\S+", r"max_\1_err=E", text)

    assert digits(out).startswith(digits(expected) + "\n")


# The update's DRAM bytes, fused (2344 fp32 parameters: fc1 64*32 + 32, fc2 32*8 + 8): SGD reads
# the parameter and its gradient and writes the parameter, 12 B a parameter; Adam(W) reads the
# parameter, the gradient and two moments and writes the parameter and the moments, 28 B.
@pytest.mark.parametrize("optimizer, per_param", [("sgd", 12), ("adam", 28), ("adamw", 28)])
def test_optimizer_update_matches_optax(optimizer, per_param):
    optax = pytest.importorskip("optax")
    from solar.jax._train import STEP

    r = solar.analyze_file(str(TRAIN_MLP), train=True, optimizer=optimizer)
    assert r.verification["status"] == "passed"
    p = phases(r)
    assert list(p) == ["forward", "backward", "optimizer"]
    assert p["optimizer"]["totals"]["macs"] == 0
    assert p["optimizer"]["bytes"]["fused"] == 2344 * per_param
    compared = {o["name"] for o in r.verification["outputs"]}
    params = ["fc1_bias", "fc1_kernel", "fc2_bias", "fc2_kernel"]
    assert {f"new_{n}" for n in params} <= compared
    # The golden update (XLA's run of the step) is optax's on the same values.
    cap, golden = solar_jax.capture_file(TRAIN_MLP, train=True, optimizer=optimizer)
    data = golden()
    weights = {n: jnp.asarray(data[n]) for n in params}
    grads = {n: jnp.asarray(data[f"grad_{n}"]) for n in params}
    h = {"b1": 0.9, "b2": 0.999, "eps": 1e-8}
    opt = {
        "sgd": lambda: optax.sgd(1e-3),
        "adam": lambda: optax.adam(1e-3, **h),
        "adamw": lambda: optax.adamw(1e-3, weight_decay=1e-2, **h),
    }[optimizer]()
    state = opt.init(weights)
    if optimizer != "sgd":
        moments = {
            s: {n: jnp.asarray(data[f"s_{n}_{s}"]) for n in params}
            for s in ("exp_avg", "exp_avg_sq")
        }
        adam = state[0]._replace(
            count=jnp.asarray(STEP - 1, jnp.int32), mu=moments["exp_avg"], nu=moments["exp_avg_sq"]
        )
        state = (adam, *state[1:])
    updates, new_state = opt.update(grads, state, weights)
    new = optax.apply_updates(weights, updates)
    for n in params:
        assert float(jnp.max(jnp.abs(new[n] - data[f"new_{n}"]))) <= 1e-6
        assert float(jnp.max(jnp.abs(new[n] - weights[n]))) > 1e-5  # the update moved it
        if optimizer != "sgd":
            assert float(jnp.max(jnp.abs(new_state[0].mu[n] - data[f"new_{n}_exp_avg"]))) <= 1e-6
            assert float(jnp.max(jnp.abs(new_state[0].nu[n] - data[f"new_{n}_exp_avg_sq"]))) <= 1e-6


def test_docs_optimizer_table_is_a_real_run(capsys):
    docs = Path(__file__).resolve().parents[2] / "docs" / "training.md"
    text = docs.read_text()
    # the console block of the command (test_studies.py compares it whole): its report, from
    # the "SOL of" line on, with the optimizer's rows (the verification lines before it hold
    # the framework's measured errors, compared by tolerance there)
    block = text.split(
        "```console\n$ solar analyze tests/python/jax_models/train/mlp.py --train --optimizer "
        "adamw\n"
    )
    shown = block[1].split("\n```")[0]
    expected = shown[shown.index("SOL of ") :]
    assert "optimizer" in expected
    rc = cli.main(["analyze", str(TRAIN_MLP), "--train", "--optimizer", "adamw"])
    assert rc == 0
    assert expected + "\n" in capsys.readouterr().out
