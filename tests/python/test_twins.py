"""PyTorch/JAX twins (docs/jax.md): the same model written in both frameworks with the same
shapes gets the same MACs and the same fused bytes from SOLAR, and both verify.

The JAX files are tests/python/jax_models/twin_*.py, their PyTorch twins
tests/python/jax_models/torch_twins/twin_*.py. The counts are also checked against arithmetic by
hand (f32: 4 bytes per element; fused bytes are the inputs, weights and outputs, each once)."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

pytest.importorskip("jax")
pytest.importorskip("flax")
pytest.importorskip("torch")

import solar.jax as solar_jax  # noqa: E402
from solar import torch as solar_torch  # noqa: E402

MODELS = Path(__file__).resolve().parent / "jax_models"

# name -> (MACs, fused bytes), by hand:
# - twin_mlp: x [8, 16], Linear 16->32, Linear 32->4. MACs 8*16*32 + 8*32*4 = 4096 + 1024 = 5120.
#   Bytes: x 8*16*4 = 512; w1 16*32*4 = 2048; b1 32*4 = 128; w2 32*4*4 = 512; b2 4*4 = 16;
#   output 8*4*4 = 128; total 3344.
# - twin_cnn: x [2, 3, 16, 16]; conv 3->8 3x3 stride 2 pad 1 -> 8x8: 2*8*64*27 = 27648; conv
#   8->16 3x3 pad 1 groups 4 -> 8x8: 2*16*64*(2*9) = 36864; Linear 16->10: 2*16*10 = 320;
#   total 64832. Bytes: x 2*3*256*4 = 6144; conv1 8*3*9*4 = 864 + bias 32; conv2 16*2*9*4 = 1152
#   + bias 64; linear 160*4 = 640 + bias 40; output 2*10*4 = 80; total 9016.
# - twin_attention: x [2, 8, 16] (16 tokens), 2 heads of 8: qkv 16*16*48 = 12288; scores and
#   values 2*2*8*8*8 = 2048 each; proj 16*16*16 = 4096; up 16*16*64 = 16384; down 16*64*16 =
#   16384; total 53248. Bytes: x 1024; qkv 16*48*4 = 3072 + 192; proj 1024 + 64; up 4096 + 256;
#   down 4096 + 64; output 1024; total 14912.
HAND = {
    "twin_mlp": (5120, 3344),
    "twin_cnn": (64832, 9016),
    "twin_attention": (53248, 14912),
}


@functools.cache
def reports(name: str):
    return (
        solar_jax.analyze_file(MODELS / f"{name}.py"),
        solar_torch.analyze_file(MODELS / "torch_twins" / f"{name}.py"),
    )


@pytest.mark.parametrize("name", sorted(HAND))
def test_twins_agree(name):
    jax_report, torch_report = reports(name)
    assert jax_report.data["capture"]["framework"] == "jax"
    assert torch_report.data["capture"]["framework"] == "torch"
    for r in (jax_report, torch_report):
        assert r.verification["status"] == "passed", r.summary()
    macs, fused = HAND[name]
    assert jax_report.data["totals"]["macs"] == torch_report.data["totals"]["macs"] == macs
    assert jax_report.data["bytes"]["fused"] == torch_report.data["bytes"]["fused"] == fused
