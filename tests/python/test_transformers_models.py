"""Hugging Face `transformers` models built from their config classes with random weights (nothing
downloaded), 2 layers and tiny widths each (tests/python/models/hf/): each is captured, lowered,
verified against PyTorch (whole program) and analysed, and its MACs (`totals.macs`) equal a count
by hand and FlopCounterMode's FLOPs / 2 on the same model and inputs plus the MACs SOLAR counts
and FlopCounterMode does not (the layer norms' variances, one MAC per normalised element; RMSNorm
is pow(x, 2) and a mean: no MACs). Skipped when transformers is not importable.

FlopCounterMode runs under `sdpa_kernel(SDPBackend.MATH)` (the CPU's fused SDPA kernel has no
formula, test_models.py): the full q k^T and p v products. The exported graphs give SDPA an
explicit boolean mask (transformers builds it; causal for the decoders), so SOLAR counts the full
products too.

Every operator has a rule: the causal and sliding-window masks are `&` of bool tensors
(rules_data.cpp), Mixtral's router is topk, sort and histc, its experts
transformers.grouped_mm_fallback (rules_models.cpp); nothing is fed from PyTorch."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from solar import stages  # noqa: E402
from solar import torch as solar_torch  # noqa: E402
from solar.torch.capture import load_model_file  # noqa: E402

MODELS = Path(__file__).resolve().parent / "models" / "hf"

# name -> MACs by hand. B batch, T tokens, E width, h heads, dh head width, F MLP width,
# kv key/value heads, L layers = 2.
HAND_MACS = {
    # B=2, T=8, E=32, h=4, dh=8, F=4E=128. Per layer: qkv B*T*E*3E = 16*32*96 = 49152;
    # q k^T B*h*T*T*dh = 2*4*64*8 = 4096 (full: the mask is a tensor); p v 4096;
    # proj B*T*E*E = 16*1024 = 16384; fc B*T*E*F = 16*32*128 = 65536; proj 65536;
    # sum 204800, 2 layers 409600. Layer norms: 5 (2 per layer, ln_f) * B*T*E = 5*512 = 2560.
    # Total 412160.
    "gpt2": 412160,
    # B=2, T=8, E=32, h=4, dh=8, F=64. Per layer: q, k, v 3*B*T*E*E = 3*16*1024 = 49152;
    # q k^T 4096; p v 4096; out 16384; intermediate B*T*E*F = 16*32*64 = 32768; output 32768;
    # sum 139264, 2 layers 278528. Pooler B*E*E = 2*32*32 = 2048. Layer norms: embeddings + 2
    # per layer = 5 * 512 = 2560. Total 283136.
    "bert": 283136,
    # B=2, T=8, E=32, h=4, kv=2, dh=8, F=64. Per layer: q B*T*E*E = 16384; k, v
    # B*T*E*(kv*dh) = 16*32*16 = 8192 each; o 16384; q k^T B*h*T*T*dh = 4096; p v 4096;
    # gate, up 2*B*T*E*F = 2*16*32*64 = 65536; down 32768; sum 155648, 2 layers 311296.
    # RMSNorm: no MACs. Total 311296.
    "llama": 311296,
    "mistral": 311296,  # the same shapes as llama (the window is a mask: full products)
    # d=32, h=4, dkv=8, F=64, B=2, encoder Te=8, decoder Td=6. Encoder layer: q, k, v, o
    # 4*B*Te*d*d = 4*16*1024 = 65536; q k^T B*h*Te*Te*dkv = 2*4*64*8 = 4096; p v 4096; wi, wo
    # 2*B*Te*d*F = 2*16*32*64 = 65536; sum 139264, 2 layers 278528. Decoder layer: self q, k, v,
    # o 4*B*Td*d*d = 4*12*1024 = 49152; q k^T 2*4*36*8 = 2304; p v 2304; cross q, o 2*12*1024 =
    # 24576; cross k, v from the encoder 2*16*1024 = 32768; q k^T B*h*Td*Te*dkv = 2*4*6*8*8 =
    # 3072; p v 3072; wi, wo 2*12*32*64 = 49152; sum 166400, 2 layers 332800. T5's norm is RMS:
    # no MACs. Total 611328.
    "t5": 611328,
    # 16x16 images, 4x4 patches: P=16 patches + 1 class token = 17 tokens; B=2, E=32, h=4,
    # dh=8, F=64. Patch embedding (a conv, kernel = stride = 4): B*P*E*(3*4*4) = 2*16*32*48 =
    # 49152. Per layer: q, k, v 3*B*17*E*E = 3*34*1024 = 104448; q k^T B*h*17*17*dh =
    # 2*4*289*8 = 18496; p v 18496; out 34*1024 = 34816; MLP 2*34*32*64 = 139264; sum 315520,
    # 2 layers 631040. Pooler B*E*E = 2048. Layer norms: 5 * B*17*E = 5*1088 = 5440.
    # Total 49152 + 631040 + 2048 + 5440 = 687680.
    "vit": 687680,
    # B=2, T=8 (S = B*T = 16 tokens), E=32, h=4, kv=2, dh=8, 4 experts of F=64, top 2.
    # Per layer: attention as llama's, 16384 + 8192 + 8192 + 16384 + 4096 + 4096 = 57344;
    # router S*E*experts = 16*32*4 = 2048; experts (transformers.grouped_mm_fallback), each
    # token's 2 experts: 2S = 32 rows, gate and up 32*E*2F = 32*32*128 = 131072, down
    # 32*F*E = 32*64*32 = 65536; sum 57344 + 2048 + 196608 = 256000, 2 layers 512000.
    "mixtral": 512000,
}
# The MACs above that FlopCounterMode does not count: the layer norms' variances, and
# Mixtral's experts (transformers.grouped_mm_fallback is an opaque custom op: no formula, and
# its inner matmuls are not seen), 2 layers * 196608 = 393216.
NOT_COUNTED = {
    "gpt2": 2560,
    "bert": 2560,
    "llama": 0,
    "mistral": 0,
    "t5": 0,
    "vit": 5440,
    "mixtral": 393216,
}


@functools.cache
def report(name: str) -> stages.Report:
    return solar_torch.analyze_file(MODELS / f"{name}.py")


@functools.cache
def flop_counter_macs(name: str) -> int:
    model, inputs = load_model_file(MODELS / f"{name}.py")
    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        model(*inputs)
    flops = counter.get_total_flops()
    assert flops % 2 == 0
    return flops // 2


def test_every_model_file_is_listed():
    assert sorted(p.stem for p in MODELS.glob("*.py")) == sorted(HAND_MACS)
    assert set(NOT_COUNTED) == set(HAND_MACS)


@pytest.mark.parametrize("name", sorted(HAND_MACS))
def test_analyze_verifies_and_counts_macs(name):
    r = report(name)
    assert r.verification["status"] == "passed", r.summary()
    assert r.verification["mode"] == "whole_program"
    assert r.data["coverage"]["unsupported_ops"] == []
    assert r.data["totals"]["macs"] == HAND_MACS[name]


@pytest.mark.parametrize("name", sorted(HAND_MACS))
def test_solar_equals_flop_counter_plus_normalisation(name):
    assert flop_counter_macs(name) == HAND_MACS[name] - NOT_COUNTED[name]
    assert report(name).data["totals"]["macs"] == flop_counter_macs(name) + NOT_COUNTED[name]


def grouped_mm(x, w, offs):
    return torch.ops.transformers.grouped_mm_fallback(x, w, offs)


@pytest.mark.parametrize(
    "offs",
    [
        [3, 3, 7, 10],  # expert 1 has no rows; every row has an expert
        [2, 5, 6, 6],  # rows 6..9 have none: zero
        [0, 0, 0, 10],  # all rows the last expert's
    ],
)
def test_grouped_mm_fallback_rule(offs):
    import transformers.integrations.moe  # noqa: F401  (registers the custom op)

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(10, 6, generator=gen)  # S=10 rows, K=6
    w = torch.randn(4, 6, 5, generator=gen)  # E=4 experts, N=5
    o = torch.tensor(offs, dtype=torch.int32)
    r = solar_torch.analyze(grouped_mm, (x, w, o))
    assert r.verification["status"] == "passed", r.summary()
    # S*K*N = 10*6*5 = 300: each row by its own expert's matrix
    assert r.data["totals"]["macs"] == 300
