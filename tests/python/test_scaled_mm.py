"""fp8 products through torch._scaled_mm (issue 38: the kernel-benchmark GEMMs in fp8), written
as references write them (tests/python/models/scaled/), analysed end to end, verified against
PyTorch's own CPU kernel, their work and bytes by hand; block-scaled fp4, which the CPU cannot
run and SOLAR has no rule for yet, is one line. H100-SXM.

Both fp8 GEMMs: M = 32, N = 48, K = 64, e4m3 operands (1 B), a bf16 result (2 B).
  MACs 32 x 48 x 64 = 98,304, on the fp8 tensor cores (the operands' own precision).
  bytes: a 32 x 64 = 2,048, b 48 x 64 = 3,072, y 32 x 48 x 2 = 3,072.
"""

from __future__ import annotations

import os

import pytest

pytest.importorskip("torch")

import solar  # noqa: E402
from solar import cli  # noqa: E402

MODELS = os.path.join(os.path.dirname(__file__), "models", "scaled")


def analysed(name: str) -> dict:
    data = solar.analyze_file(os.path.join(MODELS, f"{name}.py"), hw="H100-SXM").data
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


def test_block_scaled_fp4_is_one_line_naming_the_op_and_the_line(capsys):
    path = os.path.join(MODELS, "fp4_gemm_block_scaled.py")
    assert cli.main(["analyze", path, "--hw", "B200"]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert "fp4_gemm_block_scaled.py:11 in forward" in err
    assert "aten._scaled_mm.default of packed fp4 operands" in err
    assert "internal error" not in err
