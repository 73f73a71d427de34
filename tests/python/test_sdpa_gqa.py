"""scaled_dot_product_attention with enable_gqa=True and 1 < Hk < H (grouped-query attention):
lowered with the head loop split (query head G*hk + g reads key and value head hk, G = H / Hk,
as PyTorch's repeat_interleave of the key and value heads), verified against PyTorch, and
counted by hand: both products at H heads, the key and value bytes at Hk heads. On H100-SXM;
f32 is 4 bytes."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

import solar  # noqa: E402

B, H, HK, L, S, E = 2, 8, 2, 16, 16, 32


class Gqa(torch.nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)


class CausalMaskedGqa(torch.nn.Module):
    def forward(self, q, k, v, mask):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)


def _inputs() -> tuple:
    torch.manual_seed(0)
    return torch.randn(B, H, L, E), torch.randn(B, HK, S, E), torch.randn(B, HK, S, E)


def _report(model, inputs) -> dict:
    data = solar.analyze(model, inputs, hw="H100-SXM").data
    assert data["verification"]["status"] == "passed", data["verification"]
    return data


def test_grouped_query_attention_is_verified_and_counted_at_its_heads():
    data = _report(Gqa(), _inputs())
    # q k^T at H = 8 query heads: B*H*L*S*E = 2*8*16*16*32 = 131,072 MACs; P V the same:
    # 2*8*16*32*16 = 131,072. 262,144 MACs (not 2*2*16*16*32*2 = 65,536 at Hk heads).
    assert data["totals"]["macs"] == 262_144
    nodes = {n["name"]: n for n in data["nodes"]}
    assert nodes["scaled_dot_product_attention_qk"]["macs"] == 131_072
    assert nodes["scaled_dot_product_attention_pv"]["macs"] == 131_072
    # The product q k^T reads k at Hk = 2 heads: 2*2*16*32*4 = 8,192 B (each key head read by
    # its G = 4 query heads, once), and q 2*8*16*32*4 = 32,768 B.
    qk = nodes["scaled_dot_product_attention_qk"]
    assert qk["bytes_read"] == 32_768 + 8_192
    # Fused: q 32,768 + k 8,192 + v 8,192 + the output [2, 8, 16, 32] 32,768 = 81,920 B.
    assert data["bytes"]["fused"] == 81_920


def test_grouped_query_attention_with_a_bool_mask():
    q, k, v = _inputs()
    # A causal mask [L, S] broadcast over batch and heads: the masked scores are -inf.
    mask = torch.ones(L, S, dtype=torch.bool).tril()
    data = _report(CausalMaskedGqa(), (q, k, v, mask))
    # The products run over every (i, j) (a mask, not is_causal): 262,144 MACs as above.
    assert data["totals"]["macs"] == 262_144


def test_a_head_count_that_does_not_divide_is_refused_by_pytorch_first():
    q, k, v = torch.randn(1, 6, 4, 8), torch.randn(1, 4, 4, 8), torch.randn(1, 4, 4, 8)
    with pytest.raises(RuntimeError):  # 6 query heads, 4 key heads: PyTorch's own error
        Gqa()(q, k, v)
