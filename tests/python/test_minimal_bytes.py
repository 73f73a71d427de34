"""Minimal bytes and origin precision (issue 29, items 7 and 8), on small model files of our
own (tests/python/models/fidelity/), on H100-SXM (DRAM 3.35e12 B/s, fp32 vector 67e12 FLOP/s,
fp8 tensor 1979e12 FLOP/s). Every byte count is worked out by hand below; f32 is 4 bytes, i64
8 bytes, fp8 1 byte.
"""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import solar  # noqa: E402

PATTERNS = Path(__file__).resolve().parent / "models" / "fidelity"
DRAM = 3.35e12


def _report(name: str) -> dict:
    # Without the kernel floor: the times below are the formulas' (docs/cache-state.md).
    data = solar.analyze_file(
        PATTERNS / f"{name}.py", hw="H100-SXM", sol_options={"kernel_floor": "off"}
    ).data
    assert data["verification"]["status"] == "passed", data["verification"]
    return data


def test_an_expanded_output_costs_its_base_bytes():
    data = _report("expand_output")
    # Fused: read dt 2*8*4 = 64 elements = 256 B and A 4 x 4 = 16 B; the output is a stride-0
    # view of the [2, 8, 4] exp: its base's 64 elements = 256 B (not the expanded
    # 2*8*4*16*8 = 8192 elements = 32,768 B). 256 + 16 + 256 = 528 B.
    assert data["bytes"]["fused"] == 528
    assert data["bytes"]["cache_aware"] == 528
    # Unfused: mul reads dt and A (272 B) and writes 256 B = 528; exp reads and writes 256 B
    # each = 512; the expand is a view (no kernel in eager): 0. 528 + 512 = 1040 B.
    assert data["bytes"]["unfused"] == 1040
    expand = [n for n in data["nodes"] if n["op"] == "broadcast"]
    assert len(expand) == 1 and expand[0]["bytes_unfused"] == 0
    assert data["sol"]["fused_s"] == pytest.approx(528 / DRAM)


def test_an_embedding_reads_only_the_rows_it_names():
    data = _report("embedding_rows")
    # ids: 16 x 8 B = 128 B; 16 rows of 64 f32 = 4096 B (at most min(16 indices, 1000 rows)
    # rows; not the 1000 x 64 x 4 = 256,000 B table); output 16 x 64 x 4 = 4096 B. 8320 B.
    assert data["bytes"]["fused"] == 8320
    assert data["bytes"]["unfused"] == 8320


def test_a_paged_kv_cache_reads_only_the_pages_of_its_block_table():
    data = _report("paged_kv")
    # block_table 2 x 4 i64 = 64 B; 8 named pages of 16 x 2 x 8 = 256 f32 = 8 x 1024 = 8192 B
    # (not the 64-page cache, 65,536 B); q 2*2*8*4 = 128 B; scores 2*2*64*4 = 1024 B.
    # 64 + 8192 + 128 + 1024 = 9408 B.
    assert data["bytes"]["fused"] == 9408
    assert data["bytes"]["cache_aware"] == 9408


def test_an_input_never_read_costs_nothing():
    data = _report("unread_input")
    # x read 64*128*4 = 32,768 B, y written 32,768 B; mask (32,768 B) is never read: 65,536 B.
    for fidelity in ("unfused", "fused", "cache_aware"):
        assert data["bytes"][fidelity] == 65536, fidelity


def test_values_computed_and_discarded_cost_nothing():
    data = _report("max_values_only")
    # torch.max(x, 1).values: read x 32,768 B, write 64 values x 4 = 256 B = 33,024 B. The
    # indices (64 x 8 = 512 B) are computed by a kernel of their own and never used: dead code,
    # removed before counting (with them the unfused bytes were 33,536).
    assert data["dead_nodes"] == ["max_1_reduce2"]
    for fidelity in ("unfused", "fused", "cache_aware"):
        assert data["bytes"][fidelity] == 33024, fidelity
    assert len(data["nodes"]) == 1


def test_a_dequantised_fp8_gemm_is_priced_at_fp8_in_the_fused_fidelities():
    data = _report("fp8_dequant_gemm")
    # The product: 256 x 256 x 512 = 33,554,432 MACs of f32 operands, each an exact upcast of
    # e4m3 values times a per-block scale. Fused and cache-aware price it at the fp8 tensor
    # rate: 2 x 33,554,432 / 1979e12 = 33.911 ns (at the fp32 vector rate, as the unfused
    # fidelity keeps: 67,108,864 / 67e12 = 1001.6 ns).
    (origin,) = data["origin_priced"]
    assert origin["node"] == "mm_mm"
    assert origin["origin"] == ["f8e4m3", "f8e4m3"]
    assert origin["operands"] == ["f32", "f32"]
    assert origin["precision"] == "fp8 tensor"
    assert origin["unfused_precision"] == "fp32 vector"
    assert origin["fused_compute_s"] == pytest.approx(67108864 / 1979e12)
    mm = next(o for o in data["ops"] if o["nodes"] == ["mm_mm"])
    assert mm["compute_s"] == pytest.approx(67108864 / 67e12)
    # The two scale multiplies: 256 x 512 = 131,072 multiplies each, at 67e12: 1.9564 ns each.
    # Fused compute = 33.911 + 2 x 1.9564 = 37.823 ns.
    assert data["sol"]["compute_s"] == pytest.approx(67108864 / 1979e12 + 2 * 131072 / 67e12)
    # Bytes: a and b 256 x 512 x 1 B = 131,072 B each; the scales 256 x 4 and 2 x 4 f32 =
    # 4096 + 32 B; the output 256 x 256 x 4 = 262,144 B. 528,416 B, 157.74 ns at 3.35 TB/s:
    # memory-bound (before: compute-bound at 1001.6 + 3.9 = 1005.5 ns, 6.4x above).
    assert data["bytes"]["fused"] == 528416
    assert data["sol"]["fused_s"] == pytest.approx(528416 / DRAM)
    assert data["sol"]["cache_aware_s"] == pytest.approx(528416 / DRAM)
    # Deterministic: the same report twice.
    again = _report("fp8_dequant_gemm")
    assert again["origin_priced"] == data["origin_priced"]
