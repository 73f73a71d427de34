"""Per-node headroom (docs/calibrate.md, "Per-node headroom"): the lowering's provenance, node
timing with ``solar analyze --measure``, and ``solar sol --measured-nodes`` with hand-made
times."""

from __future__ import annotations

import json
import os

import pytest

pytest.importorskip("torch")

from solar import cli, stages  # noqa: E402
from solar.ir import run_cli_captured  # noqa: E402

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
MLP = os.path.join(os.path.dirname(__file__), "models", "mlp.py")
MLP_IR = os.path.join(ROOT, "examples", "mlp.ir")
H100_BW = 3.35e12  # H100-SXM's DRAM bandwidth (B/s), data/hw/H100-SXM.yaml


def test_lowering_lists_each_nodes_kernels_and_tensors() -> None:
    from solar.torch.capture import capture_model_file

    cap, _, _ = capture_model_file(MLP)
    lowered = stages.lower_detailed(cap.to_json())
    # addmm(b, x, w^T) lowers to a matmul into a temporary and a bias add; permute is a view.
    assert lowered.node_kernels == {
        "permute": [],
        "addmm": ["addmm_mm", "addmm_map"],
        "relu": ["relu_map"],
        "permute_1": [],
        "addmm_1": ["addmm_1_mm", "addmm_1_map"],
    }
    assert lowered.node_tensors["addmm"] == ["addmm", "addmm_acc"]
    assert lowered.node_tensors["permute"] == ["permute"]


def test_measure_times_every_node(tmp_path) -> None:
    # The SOL is of H100-SXM, measured on this machine's CPU: a what-if whose every SOL (ns) is
    # certainly below a CPU time (us), so every headroom is >= 1.
    out = tmp_path / "r.json"
    # Without the kernel floor: the node SOLs below are the formulas' (bytes / bandwidth).
    args = ["analyze", MLP, "--hw", "H100-SXM", "--measure", "--kernel-floor", "off"]
    assert cli.main([*args, "--json", str(out)]) == 0
    h = json.loads(out.read_text())["headroom"]
    data = json.loads(out.read_text())
    assert h["what_if"] is True
    assert isinstance(h["nodes_method"], str) and "median of 20" in h["nodes_method"]
    nodes = {n["node"]: n for n in h["nodes"]}
    assert list(nodes) == sorted(nodes, key=lambda k: -nodes[k]["measured_s"])
    assert set(nodes) == {"permute", "addmm", "relu", "permute_1", "addmm_1"}
    # Unfused bytes by hand (f32, x 4x16, fc1 16->32, fc2 32->8); every node is memory bound.
    # Each nn.Linear is one framework operation (aten.linear: permute + addmm, one op block), run
    # as one kernel: its matmul's accumulator stays on chip.
    #   addmm:   x 256 + w1 2048 + b1 128 read, 512 written = 2944 (the mm and map nodes each
    #            alone would be 2816 + 1152 = 3968)
    #   relu:    512 + 512 = 1024
    #   addmm_1: relu 512 + w2 1024 + b2 32 read, 128 written = 1696 (alone: 1664 + 288 = 1952)
    expected_bytes = {"addmm": 2944, "relu": 1024, "addmm_1": 1696}
    for name, n in nodes.items():
        assert isinstance(n["measured_s"], float) and n["measured_s"] > 0
        assert isinstance(n["op"], str) and n["op"].startswith("aten.")
        assert isinstance(n["graph_nodes"], list)
        if name.startswith("permute"):  # a view: folds away, no SOL, no ratio
            assert n["status"] == "view (no work)"
            assert n["headroom"] is None and n["sol_unfused_s"] == 0 and n["graph_nodes"] == []
            continue
        assert n["status"] == "ok"
        assert n["sol_unfused_s"] == pytest.approx(expected_bytes[name] / H100_BW, rel=1e-12)
        assert n["headroom"] == pytest.approx(n["measured_s"] / n["sol_unfused_s"], rel=1e-12)
        assert n["headroom"] >= 1
    assert nodes["addmm"]["graph_nodes"] == ["addmm_mm", "addmm_map"]
    # Every graph node is attributed: the nodes' SOL sums to the unfused SOL,
    # (2944 + 1024 + 1696) B = 5664 B / 3.35e12 B/s = 1.6907 ns.
    assert h["nodes_unattributed"] == [] and h["nodes_unattributed_sol_s"] == 0
    total = sum(n["sol_unfused_s"] for n in h["nodes"])
    assert total == pytest.approx(5664 / H100_BW, rel=1e-12)
    assert total == pytest.approx(data["sol"]["unfused_s"], rel=1e-12)
    assert h["nodes_sol_unfused_s"] == pytest.approx(total, rel=1e-12)


def _sol(args: list[str]) -> tuple[int, str, str]:
    return run_cli_captured(["sol", MLP_IR, "--hw", "H100-SXM", *args])


def test_measured_nodes_hand_made(tmp_path) -> None:
    times = tmp_path / "nodes.json"
    times.write_text(
        json.dumps(
            {
                "method": "by hand",
                "nodes": [
                    {
                        "node": "layer1",
                        "op": "lin",
                        "measured_s": 1e-5,
                        "kernels": ["fc1", "bias_relu"],
                    },
                    {"node": "layer2", "measured_s": 2e-6, "kernels": ["fc2"]},
                    {"node": "view", "measured_s": 1e-6},
                    {"node": "skipped", "measured_s": 3e-6, "lowered": False},
                ],
            }
        )
    )
    out = tmp_path / "r.json"
    rc, text, err = _sol(
        ["--measured-ms", "0.05", "--measured-on", "cpu-x", "--measured-nodes", str(times)]
        + ["--json", str(out)]
    )
    assert rc == 0, err
    h = json.loads(out.read_text())["headroom"]
    # Sorted by measured time: 10 us, 3 us, 2 us, 1 us.
    assert [n["node"] for n in h["nodes"]] == ["layer1", "skipped", "layer2", "view"]
    layer1, skipped, layer2, view = h["nodes"]
    # layer1 = fc1 (2816 B) + bias_relu (1152 B) = 3968 B / 3.35e12 B/s = 1.18448 ns;
    # 1e-5 s / 1.18448 ns = 1e-5 * 3.35e12 / 3968 = 8442.54.
    assert layer1["sol_unfused_s"] == pytest.approx(3968 / 3.35e12, rel=1e-12)
    assert layer1["headroom"] == pytest.approx(8442.540322580645, rel=1e-12)
    assert layer1["graph_nodes"] == ["fc1", "bias_relu"] and layer1["op"] == "lin"
    # layer2 = fc2 (1664 B): 2e-6 * 3.35e12 / 1664 = 4026.44.
    assert layer2["headroom"] == pytest.approx(4026.4423076923076, rel=1e-12)
    assert skipped["status"] == "not lowered" and skipped["sol_unfused_s"] is None
    assert skipped["headroom"] is None
    assert view["status"] == "view (no work)" and view["headroom"] is None
    # `bias` (288 B = 85.97 ps) is claimed by no node.
    assert h["nodes_unattributed"] == ["bias"]
    assert h["nodes_unattributed_sol_s"] == pytest.approx(288 / 3.35e12, rel=1e-12)
    assert h["nodes_method"] == "by hand"
    assert "layer1" in text and "8443x" in text and "view (no work)" in text
    assert "a what-if" in text and "not attributed to a measured node: bias" in text


@pytest.mark.parametrize(
    "nodes, message",
    [
        ([{"node": "a", "measured_s": 1e-6, "kernels": ["nope"]}], "names kernel 'nope'"),
        ([{"node": "a", "measured_s": -1.0}], "finite number >= 0"),
        ([{"node": "a"}], "not a per-node times file"),
        (
            [
                {"node": "a", "measured_s": 1e-6, "kernels": ["fc1"]},
                {"node": "b", "measured_s": 1e-6, "kernels": ["fc1"]},
            ],
            "claimed by measured nodes 'a' and 'b'",
        ),
    ],
)
def test_measured_nodes_errors(tmp_path, nodes: list, message: str) -> None:
    times = tmp_path / "nodes.json"
    times.write_text(json.dumps({"nodes": nodes}))
    rc, _, err = _sol(["--measured-ms", "0.05", "--measured-nodes", str(times)])
    assert rc == 1 and message in err and len(err.strip().splitlines()) == 1


def test_measured_nodes_needs_a_program_time(tmp_path) -> None:
    times = tmp_path / "nodes.json"
    times.write_text(json.dumps({"nodes": []}))
    rc, _, err = _sol(["--measured-nodes", str(times)])
    assert rc == 1 and "--measured-nodes needs --measured-ms" in err
