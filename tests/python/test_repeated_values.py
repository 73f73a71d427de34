"""Attention masks broadcast over the heads, written as models and benchmark references write
them (tests/python/models/masks/), analysed end to end (issue 38, family 9; docs/fidelities.md
"Repeated values"): the output holds one copy of each value per head, so the fused and
cache-aware models write it once, as a kernel that returns the broadcast view does, and the
unfused model writes every copy, as eager's contiguous copy does.

Both models: B = 2 sequences of L = 6 tokens, H = 4 heads, window 3, f32 output.
  input  attention_mask int64 [2, 6]             2*6*8     =    96 B
  output f32 [2, 4, 6, 6], every copy            2*4*6*6*4 = 1,152 B
         one copy of each value (over the heads)  2*6*6*4   =   288 B
  fused = cache-aware = 96 + 288 = 384 B.
"""

from __future__ import annotations

import os

import pytest

pytest.importorskip("torch")

import solar  # noqa: E402

MODELS = os.path.join(os.path.dirname(__file__), "models", "masks")


@pytest.fixture(scope="module", params=["hf_sliding_window_mask", "zeros_masked_fill"])
def analysed(request):
    return solar.analyze_file(os.path.join(MODELS, f"{request.param}.py"), hw="H100-SXM").data


def test_it_verifies_against_pytorch(analysed):
    assert analysed["verification"]["status"] == "passed", analysed["verification"]


def test_the_output_is_written_once_per_distinct_value(analysed):
    (rep,) = analysed["repeated_outputs"]
    assert rep["copies"] == 4
    assert rep["bytes"] == 2 * 4 * 6 * 6 * 4
    assert rep["once_bytes"] == 2 * 6 * 6 * 4
    assert analysed["bytes"]["fused"] == 96 + 288
    assert analysed["bytes"]["cache_aware"] == 96 + 288


def test_unfused_writes_every_copy(analysed):
    # the last operation alone writes the 1,152 B output, beside its reads
    assert analysed["bytes"]["unfused"] > 96 + 1_152


def test_the_report_says_so_in_one_line():
    report = solar.analyze_file(os.path.join(MODELS, "zeros_masked_fill.py"), hw="H100-SXM")
    lines = [line for line in report.summary().splitlines() if "repeated values" in line]
    assert lines == [
        "  repeated values: output 'where' holds 4 copies of each value (a broadcast); fused and "
        'cache-aware write 288 B once, not 1.152 kB (docs/fidelities.md, "Repeated values")'
    ]
