"""Serving steps of decoders (docs/serving.md): ``solar analyze --serve prefill|decode`` on a
Hugging Face causal LM built from its config (a Llama-style GQA model) and on a user's own MLA
decoder (``get_serve_inputs``). The DRAM bytes of each step are counted by hand below; the
decode SOL at batch 1 is (weights + KV-cache bytes) / bandwidth."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("transformers")

from solar import cli, serving  # noqa: E402
from solar.options import AnalysisError  # noqa: E402
from solar.torch import serve  # noqa: E402

MODELS = Path(__file__).resolve().parent / "models" / "serve"
H100_BANDWIDTH = 3.35e12  # bytes/s (data/devices/H100-SXM.yaml)

# The Llama-style model (models/serve/llama_gqa.py), bf16 (2 B an element): hidden 256, 4 query
# heads and 2 key/value heads of 64, SwiGLU 512, vocabulary 1000, 2 layers, untied embeddings.
LAYER_WEIGHTS = (
    256 * 256  # q_proj
    + 256 * 128  # k_proj (2 kv heads x 64)
    + 256 * 128  # v_proj
    + 256 * 256  # o_proj
    + 3 * 256 * 512  # gate, up, down
    + 2 * 256  # the two RMSNorm weights
)  # = 590,336 elements
WEIGHTS_BUT_EMBEDDING = 2 * (2 * LAYER_WEIGHTS + 256 + 1000 * 256)  # layers, final norm, lm_head
INV_FREQ = 32 * 2  # the rotary embedding's inverse frequencies (a bf16 buffer of 32)


def kv_bytes(batch: int, tokens: int) -> int:
    """2 layers x 2 (k, v) x batch x 2 kv heads x tokens x 64 x 2 B."""
    return 2 * 2 * batch * 2 * tokens * 64 * 2


@pytest.fixture(scope="module")
def llama_decode():
    return serve.analyze_serving(MODELS / "llama_gqa.py", "decode", [1], 64)


def test_llama_decode_at_batch_1_reads_every_weight_and_the_whole_cache_once(llama_decode):
    step = llama_decode.steps[0]
    assert step.verification["status"] == "passed"
    # Decode at context 64: the new token attends to 64 tokens; the 63 before it are read from
    # the cache (inputs), its own keys and values are written (outputs): the KV cache of 64
    # tokens moves once, 2 x 2 x 1 x 2 x 64 x 64 x 2 = 65,536 B. The weights: one embedding row
    # (256 x 2 = 512 B; the table's other rows are not read), every other weight once.
    weights = 256 * 2 + WEIGHTS_BUT_EMBEDDING  # 2,874,368 B
    kv = kv_bytes(1, 64)
    assert kv == kv_bytes(1, 63) + kv_bytes(1, 1) == 65_536
    logits = 1000 * 2  # the one token's logits, written
    ids = 2 * 8  # input_ids and position_ids, i64[1, 1] each
    assert step.data["bytes"]["fused"] == weights + kv + logits + ids + INV_FREQ == 2_941_984
    # The SOL per token equals (weights + KV) / bandwidth within 1% (the logits, the two ids
    # and the rotary buffer are the rest: 2,080 B of 2.94 MB).
    hand = (weights + kv) / H100_BANDWIDTH
    row = llama_decode.data["rows"][0]
    fused = row["fidelities"]["fused"]
    assert fused["bottleneck"] == "memory"
    assert fused["step_s"] == pytest.approx(hand, rel=0.01)
    assert fused["tokens_per_s"] == pytest.approx(1 / fused["step_s"])
    assert row["tokens"] == 1
    assert llama_decode.data["phase"] == "decode" and llama_decode.data["context"] == 64
    assert "SOL/token" in llama_decode.table


# Each of the 2 layers has 11 elementwise products and sums in bf16, which an H100 runs at its
# fp32 vector rate (it has no bf16 vector rate): the two RMSNorms' weight products (2), the
# rotary embedding of q and of k (q * cos, rotate_half(q) * sin and their sum, the same for k:
# 6), SwiGLU's act(gate) * up (1) and the two residual sums (2); the final norm adds 1:
# 2 x 11 + 1 = 23 nodes (the norms' statistics and the softmax run in fp32, not fallbacks).
FALLBACK = "bf16 vector->fp32 vector (H100-SXM has no bf16 vector rate)"


def test_a_serving_report_groups_its_notes_and_details_lists_them(llama_decode, capsys):
    step = llama_decode.steps[0]
    nodes = [n["name"] for n in step.data["nodes"] if n["precision_fallback"]]
    assert len(nodes) == 23  # the JSON keeps every node's fallback
    brief = step.summary()
    lines = brief.splitlines()
    # The header first, the verification one status line in it (the 5 outputs that passed are
    # not listed), then the fidelity table.
    assert lines[0] == "SOL of llama_gqa.py on H100-SXM (DRAM 3.35 TB/s)"
    assert lines.index(
        "  passed: whole program, 5 output(s) compared with PyTorch on the same inputs"
    ) < lines.index("fidelity  SOL time   compute    memory  DRAM bytes  bottleneck")
    # One line for the 23 fallbacks, none per node.
    assert f"  23 nodes: {FALLBACK}" in lines
    assert sum(FALLBACK in line for line in lines) == 1
    # 35 lines: the header (6: the title, policy, cache state, kernel floor, verification,
    # work), the fidelity table and the two lines under it (6), the cache-aware group (3), the
    # 3 slowest ops a serving step's report lists (5), the notes (2 + 2), the insights (5), and
    # a blank line before each of the 6 parts after the header. It was 69: the verification's
    # status line and its 5 outputs above the header, 10 slowest ops and 23 fallback lines.
    assert len(lines) == 6 + 6 + 3 + 5 + 2 + 2 + 5 + 6 == 35, brief
    # --details: the 5 outputs and the 23 nodes, one line each, in place of the grouped line.
    argv = ["analyze", str(MODELS / "llama_gqa.py"), "--serve", "decode", "--context", "64"]
    assert cli.main([*argv, "--details"]) == 0
    out = capsys.readouterr().out
    detailed = out[: out.index("Serving decode of")].rstrip("\n").splitlines()
    assert len(detailed) == len(lines) + 5 + 23 - 1
    for name in nodes:
        assert f"  {name}: {FALLBACK}" in detailed
    for o in step.verification["outputs"]:
        assert any(line.startswith(f"    {o['name']}: ") for line in detailed), o["name"]
    assert step.summary(details=True).splitlines() == detailed


def test_llama_prefill_writes_the_prompts_cache():
    served = serve.analyze_serving(MODELS / "llama_gqa.py", "prefill", [2], 32)
    step = served.steps[0]
    assert step.verification["status"] == "passed"
    # Prefill of 2 x 32 tokens: 64 embedding rows read (every token a different row, balanced
    # routing), every other weight once, the KV cache of 2 x 32 tokens written, the last
    # token's logits of each sequence written, input_ids and position_ids (i64[2, 32]) read.
    expected = (
        64 * 256 * 2
        + WEIGHTS_BUT_EMBEDDING
        + kv_bytes(2, 32)
        + 2 * 1000 * 2
        + 2 * (2 * 32 * 8)
        + INV_FREQ
    )
    assert step.data["bytes"]["fused"] == expected == 2_977_248
    row = served.data["rows"][0]
    assert row["tokens"] == 64
    fused = row["fidelities"]["fused"]
    assert fused["tokens_per_s"] == pytest.approx(64 / fused["step_s"])


def test_decode_sweep_turns_compute_bound_between_1_and_512():
    # float32: PyTorch's fp32 matmul runs on the CUDA cores (67 TFLOP/s on an H100: a ridge of
    # 20 FLOP/byte). At context 16 a sequence adds 2 layers x 2 x 2 x 16 x 64 x 4 B = 32 kB of
    # cache and 2 x 1.47 M FLOP of weights' products; the 5.75 MB of weights are shared. Memory
    # bound at 32, compute bound at 64.
    served = serve.analyze_serving(
        MODELS / "llama_gqa_fp32.py", "decode", [1, 32, 64, 512], 16, verify=False
    )
    fused = served.data["crossover"]["fused"]
    assert fused["last_memory_bound_batch"] == 32
    assert fused["first_compute_bound_batch"] == 64
    assert 32 < fused["estimate_batch"] < 64
    bounds = [r["fidelities"]["fused"]["bottleneck"] for r in served.data["rows"]]
    assert bounds == ["memory", "memory", "compute", "compute"]
    # Compute bound, tokens/s stops growing with the batch.
    rate = [r["fidelities"]["fused"]["tokens_per_s"] for r in served.data["rows"]]
    assert rate[3] == pytest.approx(rate[2], rel=0.02)
    assert "turns compute bound between batch 32 (memory bound) and 64" in served.table


def test_mla_decoder_reads_its_latent_cache():
    # The user's own decoder (get_serve_inputs): per layer and token the cache holds the latent
    # c (64) and the shared rotary key kr (32): 2 layers x 64 tokens x 96 x 2 B = 24,576 B,
    # against 65,536 B for the GQA model's keys and values at the same context.
    served = serve.analyze_serving(MODELS / "mla_decoder.py", "decode", [1], 64)
    step = served.steps[0]
    assert step.verification["status"] == "passed"
    layer = (
        256 * 4 * 96  # q: 4 heads x (64 + 32)
        + 256 * 64  # the latent's down-projection
        + 256 * 32  # kr
        + 64  # the latent's RMSNorm
        + 64 * 256 * 2  # the key and value up-projections
        + 256 * 256  # o
        + 2 * 256  # the two RMSNorms of the block
        + 3 * 256 * 512  # gate, up, down
    )  # = 614,976 elements
    weights = 2 * (256 + 2 * layer + 256 + 1000 * 256)  # one embedding row, layers, norm, head
    cache = 2 * 64 * 96 * 2
    logits, tokens = 1000 * 2, 8
    assert step.data["bytes"]["fused"] == weights + cache + logits + tokens == 2_999_512
    fused = served.data["rows"][0]["fidelities"]["fused"]
    assert fused["step_s"] == pytest.approx((weights + cache) / H100_BANDWIDTH, rel=0.01)


def test_the_options_are_checked_once_not_once_a_batch(monkeypatch):
    # issue 41: a serving run's Options are checked where they are made, not again for each
    # batch's step (the step's phase, batch and context were checked, a thrown-away Options
    # each, two a batch). Count the Options made (each is checked when made): the entry's
    # Options.of and the report's top (3) added to its analysis: 2; and the unverified copy for
    # the batches after the first, made once when there are any: 2 for one batch, 2 + 1 = 3 for
    # three.
    from solar.options import Options

    made = []
    checked = Options.__post_init__

    def counting(self):
        made.append(1)
        checked(self)

    monkeypatch.setattr(Options, "__post_init__", counting)
    counts = []
    for batches in ([1], [1, 2, 4]):
        made.clear()
        serve.analyze_serving(MODELS / "llama_gqa.py", "decode", batches, 64, verify=False)
        counts.append(len(made))
    assert counts == [2, 3]


def test_parse_batches():
    assert serving.parse_batches("1..512") == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
    assert serving.parse_batches("3..20") == [3, 4, 8, 16, 20]
    assert serving.parse_batches("1,4,16") == [1, 4, 16]
    for bad in ("0,1", "4,2", "a", "8..2"):
        with pytest.raises(AnalysisError):
            serving.parse_batches(bad)


def one_line_error(capsys, args: list[str]) -> str:
    assert cli.main(args) == 1
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def test_a_model_that_is_no_decoder_is_a_one_line_error(capsys):
    line = one_line_error(
        capsys, ["analyze", str(MODELS / "not_a_decoder.py"), "--serve", "decode"]
    )
    assert "solar analyze: error: not_a_decoder.py: causal LMs found: none" in line
    assert "get_serve_inputs(phase, batch, context)" in line


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--batch", "0"], "--batch must be at least 1, not 0"),
        (["--context", "0"], "--context must be at least 1, not 0"),
        (["--batch-sweep", "4,2"], "batch sizes must be increasing"),
        (["--measured-ms", "1"], "--measured-ms cannot be given with --serve"),
        (["--measurement", "t.json"], "--measurement cannot be given with --serve"),
        (["--train"], "--train cannot be given with --serve"),
    ],
)
def test_bad_serving_options_are_one_line_errors(capsys, extra, message):
    args = ["analyze", str(MODELS / "llama_gqa.py"), "--serve", "decode", *extra]
    assert message in one_line_error(capsys, args)


def test_batch_sweep_needs_serve(capsys):
    args = ["analyze", str(MODELS / "llama_gqa.py"), "--batch-sweep", "1,2"]
    assert "--batch-sweep needs --serve" in one_line_error(capsys, args)


def test_int8_weights_halve_the_decode_steps_weight_bytes():
    # --policy int8-weights (docs/precision.md): every linear weight (rank 2, read by a product:
    # the projections, the MLP and the lm_head) stored in 1 byte plus one bf16 scale per
    # channel, the products still bf16. Linear elements: 2 layers x (q 256 x 256 + k 128 x 256
    # + v 128 x 256 + o 256 x 256 + 3 x 256 x 512 = 589,824) + lm_head 1000 x 256 = 1,435,648 B.
    # Channels, min(rows, columns) of each: 2 x (256 + 128 + 128 + 256 + 3 x 256) + 256 = 3,328,
    # x 2 B = 6,656 B. Unquantised (bf16): the norms (2 x 2 x 256 + 256) x 2 = 2,560 B, the one
    # embedding row read 256 x 2 = 512 B, the rotary buffer 64 B. The KV cache (65,536 B), the
    # logits (2,000 B) and the ids (16 B) keep their dtypes: 1,512,992 B.
    served = serve.analyze_serving(
        MODELS / "llama_gqa.py", "decode", [1], 64, policy="int8-weights", verify=False
    )
    linear = 2 * (256 * 256 + 2 * 128 * 256 + 256 * 256 + 3 * 256 * 512) + 1000 * 256
    assert linear == 1_435_648
    scales = 2 * (2 * (256 + 128 + 128 + 256 + 3 * 256) + 256)
    weights = linear + scales + (2 * 2 * 256 + 256) * 2 + 256 * 2 + INV_FREQ
    expected = weights + kv_bytes(1, 64) + 1000 * 2 + 2 * 8
    assert served.steps[0].data["bytes"]["fused"] == expected == 1_512_992
    assert served.steps[0].data["stored_weights"]["format"] == "int8"
    assert len(served.steps[0].data["stored_weights"]["tensors"]) == 2 * 7 + 1
    fused = served.data["rows"][0]["fidelities"]["fused"]
    assert fused["step_s"] == pytest.approx((weights + kv_bytes(1, 64)) / H100_BANDWIDTH, rel=0.01)


def test_nvfp4_weights_on_thor_count_four_and_a_half_bits_a_weight():
    # --policy nvfp4-weights on Jetson-AGX-Thor (docs/precision.md): the 1,435,648 linear
    # elements (test above) take 4 bits and one 1-byte scale per 16, 1,435,648 x 4.5 / 8 =
    # 807,552 B (every tensor a multiple of 16 elements: exact). The rest as above: norms
    # 2,560 + embedding row 512 + rotary 64 + KV 65,536 + logits 2,000 + ids 16 = 70,688 B.
    served = serve.analyze_serving(
        MODELS / "llama_gqa.py",
        "decode",
        [1],
        64,
        hw="Jetson-AGX-Thor",
        policy="nvfp4-weights",
        verify=False,
    )
    step = served.steps[0].data
    assert step["stored_weights"]["bytes"] == 1_435_648 * 9 // 16 == 807_552
    assert step["bytes"]["fused"] == 807_552 + 70_688 == 878_240
    # The products with the stored weights run at Thor's fp4 tensor rate (1035e12).
    products = [n for n in step["nodes"] if n["macs"] > 0 and n["precision"] == "fp4 tensor"]
    assert len(products) == 2 * 7 + 1


# Serving in parallel (docs/serving.md, "Serving in parallel"): models/serve/llama_tp.py, bf16,
# hidden 256, 8 query heads and 4 key/value heads of 32, SwiGLU 512, vocabulary 1024, 2 layers.
# Megatron's layout: q/k/v and gate/up column-parallel, o_proj and down row-parallel, attention by
# head, the lm_head column-parallel over the vocabulary: each device reads 1/tp of every linear
# weight and of the KV cache; the norms, the one embedding row, the rotary buffer and the ids are
# read whole on every device; the logits stay sharded by vocabulary.
TP_LINEAR = 2 * (256 * 256 + 2 * 256 * 128 + 256 * 256 + 3 * 256 * 512) + 1024 * 256  # 1,441,792
TP_WHOLE = (2 * 2 * 256 + 256) * 2 + 256 * 2 + 16 * 2 + 2 * 8  # norms, embedding row, rotary, ids
TP_KV = 2 * 2 * 1 * 4 * 64 * 32 * 2  # layers x (k, v) x batch x kv heads x 64 tokens x 32 x 2 B
TP_LOGITS = 1024 * 2


def tp_step(tp: int, hw: str) -> serving.ServingReport:
    return serve.analyze_serving(
        MODELS / "llama_tp.py", "decode", [1], 64, hw=hw, parallel=f"tp={tp}", verify=False
    )


def all_reduces(served: serving.ServingReport) -> list[dict]:
    comms = served.steps[0].data["parallel"]["communication"]
    return [c for c in comms if c["collective"] == "all-reduce"]


@pytest.mark.parametrize(
    ("tp", "hw", "bandwidth", "link", "sent", "per_device"),
    [
        # H100: NVLink 4, 900 GB/s, 450 GB/s each way, reducing in the network (NVLink SHARP):
        # each device sends its 512 B buffer once. Per device: 1,441,792 x 2 B / 2 = 1,441,792 B
        # of linear weights + 3,120 B read whole + 65,536 / 2 = 32,768 B of KV + 2,048 / 2 =
        # 1,024 B of logits = 1,478,704 B.
        (2, "H100-SXM", 3.35e12, 450e9, 512, 1_478_704),
        # A100: NVLink 3, 600 GB/s, 300 GB/s each way, no in-network reduction: the ring's
        # 2 x (4 - 1) / 4 x 512 = 768 B per device. Per device: 1,441,792 x 2 B / 4 = 720,896 +
        # 3,120 + 65,536 / 4 = 16,384 + 2,048 / 4 = 512 = 740,912 B.
        (4, "A100-SXM-80GB", 2.039e12, 300e9, 768, 740_912),
    ],
)
def test_decode_in_tensor_parallel_is_per_device(tp, hw, bandwidth, link, sent, per_device):
    served = tp_step(tp, hw)
    # TP_WHOLE: norms (2 x 2 x 256 + 256) x 2 = 2,560 + embedding row 512 + rotary 16 x 2 = 32
    # (head_dim 32: 16 inverse frequencies) + ids 16 = 3,120 B.
    assert TP_WHOLE == 3_120 and TP_LINEAR == 1_441_792
    assert per_device == TP_LINEAR * 2 // tp + TP_WHOLE + TP_KV // tp + TP_LOGITS // tp
    row = served.data["rows"][0]
    fused = row["fidelities"]["fused"]
    assert fused["bytes"] == per_device
    # Two all-reduces per layer (after o_proj and after down), each of the activation
    # [1, 1, 256] in bf16: 512 B; 4 in all.
    reduces = all_reduces(served)
    assert len(reduces) == 4
    for c in reduces:
        assert c["buffer_bytes"] == 1 * 1 * 256 * 2
        assert c["sent_bytes"] == sent
        assert c["time_s"] == pytest.approx(sent / link)
    assert fused["communication_s"] >= 4 * sent / link
    # Memory bound: the per-device step is the device's bytes over its DRAM bandwidth, at least
    # the one-kernel floor (0.4 us on both), and the group makes one token per step. H100-SXM:
    # 1,478,704 / 3.35e12 = 441.4 ns; A100: 740,912 / 2.039e12 = 363.4 ns -> 400 ns.
    assert fused["bottleneck"] == "memory"
    assert fused["step_s"] == pytest.approx(max(per_device / bandwidth, 0.4e-6))
    assert fused["tokens_per_s"] == pytest.approx(1 / fused["step_s"])
    assert served.data["parallel"]["layout"] == f"tp={tp}"
    assert served.data["parallel"]["per_device"] is True
    assert "every figure is per device" in served.table


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--parallel", "tp=3"],
            "llama_tp.py: --parallel tp=3 must divide the attention heads (8) and the "
            "key/value heads (4) of LlamaForCausalLM",
        ),
        (["--parallel", "tp=8"], "--parallel tp=8 must divide the attention heads (8) and"),
        (["--parallel", "tp=2,dp=2"], "--serve takes tensor parallelism only (--parallel tp=N)"),
        (
            ["--devices", "4", "--parallel", "tp=2"],
            "uses 2 devices (tp x dp x pp), not --devices 4",
        ),
    ],
)
def test_bad_parallel_serving_is_a_one_line_error(capsys, extra, message):
    args = ["analyze", str(MODELS / "llama_tp.py"), "--serve", "decode", "--no-verify", *extra]
    assert message in one_line_error(capsys, args)
