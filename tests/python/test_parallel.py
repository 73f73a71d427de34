"""``solar analyze MODEL.py --devices N --parallel LAYOUT`` (docs/parallel.md): the SOL per device
of a tensor-, data- or pipeline-parallel layout, on real PyTorch models, with the collectives
counted by hand. The planner and its formulas are tested in C++ (tests/sol/test_parallel.cpp);
here the captured graphs of a transformer block and a training step."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "tests" / "python" / "models"
NVLINK4_EACH_WAY = 450e9  # H100-SXM: NVLink 4, 900 GB/s both directions (docs/devices.md)


def analyze(*args: str) -> dict:
    from solar import cli

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = cli.main(["analyze", *args, "--json", "-"])
    assert rc == 0
    return json.loads(out.getvalue())


def test_megatron_block_all_reduces_twice():
    # tests/python/models/transformer.py: x [2, 8, 16], 2 heads. Tensor parallel over 2 devices:
    # qkv column-parallel (each device its head's queries, keys and values), attention by head,
    # proj row-parallel, then fc1 column- and fc2 row-parallel: one all-reduce after proj and
    # one after fc2, each of the block's activation 2 x 8 x 16 x 4 B = 1,024 B.
    r = analyze(str(MODELS / "transformer.py"), "--devices", "2", "--parallel", "tp=2")
    p = r["parallel"]
    assert p["layout"]["devices"] == 2 and p["layout"]["tp"] == 2
    comms = p["communication"]
    assert [c["collective"] for c in comms] == ["all-reduce", "all-reduce"]
    for c in comms:
        assert c["buffer_bytes"] == 1024
        assert c["sent_bytes"] == 1024  # ring: 2 (2 - 1) / 2 x 1,024
        assert c["time_s"] == pytest.approx(1024 / NVLINK4_EACH_WAY, rel=1e-12)
    split = {n["node"]: n["tp_loop"] for n in p["nodes"]}
    qk = [name for name in split if name.endswith("_qk")]
    assert qk and all(split[name] for name in qk), "attention splits its heads"
    # Fused per device: the compute of the sharded products halves; communication 2 x 2.276 ns.
    fused = p["fidelities"]["fused"]["terms"]
    assert fused["communication_s"] == pytest.approx(2 * 1024 / NVLINK4_EACH_WAY, rel=1e-12)
    # Every product is split in two; the layer norms, residual adds and biases after an
    # all-reduce run on both devices: more than half the one-device compute, less than all of it.
    assert r["sol"]["compute_s"] / 2 < fused["compute_s"] < r["sol"]["compute_s"]


def test_data_parallel_training_all_reduces_every_gradient():
    # tests/python/models/train/mlp.py: Linear 64 -> 32, ReLU, Linear 32 -> 8, batch 16, AdamW.
    # Data parallel over 2: every gradient and the loss are all-reduced; the gradients are the
    # parameters' sizes, (64 x 32 + 32 + 32 x 8 + 8) x 4 B = 2,344 x 4 = 9,376 B.
    r = analyze(
        str(MODELS / "train" / "mlp.py"),
        "--train",
        "--optimizer",
        "adamw",
        "--parallel",
        "dp=2",
    )
    comms = r["parallel"]["communication"]
    assert {c["collective"] for c in comms} == {"all-reduce"}
    reduced = {c["tensor"]: c["buffer_bytes"] for c in comms}
    assert reduced == {
        "grad_fc1_weight": 64 * 32 * 4,
        "grad_fc1_bias": 32 * 4,
        "grad_fc2_weight": 32 * 8 * 4,
        "grad_fc2_bias": 8 * 4,
        "loss": 4,
    }
    assert sum(b for t, b in reduced.items() if t != "loss") == 9376
    # Every replica runs the update on the whole gradient, after its all-reduce.
    before = {c["tensor"]: c["before"] for c in comms}
    assert all(before[t] for t in reduced if t != "loss")


def test_pipeline_stages_and_sends():
    # Two stages of the block at batch 2 x 8 x 16: the sends are activations crossing the cut,
    # each a whole multiple of the 512 B of one token row block (2 x 8 x 16 x 4 B = 1,024 B a
    # tensor of the block's width).
    r = analyze(str(MODELS / "transformer.py"), "--parallel", "pp=2,mb=2")
    stages = r["parallel"]["stages"]
    assert len(stages) == 2
    assert stages[0]["send_bytes"] > 0 and stages[1]["send_bytes"] == 0
    assert stages[0]["send_bytes"] % 1024 == 0
    nodes = sum(s["nodes"] for s in stages)
    assert nodes == len(r["nodes"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--devices", "3", "--parallel", "tp=2"], "uses 2 devices"),
        (["--devices", "2"], "needs --parallel"),
        (["--parallel", "tp=0"], "from 1 to 65536"),
        (["--parallel", "tq=2"], "is not tp=N"),
        (["--devices", "0", "--parallel", "tp=2"], "at least 1"),
        (
            ["--serve", "decode", "--parallel", "tp=2,pp=2"],
            "--serve takes tensor parallelism only (--parallel tp=N)",
        ),
    ],
)
def test_bad_layouts_are_one_line_errors(args, message):
    from solar import cli

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = cli.main(["analyze", str(MODELS / "mlp.py"), *args])
    assert rc != 0
    assert message in err.getvalue(), err.getvalue()
    assert "Traceback" not in err.getvalue()
    assert len(err.getvalue().strip().splitlines()) == 1, err.getvalue()


def test_analyze_file_takes_the_layout_and_the_routing():
    # solar.analyze_file takes --parallel, --devices and --routing as keywords
    # (solar.adapters.OPTIONS, derived from solar.options.KEYWORDS): the same two all-reduces
    # of 1,024 B as test_megatron_block_all_reduces_twice; the routing of an embedding's
    # data-dependent read stated.
    import solar

    cli = analyze(str(MODELS / "transformer.py"), "--devices", "2", "--parallel", "tp=2")
    r = solar.analyze_file(MODELS / "transformer.py", devices=2, parallel="tp=2").data
    assert [c["buffer_bytes"] for c in r["parallel"]["communication"]] == [1024, 1024]
    assert r["parallel"] == cli["parallel"]
    routed = solar.analyze_file(MODELS / "embedding_scan.py", routing="concentrated").data
    assert routed["routing"] == "concentrated"
