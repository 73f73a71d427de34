"""Hybrid decoders served (docs/serving.md, "Hybrid decoders"): a layer of linear attention
keeps a convolution state and a recurrent state instead of keys and values; the serving step
reads them as inputs and writes them as outputs, beside the attention layers' caches. The
bytes are counted by hand on models/serve/qwen3_next_tiny.py (float32, 4 B an element)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("transformers")

from solar.torch import serve  # noqa: E402

TINY = Path(__file__).resolve().parent / "models" / "serve" / "qwen3_next_tiny.py"

# The weights of qwen3_next_tiny.py, in elements (hidden 64, vocabulary 256, MLP width 128).
LINEAR_LAYER = (
    4  # dt_bias, one per value head
    + 4  # A_log
    + 128 * 4  # conv1d: 128 channels (q 2x16, k 2x16, v 4x16) x 4 taps = 512
    + 192 * 64  # in_proj_qkvz: q 32 + k 32 + v 64 + z 64 = 192 rows: 12,288
    + 8 * 64  # in_proj_ba: b and a, one per value head each: 512
    + 16  # the gated norm's weight (a value head's width)
    + 64 * 64  # out_proj: 4,096
)  # = 17,432
ATTENTION_LAYER = (
    128 * 64  # q_proj: 4 heads x 16, and as many gate values: 8,192
    + 32 * 64  # k_proj: 2 kv heads x 16
    + 32 * 64  # v_proj
    + 64 * 64  # o_proj
    + 16 * 2  # q_norm, k_norm
)  # = 16,416
MLP_AND_NORMS = 3 * 128 * 64 + 2 * 64  # gate, up, down; the two RMSNorms: 24,704
LAYERS = LINEAR_LAYER + ATTENTION_LAYER + 2 * MLP_AND_NORMS  # = 83,256
# Every weight once but the embedding: the final norm, the head, and the embedding rows taken.
WEIGHTS = LAYERS + 64 + 256 * 64  # = 99,704 elements, 398,816 B, and the rows: below

# The states of one sequence: the convolution's last 4 inputs of its 128 channels, the
# recurrent state of 4 value heads (16 x 16 each), keys and values of 2 heads of 16 a token.
CONV = 128 * 4 * 4  # 2,048 B
RECURRENT = 4 * 16 * 16 * 4  # 4,096 B
KV_TOKEN = 2 * 2 * 16 * 4  # keys and values of one token: 256 B
LOGITS = 256 * 4  # the last token's logits: 1,024 B
INV_FREQ = 2 * 4  # the rotary frequencies: a quarter of 16 rotated, 2 of them


def test_arithmetic():
    assert LINEAR_LAYER == 17_432 and ATTENTION_LAYER == 16_416 and MLP_AND_NORMS == 24_704
    assert LAYERS == 83_256 and WEIGHTS == 99_704


def test_a_hybrid_decode_step_reads_and_writes_each_layers_state():
    served = serve.analyze_serving(TINY, "decode", [1], 16)
    step = served.steps[0]
    v = step.verification
    # Logits, the linear layer's convolution and recurrent states, the attention layer's new
    # key and value: 5 outputs, each compared with transformers' own run of the step.
    assert v["status"] == "passed" and v["mode"] == "whole_program", v["detail"]
    assert v["detail"].startswith("5 output(s) compared with PyTorch")
    # Fused: every weight once (one embedding row, 64 elements), the two token inputs
    # (i64[1, 1] each), the states read and written once: the convolution state whole (the
    # step convolves the 4 cached inputs and the new one, as eager does, and keeps the last
    # output: its first, the oldest input's, is computed too), the recurrent state, and the 15
    # cached tokens' keys and values read, the new token's written; the logits written.
    fused = (
        4 * (WEIGHTS + 64)  # 399,072
        + INV_FREQ
        + 2 * 8  # input_ids, position_ids
        + 2 * CONV  # read, written
        + 2 * RECURRENT  # read, written
        + 15 * KV_TOKEN  # read: 3,840
        + KV_TOKEN  # written: 256
        + LOGITS
    )
    assert fused == 416_504
    assert step.data["bytes"]["fused"] == fused
    assert step.data["bytes"]["cache_aware"] >= fused


def test_a_hybrid_prefill_step_writes_each_layers_state():
    served = serve.analyze_serving(TINY, "prefill", [1], 16)
    step = served.steps[0]
    assert step.verification["status"] == "passed", step.verification["detail"]
    # Prefill of 16 tokens: no state before it (the convolution and recurrent states start at
    # zero, on chip); 16 embedding rows (every token taken different); each state written
    # once, the 16 tokens' keys and values written; the last token's logits.
    fused = (
        4 * (WEIGHTS + 16 * 64)  # 402,912
        + INV_FREQ
        + 2 * 16 * 8  # input_ids, position_ids: i64[1, 16] each
        + CONV
        + RECURRENT
        + 16 * KV_TOKEN
        + LOGITS
    )
    assert fused == 414_440
    assert step.data["bytes"]["fused"] == fused


FALCON_H1 = """import torch
from torch import nn
from transformers import FalconH1Config, FalconH1ForCausalLM


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        config = FalconH1Config(vocab_size=256, hidden_size=64, intermediate_size=128,
            num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
            mamba_d_ssm=64, mamba_n_heads=4, mamba_d_head=16, mamba_d_state=16)
        self.lm = FalconH1ForCausalLM(config).eval()

    def forward(self, input_ids):
        return self.lm(input_ids=input_ids, use_cache=False).logits


def get_inputs():
    return [torch.randint(0, 256, (1, 8))]


def get_init_inputs():
    return []
"""


LFM2 = (
    FALCON_H1.replace("FalconH1Config, FalconH1ForCausalLM", "Lfm2Config, Lfm2ForCausalLM")
    .replace("FalconH1ForCausalLM(config)", "Lfm2ForCausalLM(config)")
    .replace(
        """FalconH1Config(vocab_size=256, hidden_size=64, intermediate_size=128,
            num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
            mamba_d_ssm=64, mamba_n_heads=4, mamba_d_head=16, mamba_d_state=16)""",
        """Lfm2Config(vocab_size=256, hidden_size=64, intermediate_size=128,
            num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            layer_types=["conv", "full_attention"])""",
    )
)


@pytest.mark.parametrize("phase", ["decode", "prefill"])
@pytest.mark.parametrize(
    ("name", "source", "outputs"),
    [
        # Falcon-H1 runs attention and a Mamba-2 mixer side by side in every layer (the cache
        # kind "hybrid"): each of its 2 layers holds keys, values, a convolution and a
        # recurrent state: 1 + 2 x 4 = 9 outputs.
        ("falcon_h1", FALCON_H1, 9),
        # LFM2: a short-convolution layer (a convolution state, no recurrent one) and an
        # attention layer: 1 + 1 + 2 = 4 outputs.
        ("lfm2", LFM2, 4),
    ],
)
def test_each_kind_of_state_is_held_and_verified(tmp_path, phase, name, source, outputs):
    assert "Config(" in source and "ForCausalLM(config)" in source
    model = tmp_path / f"{name}.py"
    model.write_text(source)
    served = serve.analyze_serving(model, phase, [1], 16)
    v = served.steps[0].verification
    # Each output compared with transformers' own run of the step.
    assert v["status"] == "passed" and v["mode"] == "whole_program", v["detail"]
    assert v["detail"].startswith(f"{outputs} output(s) compared with PyTorch")
