"""Scaled products through torch._scaled_mm (issue 38: the kernel-benchmark GEMMs in fp8 and
NVFP4), written as references write them (tests/python/models/scaled/), analysed end to end,
their work and bytes by hand. fp8 is verified against PyTorch's own CPU kernel (H100-SXM);
block-scaled fp4 (NVFP4), which the CPU cannot run, against the op's definition, which is itself
checked here against PyTorch's own NVFP4 test helpers (B200, which has an fp4 rate).

Both fp8 GEMMs: M = 32, N = 48, K = 64, e4m3 operands (1 B), a bf16 result (2 B).
  MACs 32 x 48 x 64 = 98,304, on the fp8 tensor cores (the operands' own precision).
  bytes: a 32 x 64 = 2,048, b 48 x 64 = 3,072, y 32 x 48 x 2 = 3,072.
"""

from __future__ import annotations

import json
import os

import pytest

pytest.importorskip("torch")

import solar  # noqa: E402
from solar import cli  # noqa: E402

MODELS = os.path.join(os.path.dirname(__file__), "models", "scaled")


def analysed(name: str, hw: str = "H100-SXM") -> dict:
    data = solar.analyze_file(os.path.join(MODELS, f"{name}.py"), hw=hw).data
    assert data["verification"]["status"] == "passed", data["verification"]
    return data


def test_tensor_wise_scales():
    data = analysed("fp8_gemm_tensorwise")
    assert data["totals"]["macs"] == 32 * 48 * 64
    # y = acc * scale_a * scale_b: 2 multiplies an element, 32 x 48 x 2 = 3,072
    assert data["totals"]["other_ops"] == 32 * 48 * 2
    # a 2,048 + b 3,072 + the two f32 scales 4 + 4 + y 3,072 = 8,200; one op, so unfused too
    assert data["bytes"]["fused"] == data["bytes"]["unfused"] == 2_048 + 3_072 + 8 + 3_072
    (product,) = [n for n in data["nodes"] if n["macs"]]
    assert product["precision"] == "fp8 tensor"


def test_row_wise_scales_and_a_bias():
    data = analysed("fp8_gemm_rowwise")
    assert data["totals"]["macs"] == 32 * 48 * 64
    # 2 multiplies and the bias's add an element: 32 x 48 x 3 = 4,608
    assert data["totals"]["other_ops"] == 32 * 48 * 3
    # a 2,048 + weight 3,072 + scale_a [32, 1] f32 128 + scale_b [1, 48] f32 192 + bias bf16
    # 96 + y 3,072 = 8,608
    assert data["bytes"]["fused"] == 2_048 + 3_072 + 128 + 192 + 96 + 3_072


# B200's dense fp4 tensor rate (data/hardware/B200.json): 9,000 TFLOP/s.
B200_FP4_FLOPS = 9000e12


def test_nvfp4_block_scaled_gemm_is_priced_at_fp4_with_its_decoding_free():
    """M = 16, N = 32, K = 64: a [16, 32] and b [32, 32] packed pairs, scales [128, 4] e4m3 each
    (16 rows padded to 128, 64 / 16 = 4 blocks)."""
    data = analysed("fp4_gemm_block_scaled", hw="B200")
    assert any("NVFP4" in note for note in data["verification"]["notes"])
    assert data["totals"]["macs"] == 16 * 32 * 64  # 32,768
    # Decoding, counted as the rule writes it: the e2m1 table, 16 entries x 12 operations (a
    # multiply; the sign's select and compare; the magnitude's select, compare and `% 8`, then
    # the larger branch: select, compare, `% 8`, then `% 8 * 2 - 8`) = 192; a mask and a shift
    # a byte: a 16 x 32 x 2 = 1,024, b 32 x 32 x 2 = 2,048; a scale multiply an element: a
    # 16 x 64 = 1,024, b 64 x 32 = 2,048. 192 + 1,024 + 2,048 + 1,024 + 2,048 = 6,336.
    assert data["totals"]["other_ops"] == 6_336
    # a 512 + b 1,024 + the scales read: 16 rows x 4 blocks = 64 of scale_a and 32 x 4 = 128 of
    # scale_b (the padding is never read) + y 16 x 32 x 2 = 1,024: 2,752. One op, so unfused too.
    assert data["bytes"]["fused"] == data["bytes"]["unfused"] == 512 + 1_024 + 64 + 128 + 1_024
    # The tensor core decodes and scales as it multiplies: the decoding costs no time, and eager's
    # kernel is the fp4 kernel, so every fidelity prices 2 x 32,768 FLOPs at the fp4 rate.
    assert data["sol"]["compute_s"] == pytest.approx(2 * 32_768 / B200_FP4_FLOPS)
    (op,) = data["ops"]
    assert op["compute_s"] == pytest.approx(2 * 32_768 / B200_FP4_FLOPS)
    (origin,) = data["origin_priced"]
    assert origin["precision"] == "fp4 tensor"


def test_nvfp4_on_a_device_without_fp4_runs_its_product_in_bf16():
    # H100 has no fp4 rate: a decoded, scaled value (an e2m1 value, 2 significant bits, times an
    # e4m3 scale, 4) has at most 5 significant bits, exact in bf16 (8), so the product is priced
    # at the bf16 tensor rate, not the f32 one its f32 operands would get.
    data = analysed("fp4_gemm_block_scaled", hw="H100-SXM")
    (origin,) = data["origin_priced"]
    assert origin["origin"] == ["f4e2m1x2", "f4e2m1x2"]
    assert origin["precision"] == "bf16 tensor"


def test_nvfp4_partial_tiles_a_global_scale_and_a_bias():
    """M = 200, N = 40, K = 80: 200 rows are a whole tile of 128 and 72 rows of the next (two
    whole quarters of 32 and 8 rows), 80 / 16 = 5 blocks (a group of 4 and one)."""
    data = analysed("nvfp4_linear_partial_tiles", hw="B200")
    assert data["totals"]["macs"] == 200 * 40 * 80  # 640,000
    # x 200 x 40 = 8,000; w 40 x 40 = 1,600; the scales read: 200 x 5 = 1,000 and 40 x 5 = 200;
    # alpha f32 4; bias 40 x 2 = 80; out 200 x 40 x 2 = 16,000. Fused: 26,884.
    assert data["bytes"]["fused"] == 8_000 + 1_600 + 1_000 + 200 + 4 + 80 + 16_000
    # Unfused: _scaled_mm 8,000 + 1,600 + 1,000 + 200 + its bf16 result 16,000 = 26,800; the
    # multiply by alpha reads it and alpha and writes 16,000: 32,004; the bias add reads 16,000
    # and 80 and writes 16,000: 32,080. 26,800 + 32,004 + 32,080 = 90,884.
    assert data["bytes"]["unfused"] == 26_800 + 32_004 + 32_080


def test_the_nvfp4_definition_agrees_with_pytorchs_own_nvfp4_helpers():
    """The golden run's stand-in for the CPU-less kernel, checked against an oracle built from
    PyTorch's own test helpers (torch.testing._internal.common_quantized: to_blocked, the cuBLAS
    block-scaling layout, and the e2m1 decoder), on partial tiles (M = 200, N = 40, K = 80)."""
    import torch
    import torch.testing._internal.common_quantized as helpers  # needs expecttest ([test])

    from solar.torch._golden import nvfp4_scaled_mm

    g = torch.Generator().manual_seed(3)
    m, n, k = 200, 40, 80
    a_codes = torch.randint(0, 16, (m, k), dtype=torch.uint8, generator=g)
    b_codes = torch.randint(0, 16, (n, k), dtype=torch.uint8, generator=g)
    sa = (torch.rand(m, k // 16, generator=g) + 0.5).to(torch.float8_e4m3fn)
    sb = (torch.rand(n, k // 16, generator=g) + 0.5).to(torch.float8_e4m3fn)
    a = helpers.pack_uint4(a_codes).view(torch.float4_e2m1fn_x2)
    b = helpers.pack_uint4(b_codes).view(torch.float4_e2m1fn_x2)
    got = nvfp4_scaled_mm(
        a, b.t(), helpers.to_blocked(sa), helpers.to_blocked(sb), out_dtype=torch.bfloat16
    )
    decode = helpers._floatx_unpacked_to_f32
    x = decode(a_codes, 2, 1) * sa.float().repeat_interleave(16, dim=1)
    w = decode(b_codes, 2, 1) * sb.float().repeat_interleave(16, dim=1)
    want = (x @ w.t()).to(torch.bfloat16)
    assert got.dtype == torch.bfloat16
    assert torch.equal(got, want)


def test_mxfp4_scales_are_one_line(tmp_path, capsys):
    # MXFP4's scales are e8m0 (float8_e8m0fnu), a dtype the IR does not have.
    path = tmp_path / "mxfp4.py"
    path.write_text(
        "import torch\n"
        "class Model(torch.nn.Module):\n"
        "    def forward(self, a, b, sa, sb):\n"
        "        return torch._scaled_mm(a, b.t(), sa, sb, out_dtype=torch.bfloat16)\n"
        "def get_inputs():\n"
        "    a = torch.randint(0, 256, (16, 64), dtype=torch.uint8)\n"
        "    s = torch.ones(128, 4).to(torch.float8_e8m0fnu)\n"
        "    f4 = torch.float4_e2m1fn_x2\n"
        "    return [a.view(f4), a.clone().view(f4), s, s.clone()]\n"
        "def get_init_inputs():\n"
        "    return []\n"
    )
    assert cli.main(["analyze", str(path), "--hw", "B200"]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err and "internal error" not in err
    assert "float8_e8m0fnu has no SOLAR dtype" in err


def test_nvfp4_decoded_values_never_reach_dram_in_the_cache_aware_model(tmp_path):
    """With 4 KiB on chip the decoded operands do not fit (b alone decodes to 64 x 32 f32 =
    8,192 B), and the schedules the mapspace expresses write them to DRAM and read them back; the
    tensor core keeps them in registers, so their traffic is taken off and the group says so."""
    ir = tmp_path / "nvfp4.ir"
    assert (
        cli.main(["capture", os.path.join(MODELS, "fp4_gemm_block_scaled.py"), "-o", str(ir)]) == 0
    )
    out = tmp_path / "r.json"
    args = ["sol", str(ir), "--hw", "B200", "--capacity", "4KiB", "--json", str(out)]
    assert cli.main(args) == 0
    data = json.loads(out.read_text())
    fused, cache = data["bytes"]["fused"], data["bytes"]["cache_aware"]
    assert fused == 2_752  # test_nvfp4_block_scaled_gemm_is_priced_at_fp4_with_its_decoding_free
    # The law (cache >= fused) holds; what is above fused is re-reads of the packed operands and
    # scales by a tiled schedule, less than one decoded operand's 8,192 B.
    assert fused <= cache < fused + 8_192
    reasons = [g.get("lower_bound_reason", "") for g in data["cache"]["groups"]]
    assert any("values decoded from packed fp4" in r and "stay on chip" in r for r in reasons)


def test_nvfp4_through_functional_scaled_mm_with_global_scales():
    """torch.nn.functional.scaled_mm (aten._scaled_mm_v2), NVFP4's two-level recipe: M = 48,
    N = 24, K = 96 (6 blocks of 16), swizzled e4m3 block scales, then f32 global scales."""
    data = analysed("nvfp4_two_level_v2", hw="B200")
    assert any("NVFP4" in note for note in data["verification"]["notes"])
    assert data["totals"]["macs"] == 48 * 24 * 96  # 110,592
    # table 16 x 12 = 192; a mask and a shift a byte: x 48 x 48 x 2 = 4,608, w 24 x 48 x 2 =
    # 2,304; a scale multiply an element: x 48 x 96 = 4,608, w 96 x 24 = 2,304; the two global
    # scales, 2 multiplies an output element: 48 x 24 x 2 = 2,304. 16,320 in all.
    assert data["totals"]["other_ops"] == 192 + 4_608 + 2_304 + 4_608 + 2_304 + 2_304
    # x 48 x 48 = 2,304; w 24 x 48 = 1,152; the scales read, 48 x 6 = 288 and 24 x 6 = 144; the
    # globals 4 + 4; y 48 x 24 x 2 = 2,304: 6,200.
    assert data["bytes"]["fused"] == 2_304 + 1_152 + 288 + 144 + 8 + 2_304
    # Every non-product node of the op is the tensor core's: only the MACs take time.
    assert data["sol"]["compute_s"] == pytest.approx(2 * 110_592 / B200_FP4_FLOPS)


def test_fp8_rowwise_through_functional_scaled_mm():
    data = analysed("fp8_rowwise_v2")
    assert data["verification"]["status"] == "passed"
    assert data["totals"]["macs"] == 32 * 48 * 64  # 98,304
    # 2 scale multiplies an element: 32 x 48 x 2 = 3,072
    assert data["totals"]["other_ops"] == 32 * 48 * 2
    # a 2,048 + b 3,072 + scale_a [32, 1] f32 128 + scale_b [1, 48] f32 192 + y 3,072 = 8,512
    assert data["bytes"]["fused"] == 2_048 + 3_072 + 128 + 192 + 3_072
    (product,) = [n for n in data["nodes"] if n["macs"]]
    assert product["precision"] == "fp8 tensor"


def test_nvfp4_through_functional_scaled_mm_verified_op_by_op():
    path = os.path.join(MODELS, "nvfp4_two_level_v2.py")
    data = solar.analyze_file(path, hw="B200", verify_mode="per_op").data
    assert data["verification"]["mode"] == "per_op"
    assert data["verification"]["status"] == "passed"
