"""Programs whose sizes and control flow are decided by their data (issue 38, family 1: MoE
dispatch written as real references write it), captured by tracing on the real inputs
(solar.torch._specialise, docs/capture.md "Values that decide the program"). Each analyses,
verifies against PyTorch, names every value it was specialised on, and has its counts by hand.

The models are in tests/python/models/value_dependent/ (16 tokens of width 32; the MoE ones have
8 experts, top-2, SwiGLU experts of inner width 64; f32, 4 bytes). On H100-SXM.

MACs. A SwiGLU expert over n tokens: gate and up 2 x n x 32 x 64, down n x 64 x 32, so
3 x 2,048 = 6,144 MACs a token. Top-2 over 16 tokens sends 32 (token, expert) pairs, whichever
experts they go to: 32 x 6,144 = 196,608 MACs. A router over 16 tokens to 8 experts adds
16 x 32 x 8 = 4,096.

Fused DRAM bytes. Each expert that receives at least one token reads its weights once:
3 x 32 x 64 x 4 B = 24,576 B (the gate/up [128, 32] 16,384 B and the down [32, 64] 8,192 B are
the same bytes). An expert no token reaches is not read (the program skips it). The input
[16, 32] is 2,048 B, the output as much; the router [8, 32] 1,024 B; router logits [16, 8]
512 B. The experts hit are found here by running the router with PyTorch on the same inputs.
"""

from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402, N812
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

import solar  # noqa: E402
from solar.torch.capture import load_model_file  # noqa: E402

MODELS = os.path.join(os.path.dirname(__file__), "models", "value_dependent")
EXPERT_BYTES = 3 * 32 * 64 * 4  # 24,576


def path(name: str) -> str:
    return os.path.join(MODELS, f"{name}.py")


def experts_hit(name: str) -> int:
    """How many experts receive a token, from PyTorch's own routing of the model's inputs."""
    model, inputs = load_model_file(path(name))
    with torch.no_grad():
        if name == "moe_hf_block":
            x = inputs[0].view(-1, 32)
            chosen = torch.topk(F.softmax(model.gate(x), dim=1), 2, dim=-1).indices
        elif name == "moe_tolist_loop":
            chosen = model.router(inputs[0]).softmax(-1).topk(2, dim=-1).indices
        elif name == "moe_sorted_split":
            chosen = torch.topk(torch.softmax(inputs[1], -1), 2, -1).indices
        else:
            chosen = model.router(inputs[0]).argmax(-1)
    return int(chosen.unique().numel())


# name -> (MACs by hand, fused bytes by hand as a function of the experts hit)
EXPECTED = {
    # router 4,096 + experts 196,608; input 2,048 + router 1,024 + output 2,048 = 5,120 B
    "moe_hf_block": (4_096 + 196_608, lambda hit: 5_120 + hit * EXPERT_BYTES),
    "moe_tolist_loop": (4_096 + 196_608, lambda hit: 5_120 + hit * EXPERT_BYTES),
    # no router (its logits are an input): input 2,048 + logits 512 + output 2,048 = 4,608 B
    "moe_sorted_split": (196_608, lambda hit: 4_608 + hit * EXPERT_BYTES),
    # top-1 over 4 linear experts [32, 32] + bias 32: router 16 x 32 x 4 = 2,048 MACs, each
    # token through one expert: 16 x 32 x 32 = 16,384. Router weight 512 B + bias 16 B, input
    # and output 2,048 B each; an expert hit reads 4,096 + 128 = 4,224 B.
    "moe_bool_mask": (2_048 + 16_384, lambda hit: 512 + 16 + 4_096 + hit * 4_224),
}


@pytest.fixture(scope="module", params=sorted(EXPECTED))
def analysed(request):
    name = request.param
    return name, solar.analyze_file(path(name), hw="H100-SXM").data


def test_it_verifies_against_pytorch(analysed):
    name, data = analysed
    assert data["verification"]["status"] == "passed", data["verification"]
    assert data["verification"]["mode"] == "whole_program"


def test_its_macs_by_hand_equal_flop_counter_modes(analysed):
    name, data = analysed
    macs, _ = EXPECTED[name]
    assert data["totals"]["macs"] == macs
    model, inputs = load_model_file(path(name))
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(*inputs)
    assert counter.get_total_flops() == 2 * macs


def test_its_fused_bytes_by_hand(analysed):
    name, data = analysed
    _, fused = EXPECTED[name]
    hit = experts_hit(name)
    assert 1 <= hit <= 8
    assert data["bytes"]["fused"] == fused(hit)
    assert data["bytes"]["cache_aware"] >= data["bytes"]["fused"]
    assert data["bytes"]["unfused"] > data["bytes"]["fused"]


def test_it_names_the_values_it_was_specialised_on(analysed):
    name, data = analysed
    notes = " ".join(data["verification"]["notes"])
    assert "capture specialised on" in notes
    assert "the numbers hold for these inputs only" in notes
    assert f"{name}.py:" in notes  # each value with the user's line


def test_the_values_read_are_listed_once_per_line_with_their_counts():
    data = solar.analyze_file(path("moe_tolist_loop"), hw="H100-SXM").data
    note = next(n for n in data["verification"]["notes"] if "specialised" in n)
    model, inputs = load_model_file(path("moe_tolist_loop"))
    with torch.no_grad():
        top_i = model.router(inputs[0]).softmax(-1).topk(2, dim=-1).indices
    counts = torch.bincount(top_i.flatten(), minlength=8).tolist()
    # the counts read into Python at line 23, and one nonzero per expert hit at line 27, each
    # finding that expert's (token, slot) pairs: as many as its count
    assert f"tolist at moe_tolist_loop.py:23 in forward: {counts}" in note
    found = [str(c) for c in counts if c]
    assert (
        f"(elements found) at moe_tolist_loop.py:27 in forward, {len(found)} times: "
        f"{', '.join(found)}" in note
    )


def test_a_fake_capture_of_a_value_dependent_program_is_specialised_not_an_internal_error(
    tmp_path,
):
    """A model file whose forward indexes with a boolean mask of its input (issue 44's fuzz
    reproducer, ``ids = ids[ids > 0]``): the fake capture finds the data-dependent size, and
    the capture on the real inputs holds it; 8 of the 10 ids are positive."""
    source = (
        "import torch\nfrom torch import nn\n\n\n"
        "class Model(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.embed = nn.Embedding(10, 8)\n\n"
        "    def forward(self, ids):\n"
        "        ids = ids[ids > 0]\n"
        "        return self.embed(ids).sum(0)\n\n\n"
        "def get_inputs():\n"
        "    return [torch.tensor([[0, 3, 4, 5, 6], [7, 0, 1, 2, 9]])]\n\n\n"
        "def get_init_inputs():\n"
        "    return []\n"
    )
    model = tmp_path / "masked_ids.py"
    model.write_text(source)
    data = solar.analyze_file(str(model), hw="H100-SXM").data
    assert data["verification"]["status"] == "passed"
    note = " ".join(data["verification"]["notes"])
    assert "nonzero of a [2, 5] tensor (elements found) at masked_ids.py:11 in forward: 8" in note
    # 8 distinct rows of the [10, 8] f32 table gathered (ids 3, 4, 5, 6, 7, 1, 2, 9: 8 x 32 B =
    # 256 B), the [2, 5] i64 ids read once (80 B), the [8] f32 sum written (32 B): 368 B
    assert data["bytes"]["fused"] == 256 + 80 + 32


MOE_REFERENCE = """import torch
import torch.nn.functional as F


@torch.no_grad()
def run(hidden_states, router_logits, w13, w2, top_k):
    tokens, hidden = hidden_states.shape
    num_experts, two_inner, _ = w13.shape
    inner = two_inner // 2
    weights, experts = torch.topk(torch.softmax(router_logits.float(), dim=-1), top_k, dim=-1)
    weights = weights / weights.sum(dim=-1, keepdim=True)
    out = torch.zeros(tokens, hidden, dtype=torch.float32, device=hidden_states.device)
    tokens_per_expert = torch.bincount(experts.flatten(), minlength=num_experts)
    for e in range(num_experts):
        if tokens_per_expert[e].item() == 0:
            continue
        rows, slots = torch.nonzero(experts == e, as_tuple=True)
        h = hidden_states[rows].float() @ w13[e].float().t()
        y = (F.silu(h[:, :inner]) * h[:, inner:]) @ w2[e].float().t()
        out.index_add_(0, rows, y * weights[rows, slots, None])
    return out.to(hidden_states.dtype)
"""


def test_a_moe_definition_with_a_loop_over_experts_analyses_every_workload(tmp_path):
    """A benchmark definition of a routed MoE whose reference counts the tokens per expert
    (``bincount``, ``.item()``) and gathers each expert's tokens with ``nonzero``: every
    workload is traced on its own inputs and verifies.

    4 experts of hidden 64 and inner 32 (gate/up [64, 64], down [64, 32]), top-2, bf16
    weights. MACs: each of the T x 2 (token, expert) pairs runs 64 x 64 + 32 x 64 = 6,144 MACs:
    12,288 T. Bytes: the fused program reads the hidden states (T x 64 x 2 B) and the logits
    (T x 4 x 4 B), writes the output (T x 64 x 2 B), and reads the weights of each expert a
    token reaches, (64 x 64 + 64 x 32) x 2 B = 12,288 B each: between one and four experts."""
    import json

    from solar import cli

    definition = {
        "name": "moe_e4_h64_i32",
        "op_type": "moe",
        "axes": {
            "seq_len": {"type": "var"},
            "num_experts": {"type": "const", "value": 4},
            "hidden_size": {"type": "const", "value": 64},
            "gate_up_size": {"type": "const", "value": 64},
            "intermediate_size": {"type": "const", "value": 32},
        },
        "inputs": {
            "hidden_states": {"shape": ["seq_len", "hidden_size"], "dtype": "bfloat16"},
            "router_logits": {"shape": ["seq_len", "num_experts"], "dtype": "float32"},
            "w13": {"shape": ["num_experts", "gate_up_size", "hidden_size"], "dtype": "bfloat16"},
            "w2": {
                "shape": ["num_experts", "hidden_size", "intermediate_size"],
                "dtype": "bfloat16",
            },
            "top_k": {"shape": None, "dtype": "int32"},
        },
        "outputs": {"output": {"shape": ["seq_len", "hidden_size"], "dtype": "bfloat16"}},
        "reference": MOE_REFERENCE,
    }
    random = {"type": "random"}
    tokens = (1, 5, 16)
    folder = tmp_path / "moe"
    folder.mkdir()
    (folder / "definition.json").write_text(json.dumps(definition))
    (folder / "workload.jsonl").write_text(
        "".join(
            json.dumps(
                {
                    "uuid": f"t{t}",
                    "axes": {"seq_len": t},
                    "inputs": {
                        **dict.fromkeys(("hidden_states", "router_logits", "w13", "w2"), random),
                        "top_k": {"type": "scalar", "value": 2},
                    },
                }
            )
            + "\n"
            for t in tokens
        )
    )
    out = tmp_path / "moe.json"
    assert cli.main(["analyze", str(folder), "--hw", "B200", "--json", str(out)]) == 0
    entries = json.loads(out.read_text())["workloads"]
    assert [e["report"]["totals"]["macs"] for e in entries] == [12_288 * t for t in tokens]
    for t, entry in zip(tokens, entries, strict=True):
        report = entry["report"]
        assert entry["row"]["verification"] == "passed"
        notes = " ".join(report["verification"]["notes"])
        assert "capture specialised on" in notes and "nonzero of a [" in notes
        io = t * 64 * 2 + t * 4 * 4 + t * 64 * 2
        hit = min(4, 2 * t)  # at most the pairs there are
        assert io + 12_288 <= report["bytes"]["fused"] <= io + hit * 12_288
