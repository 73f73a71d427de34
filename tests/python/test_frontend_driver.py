"""The PyTorch frontend's driver (docs/capture.md): lowering with unsupported operators,
coverage, deterministic dropout, verification modes (whole program, per op at reduced size,
not run), model files given to the analysis commands, and the top-level ``solar.analyze``."""

from __future__ import annotations

import json
import resource
import sys
import types
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import solar  # noqa: E402
from solar import adapters, cli, stages  # noqa: E402
from solar import torch as solar_torch  # noqa: E402
from solar.torch._golden import deterministic_dropout  # noqa: E402
from solar.torch._per_op import config_key  # noqa: E402
from solar.torch.capture import capture  # noqa: E402

pytestmark = pytest.mark.skipif(
    not hasattr(solar._core, "lower_capture_detailed"),
    reason="this build of solar._core has no lower_capture_detailed",
)


class MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 8)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


@pytest.fixture(scope="module")
def mlp():
    torch.manual_seed(0)
    model, x = MLP(), torch.randn(4, 16)
    cap = capture(model, (x,), source="mlp.py")
    return model, (x,), cap


def golden_of(model, inputs, cap):
    return lambda wanted: cap.golden(model, inputs, wanted)


# The MLP's capture: permute(w1) f32[16, 32] (2048 B), addmm f32[4, 32] (512 B), relu f32[4, 32]
# (512 B), permute(w2) f32[32, 8] (1024 B), addmm_1 f32[4, 8] (128 B): 5 nodes, 4224 B written.
MLP_NODE_BYTES = 2048 + 512 + 512 + 1024 + 128


def test_without_allow_unsupported_the_error_names_the_op_and_its_share(mlp):
    _, _, cap = mlp
    with pytest.raises(ValueError) as e:
        stages.lower_detailed(cap.to_json(), disabled_rules=["aten.relu.default"])
    message = str(e.value)
    assert "\n" not in message
    assert "unsupported operator 'aten.relu.default' (node 'relu', 3 of 5 nodes)" in message
    # 1 of 5 nodes = 20.0%; 512 of 4224 B = 12.1%
    assert "without a rule: 1 of 5 nodes (20.0%, 12.1% of the bytes the nodes write)" in message
    assert "--allow-unsupported" in message


def test_allow_unsupported_feeds_the_outputs_and_lists_the_coverage(mlp):
    model, inputs, cap = mlp
    report = solar_torch.analyze_capture(
        cap,
        golden_of(model, inputs, cap),
        "H100-SXM",
        None,
        allow_unsupported=True,
        disabled_rules=["aten.relu.default"],
        verify_mode="whole_program",
    )
    cov = report.coverage
    assert (cov["nodes"], cov["lowered"]) == (5, 4)
    (u,) = cov["unsupported_ops"]
    assert (u["op"], u["node"], u["inputs"], u["outputs"]) == (
        "aten.relu.default",
        "relu",
        ["addmm"],
        ["relu"],
    )
    assert u["output_bytes"] == 4 * 32 * 4  # f32[4, 32]
    assert cov["share_nodes"] == pytest.approx(1 / 5)
    assert cov["share_bytes"] == pytest.approx(512 / MLP_NODE_BYTES)
    assert "input relu : f32[4, 32]" in report.ir
    v = report.verification
    assert v["status"] == "passed" and v["mode"] == "whole_program", report.summary()
    assert "fed from PyTorch's run" in v["detail"]
    # both linears are still counted: 4*16*32 + 4*32*8 MACs
    assert sum(n["macs"] for n in report.data["nodes"]) == 4 * 16 * 32 + 4 * 32 * 8
    summary = report.summary()
    assert summary.startswith("UNSUPPORTED: 1 of 5 nodes (20.0%) were not lowered")
    assert "their work is NOT in the numbers below" in summary.splitlines()[1]
    assert "aten.relu.default (node 'relu'" in summary.splitlines()[2]


def test_no_verify_says_so_plainly(mlp):
    _, _, cap = mlp
    report = solar_torch.analyze_capture(cap, None, "H100-SXM", None, verify=False)
    assert report.verification["status"] == "not_run"
    assert report.coverage["unsupported_ops"] == [] and report.coverage["lowered"] == 5
    # the header's status line
    assert "\n  not run: verification skipped (--no-verify)" in report.summary()


def test_per_op_verification_checks_each_configuration(mlp):
    model, inputs, cap = mlp
    report = solar_torch.analyze_capture(
        cap, golden_of(model, inputs, cap), "H100-SXM", None, verify_mode="per_op"
    )
    v = report.verification
    assert v["status"] == "passed" and v["mode"] == "per_op", report.summary()
    # the two permutes differ in nothing but sizes ([32, 16] and [8, 32], dims [1, 0]): one
    # configuration; the two addmms too (beta = alpha = 1); the relu: 3 configurations, 5 nodes
    assert [(c["op"], c["nodes"]) for c in v["ops"]] == [
        ("aten.permute.default", 2),
        ("aten.addmm.default", 2),
        ("aten.relu.default", 1),
    ]
    assert all(c["size"] == "real size" and c["result"] == "passed" for c in v["ops"])


def test_per_op_shrinks_sizes_and_keeps_attributes():
    # addmm(b[1024], x[256, 512], w[512, 1024]) is 0.5 + 2 + 1 M floats; the sizes 256, 512 and
    # 1024 are divided by d until the node's tensors fit in 1 MiB
    def f(x, w, b):
        return torch.addmm(b, x, w, beta=0.5, alpha=2.0)

    fake = torch._subclasses.fake_tensor.FakeTensorMode()
    with fake:
        args = (torch.randn(256, 512), torch.randn(512, 1024), torch.randn(1024))
    report = solar_torch.analyze(f, args, verify_mode="auto")
    v = report.verification
    (check,) = v["ops"]
    assert v["mode"] == "per_op" and check["result"] == "passed", report.summary()
    # bytes at d: 4 * (256*512 + 512*1024 + 1024 + 256*1024) / d^2 = 3.67 MB / d^2 <= 1 MiB
    # first at d = 2 (0.92 MB): sizes 128, 256, 512
    assert check["size"] == "reduced (exact, sizes / 2)"
    assert sorted(check["shapes"].values()) == [[128, 256], [128, 512], [256, 512], [512]]
    assert "per_op" in v["mode"] and "no real inputs" in v["why"]


def test_config_key_ignores_sizes_not_attributes():
    dtypes = {"a": "f32", "b": "f32", "c": "f16"}
    ranks = {"a": 2, "b": 2, "c": 2}
    node = {"op": "aten.sum.dim_IntList", "args": {"self": {"tensor": "a"}, "dim": [1]},
            "outputs": ["b"]}  # fmt: skip
    other = dict(node, args={"self": {"tensor": "c"}, "dim": [1]})
    assert config_key(node, dtypes, ranks) != config_key(other, dtypes, ranks)  # dtype differs
    renamed = dict(node, args={"self": {"tensor": "b"}, "dim": [1]})  # another f32 rank-2 tensor
    assert config_key(node, dtypes, ranks) == config_key(renamed, dtypes, ranks)
    other_dim = dict(node, args={"self": {"tensor": "a"}, "dim": [0]})  # an attribute differs
    assert config_key(node, dtypes, ranks) != config_key(other_dim, dtypes, ranks)


def test_deterministic_dropout_mask():
    # element i kept iff frac((i + 1) * 0.6180339887498949) >= p; with p = 0.25:
    # i=0: 0.618 kept; i=1: frac(1.236) = 0.236 dropped; i=2: 0.854 kept; i=3: 0.472 kept;
    # i=4: frac(3.090) = 0.090 dropped; i=5: frac(3.708) = 0.708 kept
    x = torch.arange(1.0, 7.0).reshape(2, 3)
    out, mask = deterministic_dropout(x, 0.25, True)
    assert mask.tolist() == [[True, False, True], [True, False, True]]
    # kept elements scaled by 1 / (1 - 0.25) = 4/3
    np.testing.assert_allclose(out.numpy(), [[4 / 3, 0, 4], [16 / 3, 0, 8]], rtol=1e-6)
    same, ones = deterministic_dropout(x, 0.25, False)  # eval: the op itself
    assert torch.equal(same, x) and bool(ones.all())


class DropoutMLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 6)
        self.drop = torch.nn.Dropout(0.25)

    def forward(self, x):
        return self.drop(self.fc(x))


def test_dropout_in_training_mode_verifies_with_the_deterministic_mask():
    torch.manual_seed(0)
    model, x = DropoutMLP(), torch.randn(2, 8)
    assert model.training
    cap = capture(model, (x,), source="dropout.py")
    assert "aten.native_dropout.default" in [n["op"] for n in cap.document["nodes"]]
    golden = cap.golden(model, (x,))
    (out,) = cap.document["outputs"]
    # the mask over the 2 x 6 output, flat index i, (i + 1) * 0.618...: 0.618, 1.236, 1.854,
    # 2.472, 3.090, 3.708, 4.326, 4.944, 5.562, 6.180, 6.798, 7.416; kept iff frac >= 0.25
    i = np.arange(1, 13, dtype=np.float64) * 0.6180339887498949
    assert ((i - np.floor(i)) >= 0.25).tolist() == [
        True, False, True, True, False, True, True, True, True, False, True, True,
    ]  # fmt: skip
    fc = (x @ model.fc.weight.T + model.fc.bias).detach().numpy().reshape(-1)
    expected = np.where((i - np.floor(i)) >= 0.25, fc / 0.75, 0.0).reshape(2, 6)
    np.testing.assert_allclose(golden[out], expected, rtol=1e-6, atol=1e-6)
    assert "dropout made deterministic" in cap.golden_notes[0]
    # needs the native_dropout rule (src/frontend/rules*.cpp) to lower
    report = solar_torch.analyze_capture(
        cap, lambda wanted: cap.golden(model, (x,), wanted), "H100-SXM", None
    )
    v = report.verification
    assert v["status"] == "passed", report.summary()
    assert any("dropout made deterministic" in n for n in v["notes"])


BIG_MODEL = """
import torch
from torch import nn


class Model(nn.Module):
    # 32768 x 65536 + 65536 + 65536 x 16 + 16 = 2,148,598,800 parameters: 8.6 GB in fp32
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(32768, 65536)
        self.fc2 = nn.Linear(65536, 16)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def get_inputs():
    return [torch.randn(4, 32768)]


def get_init_inputs():
    return []
"""


def test_a_model_of_two_billion_parameters_is_analysed_without_its_memory(tmp_path):
    path = tmp_path / "big.py"
    path.write_text(BIG_MODEL)
    report = solar_torch.analyze_file(path)
    v = report.verification
    assert v["mode"] == "per_op" and v["status"] == "passed", report.summary()
    assert "over the verification budget" in v["why"]
    assert all(c["size"].startswith("reduced") for c in v["ops"])
    # fc1: 4 x 32768 x 65536 MACs; fc2: 4 x 65536 x 16
    assert report.data["totals"]["macs"] == 4 * 32768 * 65536 + 4 * 65536 * 16
    # never allocated: the peak memory of this process stays far below the 8.6 GB of weights
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert peak_kb < 3_000_000, peak_kb


def test_analysis_commands_take_a_model_file(tmp_path, capsys):
    model = tmp_path / "tiny.py"
    model.write_text(
        "import torch\n\n"
        "class Model(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        return torch.relu(x) * 2.0\n\n"
        "def get_inputs():\n    return [torch.randn(4, 8)]\n\n"
        "def get_init_inputs():\n    return []\n"
    )
    assert cli.main(["sol", str(model), "--hw", "H100-SXM", "--fidelity", "unfused"]) == 0
    out = capsys.readouterr().out
    assert "SOL of tiny.py on H100-SXM" in out
    assert "passed: whole program, 1 output(s) compared with PyTorch" in out
    assert "\nfused " not in out  # --fidelity reached sol
    assert cli.main(["compare", str(model), "--hw", "H100-SXM,B200"]) == 0
    assert "B200" in capsys.readouterr().out
    bad = tmp_path / "bad.py"
    bad.write_text("x = 1\n")
    assert cli.main(["provision", str(bad), "--latency", "1ms"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("solar provision: error: ") and err.count("\n") == 1
    argv = ["analyze", str(model), "--no-verify", "--allow-unsupported", "--json", "-"]
    assert cli.main([*argv, "--fidelity", "fused", "--verify-budget-mb", "1"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["verification"]["status"] == "not_run"
    assert report["coverage"]["unsupported_ops"] == []
    assert sorted(report["sol"]) == ["bottleneck_fused", "compute_s", "fused_s", "memory_fused_s"]


def test_top_level_analyze_and_jax_dispatch(monkeypatch, tmp_path):
    def f(a, b):
        return torch.relu(a @ b)

    report = solar.analyze(f, (torch.randn(3, 4), torch.randn(4, 5)))
    assert report.verification["status"] == "passed"
    assert report.data["totals"]["macs"] == 3 * 4 * 5
    assert json.loads(report.to_json())["hardware"]["name"] == "H100-SXM"

    calls = []
    fake_jax_frontend = types.SimpleNamespace(
        analyze=lambda fn, inputs, hw, **options: calls.append(("analyze", hw, options)),
        analyze_file=lambda path, hw, **options: calls.append(("file", hw, options)),
    )
    monkeypatch.setitem(sys.modules, "solar.jax", fake_jax_frontend)
    monkeypatch.setattr(solar, "jax", fake_jax_frontend, raising=False)

    class Array:  # stands for jax.Array
        pass

    monkeypatch.setitem(sys.modules, "jax", types.SimpleNamespace(Array=Array))
    # Every option reaches the JAX adapter unchanged (solar.adapters.OPTIONS).
    every = {
        "policy": "p",
        "source": "s.py",
        "allow_unsupported": True,
        "disabled_rules": ["jax.tanh"],
        "verify": False,
        "verify_mode": "per_op",
        "verify_budget_mb": 1.0,
        "verify_budget_s": 2.0,
        "fidelity": "fused",
        "sol_options": {"routing": "concentrated"},
        "stage_times": {},
        "train": False,  # a training step (docs/training.md): dispatch checks these three and
        "optimizer": None,  # passes them on only for a training step (below)
        "loss": None,
        "cache_state": "warm",  # keywords of the analysis: carried in sol_options (below)
        "kernel_floor": "on",
        "routing": "balanced",  # given twice: the keyword wins over sol_options'
        "parallel": "tp=2",
        "devices": 2,
    }
    assert sorted(every) == sorted(adapters.OPTIONS)
    solar.analyze(lambda x: x, (Array(),), hw="B200", **every)
    jax_file = tmp_path / "jmodel.py"
    jax_file.write_text("import numpy\nfrom flax import nnx\n")
    file_options = {k: v for k, v in every.items() if k != "source"}
    solar.analyze_file(jax_file, hw="A6000", **file_options)
    training = ("train", "optimizer", "loss", *adapters.SOL_KEYWORDS)
    sol_options = {
        "routing": "balanced",
        "cache_state": "warm",
        "kernel_floor": "on",
        "parallel": "tp=2",
        "devices": 2,
    }
    forwarded = {k: v for k, v in every.items() if k not in training} | {"sol_options": sol_options}
    file_forwarded = {k: v for k, v in file_options.items() if k not in training} | {
        "sol_options": sol_options
    }
    assert calls == [("analyze", "B200", forwarded), ("file", "A6000", file_forwarded)]
    calls.clear()
    solar.analyze(lambda x: x, (Array(),), hw="B200", train=True, optimizer="adamw")
    assert calls == [("analyze", "B200", {"train": True, "optimizer": "adamw"})]
    with pytest.raises(ValueError, match="unknown optimizer 'lion'"):
        solar.analyze(lambda x: x, (Array(),), train=True, optimizer="lion")
    with pytest.raises(TypeError, match="unknown option"):
        solar.analyze_file(jax_file, verfy=False)


def test_the_example_transformer_block_verifies():
    example = Path(__file__).resolve().parents[2] / "examples" / "models" / "transformer_block.py"
    report = solar_torch.analyze_file(example)
    assert report.verification["status"] == "passed", report.summary()
    assert report.verification["mode"] == "whole_program"
    # q, k, v, out projections: 4 * (2*16 tokens * 64 * 64) = 524288; MLP: 2 * (32 * 64 * 256)
    # = 1048576; q k^T and p v over the causal triangle (query i sees keys 0..i: 1 + ... + 16
    # = 136 pairs), 2 * 4 batch-heads, 16 dims: 2 * (8 * 136 * 16) = 34816; two layer norms'
    # (x - mean)^2: 2 * (32 * 64) = 4096
    assert report.data["totals"]["macs"] == 524288 + 1048576 + 34816 + 4096


def test_training_encoder_layer_with_attention_dropout_verifies():
    # Training mode: export keeps attention as SDPA with dropout_p = 0.1 and the residual
    # dropouts as native_dropout; the golden run drops both with SOLAR's deterministic mask.
    import torch
    from torch import nn

    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.1, batch_first=True)
    report = solar_torch.analyze(layer, (torch.randn(2, 5, 16),))
    ops = {node["op"] for node in json.loads(report.capture_json)["nodes"]}
    assert "aten.scaled_dot_product_attention.default" in ops
    assert "aten.native_dropout.default" in ops
    assert report.verification["status"] == "passed", report.summary()
