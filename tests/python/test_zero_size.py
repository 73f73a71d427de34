"""Zero-size dimensions (issue 44): legal in PyTorch, so every op family ends in a verified
result with its counts right, or, where PyTorch itself refuses the program, in one line naming
the op and the user's line. The models are in tests/python/models/zero_size/.

Counts by hand, on H100-SXM (DRAM 3.35e12 B/s); f32 is 4 bytes. A tensor with a dimension of
size 0 has no element: reading or writing it moves 0 bytes. A reduction over an empty range
still writes its whole output (each element the identity: mm of [4, 0] by [0, 5] is a [4, 5]
tensor of zeros), so that output costs its bytes; nothing else does.
"""

from __future__ import annotations

import json
import os

import pytest

torch = pytest.importorskip("torch")

import solar  # noqa: E402
from solar import cli  # noqa: E402

MODELS = os.path.join(os.path.dirname(__file__), "models", "zero_size")
FIDELITIES = ("unfused", "fused", "cache_aware")


def path(name: str) -> str:
    return os.path.join(MODELS, f"{name}.py")


# name -> DRAM bytes by hand, {fidelity: bytes} or one figure for all three; other ops.
EXPECTED = {
    # relu(x * 2 + b) over x f32[0, 8]: no element anywhere; b is read only by points of an
    # empty domain: 0 B, 0 ops.
    "elementwise": (0, 0),
    # [4, 0] @ [0, 5]: reads 0 elements of each, writes 4 * 5 zeros * 4 B = 80 B; 0 MACs.
    "matmul_empty_k": (80, 0),
    # nn.Linear(16, 8) over x f32[0, 16]: the [0, 8] output is empty and no point reads the
    # weight or the bias: 0 B.
    "linear_batch0": (0, 0),
    # bmm [0, 3, 5] x [0, 5, 4]: a [0, 3, 4] output, 0 B; bmm [2, 3, 0] x [2, 0, 4]: a
    # [2, 3, 4] tensor of zeros, 2 * 3 * 4 * 4 B = 96 B.
    "bmm_empty": (96, 0),
    # x f32[4, 0]: sum over dim 1 writes 4 zeros = 16 B; mean writes 4 NaNs = 16 B (its sum
    # stays on chip in the op, and fused): 32 B. The mean's 4 divisions are its other ops.
    "reduce_empty_dim": (32, 4),
    # softmax and layer_norm over x f32[0, 8]: 0 B (the norm's weight and bias are read only by
    # points of empty domains).
    "norm_batch0": (0, 0),
    # cumsum along a dimension of 0 ([16, 0] along 1): 0 B; issue 44's reproducer.
    "cumsum_along_empty": (0, 0),
    # cumprod along 16 across an empty dimension ([0, 16] along 1): 0 B.
    "cumprod_across_empty": (0, 0),
    # conv2d(3 -> 4, 3x3) over a batch of 0 images: 0 B, 0 MACs.
    "conv2d_batch0": (0, 0),
    # cat([x f32[2, 3], e f32[0, 3]]) * 2: fused, read x 24 B and write the product 24 B = 48 B;
    # unfused, the concat reads 24 B and writes 24 B, the multiply the same: 96 B. 6 multiplies.
    "cat_empty_operand": ({"unfused": 96, "fused": 48, "cache_aware": 48}, 6),
    # embedding, gather and index_select with 0 indices: every output is empty, no row is
    # read: 0 B.
    "index_empty": (0, 0),
    # sdpa with 0 queries: a [1, 2, 0, 8] output; no query reads a key or a value: 0 B.
    "sdpa_no_queries": (0, 0),
    # einsum over x f32[2, 0, 8] with w [5, 8]: a [2, 0, 5] output, no point reads w: 0 B
    # (a view of a base with an empty dimension divided by its 0 stride: a SIGFPE).
    "einsum_view_of_empty": (0, 0),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_op_family_verifies_with_its_bytes_by_hand(name):
    data = solar.analyze_file(path(name), hw="H100-SXM").data
    assert data["verification"]["status"] == "passed", data["verification"]
    expected, other_ops = EXPECTED[name]
    if not isinstance(expected, dict):
        expected = dict.fromkeys(FIDELITIES, expected)
    assert data["bytes"] == expected
    assert data["totals"]["macs"] == 0
    assert data["totals"]["other_ops"] == other_ops
    # An intermediate of zero bytes is no fusion opportunity ("saves 0 B" was listed).
    for fusion in data["insights"]["fusion_opportunities"]:
        assert fusion["bytes_saved"] > 0, fusion


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_command_writes_the_table_and_the_json(name, tmp_path, capsys):
    out = tmp_path / "out.json"
    assert cli.main(["analyze", path(name), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "\n  passed: whole program" in printed
    data = json.loads(out.read_text())
    assert data["verification"]["status"] == "passed"


# The models whose SOL is 0 at every fidelity.
EMPTY = sorted(name for name, (b, _) in EXPECTED.items() if b == 0)


@pytest.mark.parametrize("name", EMPTY)
def test_the_headroom_of_an_empty_program_is_no_ratio(name, capsys):
    # measured / SOL with a SOL of 0 bounds nothing: "- (SOL 0)", never "0x".
    assert cli.main(["analyze", path(name), "--measured-ms", "0.01"]) == 0
    printed = capsys.readouterr().out
    assert "unfused - (SOL 0) fused - (SOL 0) cache - (SOL 0)" in printed, printed
    assert " 0x" not in printed


def test_amax_over_an_empty_dimension_is_the_programs_own_error(capsys):
    # PyTorch refuses amax over a dimension of size 0 (no identity): one line naming the op and
    # the model's line, exit code 1, as for any model that fails on its inputs.
    assert cli.main(["analyze", path("amax_empty_dim")]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert "reducing over zero-size dimension" in err
    assert "amax at amax_empty_dim.py:9 in forward" in err
    assert "internal error" not in err
