"""Contraction-order insights on captured PyTorch programs (docs/report.md, "Insights").

Each model is a model file written to tmp_path, captured, lowered, verified and analysed by
``solar.analyze_file``; the test reads ``insights.contraction_chains`` of its JSON report. A
chain runs through the data movement a capture inserts (torch.einsum's permute/reshape/expand
around its bmm, the transposes of ``@``) and through a scale by a constant; a softmax, a GELU or
any other elementwise map cuts it. Every count is worked out by hand in the comments (1 MAC = one
multiply-add; a contraction's MACs are the product of the extents of all its indices).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch")

import solar  # noqa: E402

# Multi-head latent attention (DeepSeek style): keys and values are up-projected from the
# cached latent c_kv by w_uk and w_uv, then softmax(q k^T / sqrt(D)) v.
MLA = """
import math
import torch
from torch import nn

B, H, D, R, T, S = {B}, {H}, {D}, {R}, {T}, {S}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.w_uk = nn.Parameter(torch.randn(H, R, D) / math.sqrt(R))
        self.w_uv = nn.Parameter(torch.randn(H, R, D) / math.sqrt(R))

    def forward(self, q, c_kv):
        k = torch.einsum("btr,hrd->bhtd", c_kv, self.w_uk)
        v = torch.einsum("btr,hrd->bhtd", c_kv, self.w_uv)
        p = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(D), dim=-1)
        return p @ v


def get_inputs():
    return [torch.randn(B, H, S, D), torch.randn(B, T, R)]


def get_init_inputs():
    return []
"""

LOW_RANK = """
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Parameter(torch.randn({J}, {K}) / 32)
        self.b = nn.Parameter(torch.randn({K}, {L}) / 4)

    def forward(self, x):
        return {EXPR}


def get_inputs():
    return [torch.randn({I}, {J})]


def get_init_inputs():
    return []
"""

MLP = """
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 256, bias=False)
        self.fc2 = nn.Linear(256, 16, bias=False)

    def forward(self, x):
        return self.fc2({ACT})


def get_inputs():
    return [torch.randn(64, 16)]


def get_init_inputs():
    return []
"""


def chains_of(tmp_path: Path, name: str, text: str, **options) -> tuple[list[dict], dict]:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(text))
    report = solar.analyze_file(path, **options)
    if options.get("verify", True):
        assert report.verification["status"] == "passed", report.verification
    return report.data["insights"]["contraction_chains"], report


def mla(B: int, H: int, D: int, R: int, T: int, S: int) -> str:  # noqa: N803 (the sizes' names)
    return MLA.format(B=B, H=H, D=D, R=R, T=T, S=S)


def test_mla_decode_absorbs_the_up_projections(tmp_path: Path) -> None:
    # B = 2, H = 4, D = 16, R = 32, T = 64 cached tokens, S = 1 query.
    chains, report = chains_of(tmp_path, "mla_decode", mla(2, 4, 16, 32, 64, 1))
    assert len(chains) == 2, report.data["insights"]["notes"]
    scores, values = chains
    # Scores, as written: k = c_kv w_uk: B*T*R*H*D = 2*64*32*4*16 = 262,144; q k^T:
    # B*H*S*T*D = 2*4*1*64*16 = 8,192; 270,336 in all.
    # Absorbed: q w_uk^T over d: B*H*S*D*R = 2*4*1*16*32 = 4,096; then with c_kv over r:
    # B*H*S*R*T = 2*4*1*32*64 = 16,384; 20,480 in all.
    assert scores["operands"] == ["p_w_uk", "c_kv", "q"]
    assert scores["program_order"] == "(q (c_kv p_w_uk))"
    assert scores["program_macs"] == 270_336
    assert scores["best_order"] == "((p_w_uk q) c_kv)"
    assert scores["best_macs"] == 20_480
    assert scores["flops_saved"] == 2 * (270_336 - 20_480)  # 499,712
    # Output: v = c_kv w_uv: 262,144; p v: B*H*S*D*T = 2*4*1*16*64 = 8,192; 270,336.
    # Absorbed: p c_kv over t: B*H*S*T*R = 2*4*1*64*32 = 16,384; then w_uv over r:
    # B*H*S*R*D = 2*4*1*32*16 = 4,096; 20,480.
    assert values["operands"] == ["p_w_uv", "c_kv", "_softmax"]
    assert values["program_macs"] == 270_336
    assert values["best_order"] == "(p_w_uv (c_kv _softmax))"
    assert values["best_macs"] == 20_480
    # The chains run through the einsum's reshapes and the transposes of @ and q k^T's scale.
    for c in chains:
        assert c["via"], c
        assert len(c["best_steps"]) == 2
        assert c["compute_s_saved"] > 0
        assert c["fused_sol_s"] <= report.data["sol"]["fused_s"]
    # The steps, one letter per atomic index: the output's first, then each operand's new ones.
    # Scores: out div[b, h, s, t] = a, b, c (S = 1 drops out); p_w_uk[h, r, d] = bde, c_kv[b,
    # t, r] = acd, q[b, h, s, d] = abe: first w_uk with q over the head dimension e, then the
    # latent cache over the rank d.
    assert scores["indices"] == [
        {"index": "a", "extent": 2},
        {"index": "b", "extent": 4},
        {"index": "c", "extent": 64},
        {"index": "d", "extent": 32},
        {"index": "e", "extent": 16},
    ]
    assert scores["best_steps"] == ["bde,abe->abd", "abd,acd->abc"]
    # Values: out [b, h, s, d] = a, b, c; p_w_uv[h, r, d] = bdc, c_kv[b, t, r] = aed,
    # _softmax[b, h, s, t] = abe: the latent cache with p over t, then w_uv over the rank d.
    assert values["best_steps"] == ["aed,abe->abd", "bdc,abd->abc"]
    assert "saves" in report.table and "as einsums:" in report.table


def test_mla_prefill(tmp_path: Path) -> None:
    # S = 8 queries, otherwise as the decode step.
    chains, report = chains_of(tmp_path, "mla_prefill", mla(2, 4, 16, 32, 64, 8))
    assert len(chains) == 2, report.data["insights"]["notes"]
    scores, values = chains
    # Scores: c_kv w_uk 262,144; q k^T: B*H*S*T*D = 2*4*8*64*16 = 65,536; 327,680.
    # Absorbed: q w_uk^T: B*H*S*D*R = 2*4*8*16*32 = 32,768; with c_kv: B*H*S*R*T =
    # 2*4*8*32*64 = 131,072; 163,840.
    assert scores["program_macs"] == 327_680
    assert scores["best_macs"] == 163_840
    assert scores["best_order"] == "((p_w_uk q) c_kv)"
    # Output: 262,144 + p v B*H*S*D*T = 65,536: 327,680. Absorbed: p c_kv: 2*4*8*64*32 =
    # 131,072; w_uv: 2*4*8*32*16 = 32,768; 163,840.
    assert values["program_macs"] == 327_680
    assert values["best_macs"] == 163_840
    assert values["best_order"] == "(p_w_uv (c_kv _softmax))"


def test_mla_issue_sizes_without_verification(tmp_path: Path) -> None:
    # The issue's decode step: B = 4, H = 16, D = 128, R = 512, T = 4,096, S = 1 (not verified:
    # the reference executor would run 34 GMAC).
    chains, report = chains_of(tmp_path, "mla_big", mla(4, 16, 128, 512, 4096, 1), verify=False)
    assert len(chains) == 2, report.data["insights"]["notes"]
    # Up-projection: B*T*R*H*D = 4*4096*512*16*128 = 17,179,869,184; q k^T (or p v):
    # B*H*T*D = 4*16*4096*128 = 33,554,432; 17,213,423,616 per half.
    # Absorbed: the latent product B*H*T*R = 4*16*4096*512 = 134,217,728 and the absorbed
    # projection B*H*D*R = 4*16*128*512 = 4,194,304; 138,412,032 per half.
    for c in chains:
        assert c["program_macs"] == 17_213_423_616
        assert c["best_macs"] == 138_412_032


def test_low_rank_adapter_in_order_has_no_false_insight(tmp_path: Path) -> None:
    # x[512, 1024] A[1024, 8] B[8, 1024] as (x A) B: 512*1024*8 + 512*8*1024 = 4,194,304 +
    # 4,194,304 = 8,388,608 MACs, already the cheapest (x (A B) costs 545,259,520).
    text = LOW_RANK.format(I=512, J=1024, K=8, L=1024, EXPR="(x @ self.a) @ self.b")
    chains, _ = chains_of(tmp_path, "lora", text)
    assert len(chains) == 1
    (c,) = chains
    assert c["program_macs"] == 8_388_608
    assert c["best_macs"] == 8_388_608
    assert c["best_order"] == c["program_order"]
    assert c["flops_saved"] == 0


def test_low_rank_adapter_merged_first_is_reordered(tmp_path: Path) -> None:
    # x (A B): A B = 1024*8*1024 = 8,388,608; x (A B) = 512*1024*1024 = 536,870,912;
    # 545,259,520 in all. (x A) B: 8,388,608. Saved: 536,870,912 MACs.
    text = LOW_RANK.format(I=512, J=1024, K=8, L=1024, EXPR="x @ (self.a @ self.b)")
    chains, report = chains_of(tmp_path, "lora_merged", text)
    assert len(chains) == 1
    (c,) = chains
    assert c["operands"] == ["p_a", "p_b", "x"]
    assert c["program_order"] == "(x (p_a p_b))"
    assert c["program_macs"] == 545_259_520
    assert c["best_order"] == "((p_a x) p_b)"
    assert c["best_macs"] == 8_388_608
    assert c["flops_saved"] == 2 * 536_870_912
    assert "saves 536.9 MMAC (1.074 GFLOP)" in report.table, report.table


def test_gelu_cuts_the_chain_a_scale_does_not(tmp_path: Path) -> None:
    # x[64, 16] fc1 (16 -> 256) fc2 (256 -> 16): as written 64*16*256 + 64*256*16 = 262,144 +
    # 262,144 = 524,288 MACs; x (W1 W2) would cost 16*256*16 + 64*16*16 = 65,536 + 16,384 =
    # 81,920, but only if nothing but a scale sits between them.
    chains, _ = chains_of(
        tmp_path, "mlp_gelu", MLP.format(ACT="torch.nn.functional.gelu(self.fc1(x))")
    )
    assert chains == []
    chains, _ = chains_of(tmp_path, "mlp_scale", MLP.format(ACT="self.fc1(x) * 0.5"))
    assert len(chains) == 1
    assert chains[0]["program_macs"] == 524_288
    assert chains[0]["best_macs"] == 81_920
