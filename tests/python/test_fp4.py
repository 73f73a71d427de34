"""Packed fp4 tensors (issue 27, item 4): a program that carries torch.float4_e2m1fn_x2 weights
(models/fidelity/fp4_packed_gemm.py: N = 256, K = 512, M = 4, one bf16 scale per 16 along K)
is captured, verified and priced by its bytes in bits: a packed pair is one byte for two
elements, and the GEMM's MACs count the unpacked K. Every number is worked out by hand below.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import solar  # noqa: E402

MODEL = Path(__file__).resolve().parent / "models" / "fidelity" / "fp4_packed_gemm.py"

# Fused bytes, each tensor once: the packed weight 256 x 512 / 2 = 65,536 B (256 x 256 pairs,
# 1 B each); the 16-entry bf16 table 32 B; the scales 256 x 32 x 2 B = 16,384 B; x 4 x 512 x 2 B
# = 4,096 B; the output 4 x 256 x 2 B = 2,048 B. 65,536 + 32 + 16,384 + 4,096 + 2,048 = 88,096 B.
FUSED_BYTES = 88_096
# The GEMM: M x N x K = 4 x 256 x 512 = 524,288 MACs (K unpacked: 2 x the 256 packed columns).
MACS = 524_288


def _report(hw: str) -> dict:
    data = solar.analyze_file(MODEL, hw=hw).data
    assert data["verification"]["status"] == "passed", data["verification"]
    return data


def test_a_packed_fp4_gemm_counts_bytes_by_bits_and_macs_by_the_unpacked_k():
    data = _report("H100-SXM")
    (mm,) = [n for n in data["nodes"] if n["macs"] > 0]
    assert mm["macs"] == MACS
    assert data["totals"]["macs"] == MACS
    assert data["bytes"]["fused"] == FUSED_BYTES
    # The view as uint8 is the same bytes: folded, no node of its own moves them.
    assert not [n for n in data["nodes"] if "view" in n["name"] and n["kind"] == "movement"]
    # H100 has no fp4 rate: the product keeps its bf16 rate in every fidelity.
    assert "origin_priced" not in data


def test_a_packed_fp4_gemm_is_priced_at_fp4_where_the_device_has_it():
    data = _report("B200")
    # The weight operand is decoded from packed fp4 pairs by a 16-entry table (origin
    # f4e2m1x2) and scaled per block: the fused fidelities price the product at B200's fp4
    # tensor rate, 2 x 524,288 / 9000e12 = 116.5 ps.
    (origin,) = data["origin_priced"]
    assert origin["origin"] == ["bf16", "f4e2m1x2"]
    assert origin["precision"] == "fp4 tensor"
    assert origin["fused_compute_s"] == pytest.approx(2 * MACS / 9000e12)


def test_a_dequantising_program_keeps_its_decoded_weight_on_chip_in_the_cache_aware_model(tmp_path):
    """With 16 KiB on chip, the decoded weight (256 x 512 bf16 = 262,144 B) does not fit; a kernel
    that dequantises the packed weight tile by tile into its GEMM keeps the decoded values in
    registers, so the values decoded from packed fp4 (the codes, the table lookup, the scaled
    weight) move no DRAM bytes in the cache-aware model: what is left above the fused 88,096 B is
    a tiled schedule's re-reads of the packed weight, the scales and x, under a quarter of the
    decoded weight (the schedules that wrote it to DRAM moved 358 kB)."""
    from solar import cli

    ir = tmp_path / "fp4.ir"
    assert cli.main(["capture", str(MODEL), "-o", str(ir)]) == 0
    out = tmp_path / "r.json"
    assert (
        cli.main(["sol", str(ir), "--hw", "B200", "--capacity", "16KiB", "--json", str(out)]) == 0
    )
    data = json.loads(out.read_text())
    assert data["bytes"]["fused"] == FUSED_BYTES
    assert FUSED_BYTES <= data["bytes"]["cache_aware"] < FUSED_BYTES + 262_144 // 4
    reasons = [g.get("lower_bound_reason", "") for g in data["cache"]["groups"]]
    assert any("values decoded from packed fp4" in r for r in reasons)
