"""Data-dependent programs analysed and verified (issue 13): random draws, training-mode dropout,
as_strided windows, bitwise masks, topk/sort/argsort/histc and a top-2 mixture of experts, on
the model files of tests/python/models/data/. Counts worked out by hand; f32 is 4 bytes, i64 8.
"""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from solar import torch as solar_torch  # noqa: E402
from solar.torch.capture import load_model_file  # noqa: E402

DATA = Path(__file__).resolve().parent / "models" / "data"


def analyze(name: str, **options) -> dict:
    return solar_torch.analyze_file(DATA / f"{name}.py", hw="H100-SXM", **options).data


def nodes_of(data: dict, op: str) -> list[dict]:
    return [n for n in data["nodes"] if n.get("op") == op]


def test_random_draw_is_generated_on_chip_and_verified_with_the_framework_draw():
    data = analyze("random_noise")
    assert data["verification"]["status"] == "passed"
    assert "1 random draw(s) take PyTorch's values" in data["verification"]["detail"]
    # fused: read x (8 * 16 * 4 = 512 B) and write y (512 B); the draw stays on chip: 1024 B
    assert data["bytes"]["fused"] == 1024
    # unfused, op by op: randn writes 512; mul reads 512 and writes 512; add reads x and the
    # product (1024) and writes 512: 512 + 1024 + 1536 = 3072
    assert data["bytes"]["unfused"] == 3072
    (draw,) = [n for n in data["nodes"] if n["name"].startswith("draw:")]
    # one simple operation per drawn element: 8 * 16 = 128
    assert draw["other_ops"] == 128 and draw["bytes_read"] == 0


def test_lstm_with_random_initial_state_passes():
    data = analyze("lstm_random_state")
    assert data["verification"]["status"] == "passed"
    assert "2 random draw(s)" in data["verification"]["detail"]
    # 2 layers over 5 steps, batch 2, hidden 16: layer 1 input 8, layer 2 input 16. Per step
    # and layer the gates are [4 * 16] outputs of (input + 16) inputs per batch row:
    # layer 1: 5 * 2 * 64 * (8 + 16) = 15360; layer 2: 5 * 2 * 64 * (16 + 16) = 20480
    assert data["totals"]["macs"] == 15360 + 20480


def test_training_dropout_feeding_softmax_verifies_per_op_and_whole():
    whole = analyze("dropout_softmax")
    assert whole["verification"]["status"] == "passed"
    per_op = analyze("dropout_softmax", verify_mode="per_op")
    assert per_op["verification"]["status"] == "passed"


def test_as_strided_window_partition_is_an_affine_read():
    data = analyze("window_partition")
    assert data["verification"]["status"] == "passed"
    # x is 2 * 8 * 8 * 4 = 512 elements (2048 B); fused: read it and write the 8 windows of
    # 16 * 4 (512 elements, 2048 B): 4096 B
    assert data["bytes"]["fused"] == 4096
    assert data["coverage"]["unsupported_ops"] == []


def test_bitwise_masks_and_shifts():
    data = analyze("sliding_mask")
    assert data["verification"]["status"] == "passed"
    # fused: read scores 2 * 8 * 8 * 4 = 512 B and ids 2 * 8 * 4 = 64 B; write the softmax
    # (512 B) and the mixed ids (i32, 64 B): 1152 B; the masks are computed on chip
    assert data["bytes"]["fused"] == 1152


def test_topk_sort_argsort_histc():
    data = analyze("topk_sort_histc")
    assert data["verification"]["status"] == "passed"
    # fused: read x (32 * 4 = 128 B); write topk values 4 * 3 * 4 = 48 and indices 4 * 3 * 8 =
    # 96, the sorted values 128 and order 256, the ranks 256 and the 5 counts 20:
    # 128 + 48 + 96 + 128 + 256 + 256 + 20 = 932
    assert data["bytes"]["fused"] == 932
    # sorting moves bytes and counts no comparisons (a lower bound: docs/lowering.md)
    for node in nodes_of(data, "argsort"):
        assert node["flops"] == 0


def test_moe_top2_counts_routed_macs_and_each_expert_weight_once():
    data = analyze("moe_top2", sol_options={"routing": "balanced"})
    assert data["verification"]["status"] == "passed"
    # T = 16, H = 32, F = 64, E = 4, top-2. Gate: T * H * E = 2048. Each of the T * 2 = 32 routed
    # slots runs its expert's two products, H * F + F * H = 4096: 32 * 4096 = 131072 (a dense
    # layer running every expert on every token would be twice that, E / 2 = 2).
    assert data["totals"]["macs"] == 2048 + 131072
    model, inputs = load_model_file(DATA / "moe_top2.py")
    with FlopCounterMode(display=False) as counter:
        model(*inputs)
    assert counter.get_total_flops() == 2 * (2048 + 131072)
    # fused DRAM bytes: x 16 * 32 * 4 = 2048, the gate 4 * 32 * 4 = 512, w1 and w2 4 * 32 * 64 * 4
    # = 32768 each (32 slots gather 32 * 2048 = 65536 elements of w1's 8192: all four experts,
    # each once), the output 2048: 2048 + 512 + 2 * 32768 + 2048 = 70144
    assert data["bytes"]["fused"] == 70144
    # data-dependent reads, each index counted as distinct up to the tensor's size: the routed
    # tokens, 32 slots of H = 32, read 1024 elements of x's 16 * 32 = 512 (each token twice,
    # counted once); w1 (the parameter p_w1) as above
    assumptions = data["routing_assumptions"]
    assert any(
        a.startswith("x: 1024 elements") and "counted as 512 of its 512" in a for a in assumptions
    )
    assert any(
        a.startswith("p_w1: 65536 elements") and "counted as 8192 of its 8192" in a
        for a in assumptions
    )


def test_moe_top2_concentrated_routing_counts_k_experts_a_lower_bound_for_any_routing():
    data = analyze("moe_top2")  # --routing concentrated, the default
    assert data["routing"] == "concentrated"
    # The expert index is flat[order]: the router's top-2 experts (2 different ones in every
    # row) taken in argsort's order, a permutation, so it holds 2 different experts whatever the
    # data: w1 and w2 are read at 2 experts, H * F = 2048 elements each, 2 * 2048 * 4 = 16384 B.
    # The token gather (x by order // K) is no router's choice: it reads the rows it names, the
    # 32 slots' 1024 elements counted as x's 512, which the gate reads whole anyway. Fused bytes:
    # x 2048, gate 512, w1 and w2 16384 each, the output 2048: 2048 + 512 + 2 * 16384 + 2048 =
    # 37376 (balanced: 70144).
    assert data["bytes"]["fused"] == 37376
    assert data["totals"]["macs"] == 2048 + 131072  # the work does not depend on the routing
    assumptions = data["routing_assumptions"]
    assert any(
        a.startswith("p_w1: 65536 elements")
        and "counted as 4096 of its 8192" in a
        and "(2 of its 4 slices along dim 0)" in a
        and "routed, concentrated" in a
        for a in assumptions
    )
    assert any(
        a.startswith("x: 1024 elements") and "not a router's choice" in a for a in assumptions
    )
