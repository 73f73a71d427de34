"""No weight memory (docs/serving.md, "No weight memory", "Verification on a reduced twin"):
``solar analyze --serve`` builds a causal LM on the meta device and traces it on CPU
FakeTensors, so a full-size model's decode step is analysed without its weights' memory; a
model too large to build for real is verified on a reduced twin of the same architecture. The
bytes are counted by hand below."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from solar import cli  # noqa: E402
from solar.torch import serve  # noqa: E402

MODELS = Path(__file__).resolve().parent / "models" / "serve"
BENCH_MODELS = Path(__file__).resolve().parents[2] / "bench" / "models"

# Llama-3-8B (models/serve/llama3_8b.py), bf16 (2 B an element): hidden 4096, 32 query heads and
# 8 key/value heads of 128, SwiGLU 14336, vocabulary 128256, 32 layers, untied embeddings.
LAYER = (
    4096 * 4096  # q_proj: 16,777,216
    + 4096 * 1024  # k_proj (8 kv heads x 128): 4,194,304
    + 4096 * 1024  # v_proj: 4,194,304
    + 4096 * 4096  # o_proj: 16,777,216
    + 3 * 4096 * 14336  # gate, up, down: 176,160,768
    + 2 * 4096  # the two RMSNorm weights: 8,192
)  # = 218,112,000 elements
ALL_WEIGHTS = 32 * LAYER + 4096 + 2 * 128256 * 4096  # layers, final norm, embedding, lm_head
WEIGHT_BYTES = (
    2 * ALL_WEIGHTS
)  # = 2 x 8,030,261,248 = 16,060,522,496 B: what a real build would hold (bf16)

CHILD = """
import json, resource, sys
from solar.torch import serve
served = serve.analyze_serving(sys.argv[1], "decode", [1], 4096, verify=False)
step = served.steps[0]
print(json.dumps({"fused": step.data["bytes"]["fused"],
                  "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                  "verification": step.verification["status"],
                  "report": step.summary() + chr(10) + served.core.render(True)}))
"""


def test_llama3_8b_decode_step_is_analysed_without_its_weights_memory():
    assert LAYER == 218_112_000 and WEIGHT_BYTES == 16_060_522_496
    # In a child process, so that its peak resident memory is the analysis's alone.
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(MODELS / "llama3_8b.py")],
        capture_output=True,
        text=True,
        check=True,
    )
    got = json.loads(done.stdout.strip().splitlines()[-1])
    # Decode at batch 1, context 4096: one embedding row (4096 elements; the table's other rows
    # are not read), every other weight once; the KV cache of 4096 tokens moves once (4095
    # read, the new token's written): 32 layers x 2 (k, v) x 8 kv heads x 4096 x 128 x 2 B.
    weights = 2 * (32 * LAYER + 4096 + 128256 * 4096 + 4096)  # = 15,009,857,536 B
    kv = 32 * 2 * 8 * 4096 * 128 * 2  # = 536,870,912 B
    logits = 128256 * 2  # the one token's logits, written: 256,512 B
    ids = 2 * 8  # input_ids and position_ids, i64[1, 1] each
    inv_freq = 64 * 2  # the rotary embedding's 64 inverse frequencies (bf16)
    assert weights == 15_009_857_536 and kv == 536_870_912
    assert got["fused"] == weights + kv + logits + ids + inv_freq == 15_546_985_104
    # Peak resident memory: far below the 16 GB of weights a real build holds (a real build
    # made in float32 before the cast holds twice that). Under an eighth of it.
    assert got["peak_rss"] < WEIGHT_BYTES / 8, got["peak_rss"]
    assert got["verification"] == "not_run"
    # What `solar analyze --serve decode` prints fits one screen: 43 lines on H100. The header
    # (6: the title, policy, cache state, kernel floor, verification, work), the fidelity table
    # and the 2 lines under it (6), the 3 heaviest cache groups (5) and slowest ops (5), the
    # precision fallbacks grouped in one line (2), the embedding's read (2), the insights (5),
    # the serving table (5: title, phase, blank, head, row) and a blank line between each two
    # (7). (A device with measured ceilings adds its 2 attainable lines: 45 on H200.) It was
    # 60 with 10 groups and ops and the policy, cache state and verification repeated.
    lines = got["report"].splitlines()
    assert len(lines) == 6 + 6 + 5 + 5 + 2 + 2 + 5 + 5 + 7 == 43, got["report"]
    assert sum("precision policy" in line for line in lines) == 1


def test_a_model_too_large_to_build_is_verified_on_a_reduced_twin():
    # models/serve/llama_wide.py built for real: about 40 M float32 elements (170 MB), over a
    # --verify-budget-mb of 50: built without weights, verified on a twin of 2 layers, width
    # 512 (16 heads x 32), vocabulary 1024, whole (its tensors: about 11 MB, under 50 MB), and
    # the full-size program per op.
    served = serve.analyze_serving(
        MODELS / "llama_wide.py", "decode", [1], 128, verify_budget_mb=50
    )
    v = served.steps[0].verification
    assert v["status"] == "passed" and v["mode"] == "twin"
    assert v["detail"].startswith(
        "verified on a 2-layer, width-512, vocabulary-1024 twin of the same architecture "
        "(16 query heads, 4 key/value heads), its decode step at batch 1, context 64: passed "
        "(5 output(s) compared with PyTorch on the same inputs); per op at full size: passed ("
    )
    # The twin's five outputs: the logits, and 2 layers' new keys and values.
    assert len(v["outputs"]) == 5
    assert v["ops"] and all(op["result"] == "passed" for op in v["ops"])
    assert "verified on a 2-layer, width-512, vocabulary-1024 twin" in served.table


def test_twin_config_keeps_the_head_structure():
    from transformers import LlamaConfig

    config = LlamaConfig(
        vocab_size=128256,
        hidden_size=8192,
        intermediate_size=28672,
        num_hidden_layers=80,
        num_attention_heads=64,
        num_key_value_heads=8,
    )
    twin, what = serve.twin_config(config)
    # 512 // 64 = 8 a head, 64 heads: width 512; the MLP scaled alike, 28672 x 512 / 8192.
    assert (twin.num_hidden_layers, twin.hidden_size, twin.head_dim) == (2, 512, 8)
    assert twin.intermediate_size == 28672 * 512 // 8192 == 1792
    assert (twin.num_attention_heads, twin.num_key_value_heads, twin.vocab_size) == (64, 8, 1024)
    assert config.num_hidden_layers == 80  # the model's own config is not touched
    assert what == (
        "a 2-layer, width-512, vocabulary-1024 twin of the same architecture "
        "(64 query heads, 8 key/value heads)"
    )


def test_twin_config_keeps_mlas_own_head_widths():
    import importlib.util

    # DeepSeek-V3's published shape (bench/models/deepseek_v3.py, read from there): its config's
    # head_dim is the rotary width (qk_rope_head_dim, 64), not hidden / heads (7168 / 128 = 56).
    # Narrowing it with the width gave the twin a rotary table of 8 for a query rotary part of
    # 64: "The size of tensor a (32) must match the size of tensor b (4)" (issue 39).
    spec = importlib.util.spec_from_file_location("deepseek_v3", BENCH_MODELS / "deepseek_v3.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    config = module.published_config()
    assert (config.hidden_size, config.num_attention_heads, config.head_dim) == (7168, 128, 64)
    twin, what = serve.twin_config(config)
    # 512 // 128 = 4 < 8 a head: max(128 x 8, 4 x 128) = 1,024 wide; 2 layers after the 3 dense
    assert (twin.num_hidden_layers, twin.hidden_size) == (5, 1024)
    assert twin.head_dim == twin.qk_rope_head_dim == 64  # its own, kept
    assert (twin.kv_lora_rank, twin.q_lora_rank, twin.qk_nope_head_dim) == (512, 1536, 128)
    assert (twin.n_routed_experts, twin.n_group, twin.topk_group) == (256, 8, 4)
    # the experts' width scaled with the model's: 2048 x 1024 / 7168 = 292.6, down to 8s: 288
    assert twin.moe_intermediate_size == 288
    assert what == (
        "a 5-layer, width-1024, vocabulary-1024 twin of the same architecture "
        "(128 query heads, 128 key/value heads, 256 experts)"
    )


def test_an_mla_moe_model_verifies_on_its_twin_and_per_op():
    # models/serve/mla_moe_wide.py (DeepSeek-V3's code path: MLA, a dense first layer, 16 routed
    # experts in 4 groups, top-4 of the best 2 groups, sorted=False) built for real: about 25 M
    # float32 elements (100 MB), over a --verify-budget-mb of 50: verified whole on a twin of 3
    # layers (2 + the dense one), width 512, and per op at full size. Before: the twin's rotary
    # width was narrowed (an internal error), and per op the router's topk (sorted=False: any
    # order), its expert gather (0/1 indices into a dimension of 1) and the grouped product
    # (offsets short of the rows, whose outputs PyTorch leaves unwritten) failed or went
    # unchecked.
    served = serve.analyze_serving(
        MODELS / "mla_moe_wide.py", "decode", [1], 64, verify_budget_mb=50
    )
    v = served.steps[0].verification
    assert v["status"] == "passed" and v["mode"] == "twin", v["detail"]
    # The twin's outputs: the logits and 3 layers' new keys and values, 7.
    assert v["detail"].startswith(
        "verified on a 3-layer, width-512, vocabulary-1024 twin of the same architecture "
        "(16 query heads, 16 key/value heads, 16 experts), its decode step at batch 1, context "
        "64: passed (7 output(s) compared with PyTorch on the same inputs); per op at full size: "
        "passed ("
    )
    ops = {op["op"]: op["result"] for op in v["ops"]}
    for op in ("aten.topk.default", "aten.index.Tensor", "aten._grouped_mm.default"):
        assert ops[op] == "passed", op


def test_a_real_build_over_the_machines_memory_is_refused_in_one_line(capsys, monkeypatch):
    # A verification budget that lets the whole 8B model be built for real (32 GB in float32)
    # on a machine said to have 1 GB available: refused before any build, naming --no-verify
    # and the twin.
    from solar.torch import capture

    monkeypatch.setattr(capture, "available_bytes", lambda: 10**9)
    argv = [
        "analyze",
        str(MODELS / "llama3_8b.py"),
        "--serve",
        "decode",
        "--context",
        "16",
        "--verify-budget-mb",
        "100000",
    ]
    assert cli.main(argv) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "--no-verify" in err and "reduced twin" in err and "over the 1.0 GB" in err


def test_a_twin_that_cannot_be_built_is_said_so_never_skipped(monkeypatch):
    # The twin's build fails: the full-size step is still verified per op, and the detail
    # says that no twin ran; the status is "partial" (one of the two checks ran), not "passed".
    from solar.options import AnalysisError

    def no_twin(*args):
        raise AnalysisError("no reduced twin of LlamaForCausalLM could be built (test)")

    monkeypatch.setattr(serve, "twin_step", no_twin)
    served = serve.analyze_serving(MODELS / "llama_wide.py", "decode", [1], 16, verify_budget_mb=50)
    v = served.steps[0].verification
    assert v["status"] == "partial" and v["mode"] == "twin"
    assert v["detail"].startswith(
        "no reduced twin: not_run (no reduced twin of LlamaForCausalLM could be built (test); "
        "the architecture was NOT run whole); per op at full size: passed ("
    )


def test_without_weights_keeps_tied_weights_tied_and_allocates_nothing():
    import torch
    from torch._subclasses.fake_tensor import FakeTensor

    from solar.torch.capture import without_weights

    def build():
        emb = torch.nn.Embedding(50_000, 4096)  # 204.8 M elements: 819 MB in float32, if real
        head = torch.nn.Linear(4096, 50_000, bias=False)
        head.weight = emb.weight  # tied, as tie_word_embeddings ties them
        return torch.nn.ModuleDict({"emb": emb, "head": head})

    model, mode = without_weights(build)
    weight = model["emb"].weight
    assert isinstance(weight, FakeTensor) and weight.device.type == "cpu"
    assert model["head"].weight is weight  # one tensor, read once by the analysis
    assert weight.shape == (50_000, 4096) and weight.requires_grad


def test_a_decoder_with_an_unmodelled_cache_is_refused_in_one_line(tmp_path, capsys):
    # DeepSeek-V3.2's layers keep an indexed attention cache (a lightning indexer's keys beside
    # the latent ones), which the serving step does not model: one line naming the model, the
    # kind and the layers, before any capture.
    model = tmp_path / "dsv32.py"
    model.write_text(
        "import torch\nfrom torch import nn\n"
        "from transformers import DeepseekV32Config, DeepseekV32ForCausalLM\n\n\n"
        "class Model(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        config = DeepseekV32Config(vocab_size=256, hidden_size=64,\n"
        "            num_hidden_layers=2, num_attention_heads=4)\n"
        "        self.lm = DeepseekV32ForCausalLM(config).eval()\n\n"
        "    def forward(self, input_ids):\n"
        "        return self.lm(input_ids=input_ids, use_cache=False).logits\n\n\n"
        "def get_inputs():\n"
        "    return [torch.randint(0, 256, (1, 8))]\n\n\n"
        "def get_init_inputs():\n"
        "    return []\n"
    )
    assert cli.main(["analyze", str(model), "--serve", "decode", "--context", "16"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "DeepseekV32ForCausalLM has layers whose cache --serve does not model" in err[0]
    assert "(indexed_attention: layers 0, 1)" in err[0]


# A decoder of each family transformers' serving path takes, wider than the twin (hidden 1024;
# Gemma-2 1152 with its own head width 256, kept), so that a --verify-budget-mb of 20 verifies
# it on its reduced twin: shared experts beside routed ones, a sliding window, an explicit head
# width with alternating sliding and full attention.
FAMILIES = {
    "qwen2_moe": (
        "Qwen2MoeConfig",
        "Qwen2MoeForCausalLM",
        "vocab_size=2048, hidden_size=1024, intermediate_size=1024, moe_intermediate_size=256, "
        "shared_expert_intermediate_size=512, num_hidden_layers=2, num_attention_heads=16, "
        "num_key_value_heads=4, num_experts=8, num_experts_per_tok=2",
    ),
    "mistral": (
        "MistralConfig",
        "MistralForCausalLM",
        "vocab_size=2048, hidden_size=1024, intermediate_size=2048, num_hidden_layers=2, "
        "num_attention_heads=16, num_key_value_heads=4, sliding_window=32",
    ),
    "gemma2": (
        "Gemma2Config",
        "Gemma2ForCausalLM",
        "vocab_size=2048, hidden_size=1152, intermediate_size=2048, num_hidden_layers=2, "
        "num_attention_heads=8, num_key_value_heads=4, head_dim=256, sliding_window=32",
    ),
    # Hybrids: Mamba layers between attention ones (Jamba: attention every second layer), and
    # Gated DeltaNet layers with full attention every fourth (Qwen3-Next, 4 layers: its twin
    # keeps 4, so that it holds each kind of layer).
    "jamba": (
        "JambaConfig",
        "JambaForCausalLM",
        "vocab_size=2048, hidden_size=1024, intermediate_size=1024, num_hidden_layers=2, "
        "num_attention_heads=16, num_key_value_heads=4, num_experts=4, num_experts_per_tok=2, "
        "attn_layer_period=2, attn_layer_offset=1, expert_layer_period=2, expert_layer_offset=1",
    ),
    "qwen3_next": (
        "Qwen3NextConfig",
        "Qwen3NextForCausalLM",
        "vocab_size=2048, hidden_size=1024, intermediate_size=1024, moe_intermediate_size=256, "
        "shared_expert_intermediate_size=256, num_hidden_layers=4, num_attention_heads=16, "
        "num_key_value_heads=4, head_dim=64, num_experts=8, num_experts_per_tok=2, "
        "linear_num_key_heads=4, linear_num_value_heads=8, linear_key_head_dim=32, "
        "linear_value_head_dim=32",
    ),
}
TWIN_LAYERS = {"qwen3_next": 4}  # the others: 2


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_each_family_verifies_on_its_twin(family, tmp_path):
    config, lm, kwargs = FAMILIES[family]
    model = tmp_path / f"{family}.py"
    model.write_text(
        "import torch\nfrom torch import nn\n"
        f"from transformers import {config}, {lm}\n\n\n"
        "class Model(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        f"        self.lm = {lm}({config}({kwargs})).to(torch.bfloat16).eval()\n\n"
        "    def forward(self, input_ids):\n"
        "        return self.lm(input_ids=input_ids, use_cache=False).logits\n\n\n"
        "def get_inputs():\n"
        "    return [torch.randint(0, 2048, (1, 8))]\n\n\n"
        "def get_init_inputs():\n"
        "    return []\n"
    )
    served = serve.analyze_serving(model, "decode", [1], 64, verify_budget_mb=20)
    v = served.steps[0].verification
    assert v["status"] == "passed" and v["mode"] == "twin", v["detail"]
    layers = TWIN_LAYERS.get(family, 2)
    assert v["detail"].startswith(f"verified on a {layers}-layer, width-512, vocabulary-1024 twin")


def test_a_twin_of_many_experts_is_narrowed_until_its_float64_recheck_fits():
    # 128 experts of width 2048 in each of 2 layers, hidden 2048 and 16 heads of 128. At the
    # usual twin width 512 (head 32, expert width 2048 x 512 / 2048 = 512) its experts alone
    # hold 2 x 128 x 3 x 512 x 512 = 201,326,592 parameters, over serve.TWIN_PARAMETERS
    # (128 M: 1 GB in float64); at width 256 (head 16, expert width 256) the whole twin holds:
    experts = 2 * 128 * 3 * 256 * 256  # 50,331,648
    attention = 2 * (256 * 256 + 2 * 256 * 4 * 16 + 256 * 256 + 2 * 16)  # q, k, v, o, norms
    router_and_norms = 2 * (128 * 256 + 2 * 256) + 256  # routers, layer norms, the final norm
    embeddings = 2 * 1024 * 256  # the embedding and the head, vocabulary 1024
    assert 2 * 128 * 3 * 512 * 512 == 201_326_592 > serve.TWIN_PARAMETERS
    assert experts + attention + router_and_norms + embeddings == 51_250_496
    import torch
    from transformers import Qwen3MoeConfig, Qwen3MoeForCausalLM

    from solar.torch.capture import without_weights

    config = Qwen3MoeConfig(
        vocab_size=2048, hidden_size=2048, intermediate_size=4096, moe_intermediate_size=2048,
        num_hidden_layers=2, num_attention_heads=16, num_key_value_heads=4, head_dim=128,
        num_experts=128, num_experts_per_tok=2,
    )  # fmt: skip
    lm, _ = without_weights(lambda: Qwen3MoeForCausalLM(config))
    twin, what = serve.twin_narrow_enough(lm)
    text = twin.get_text_config()
    assert (text.hidden_size, text.head_dim, text.moe_intermediate_size) == (256, 16, 256)
    assert what.startswith("a 2-layer, width-256, vocabulary-1024 twin")
    with torch.device("meta"):
        held = sum(p.numel() for p in Qwen3MoeForCausalLM(twin).parameters())
    assert held == 51_250_496
