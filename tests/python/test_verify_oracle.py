"""Verification's one oracle (include/solar/exec/verify.h): the Python pipeline's compare_output
and `solar ir verify` give the same comparison, with one tolerance table. Counts by hand."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from solar import _core
from solar.verify.whole import TOLERANCES, compare_output

PROGRAM = """input x : f32[2, 2]
output y : f32[2, 2]
kernel double {
  for i in 0..2, j in 0..2:
    y[i, j] = x[i, j] * 2.0
}
"""


def test_the_tolerance_table_is_the_cores():
    assert TOLERANCES["f32"] == (1e-4, 1e-5) == _core.tolerance("f32")
    assert TOLERANCES["bf16"] == (2e-2, 1e-2)
    assert _core.tolerance("i64") == (0.0, 0.0)


def test_compare_output_by_hand():
    # expected [1, 2, 4]: scale 4; the element 2 may differ by 1e-5 * 4 + 1e-4 * 2 = 2.4e-4.
    expected = np.array([1, 2, 4], dtype=np.float32)
    near = compare_output("y", "f32", np.float32([1, 2 + 2**-13, 4]), expected)
    assert near["passed"] and near["max_abs_err"] == 2**-13 and near["max_rel_err"] == 2**-14
    far = compare_output("y", "f32", np.float32([1, 2 + 2**-12, 4]), expected)
    assert not far["passed"]
    shape = compare_output("y", "f32", np.zeros(3, np.float32), np.zeros((1, 3)))
    assert shape["error"] == "shape [3] != [1, 3]" and shape["max_abs_err"] is None
    scalar = compare_output("s", "f32", np.float32(3.0), np.array(3.0))
    assert scalar["passed"] and scalar["shape"] == []


def test_bf16_as_bits_or_ml_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    # bf16 1.0 is 0x3F80, 2.0 0x4000; 1.0078125 (0x3F81) is off by 2^-7 = 0.0078125, within
    # 1e-2 * max(1, 2) + 2e-2 * 1 = 0.04
    got = np.array([0x3F81, 0x4000], dtype=np.uint16)
    expected = np.array([1.0, 2.0], dtype=ml_dtypes.bfloat16)
    out = compare_output("y", "bf16", got, expected)
    assert out["passed"] and out["max_abs_err"] == 2**-7


def test_solar_ir_verify_exits_0_when_equal_and_3_when_an_output_differs(tmp_path):
    (tmp_path / "p.ir").write_text(PROGRAM)
    x = np.array([[1, 2], [3, 4]], dtype=np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    np.savez(tmp_path / "good.npz", y=2 * x)
    np.savez(tmp_path / "bad.npz", y=2 * x + np.float32([[0, 0], [0, 1]]))  # 8 expected as 9
    run = [sys.executable, "-m", "solar", "ir", "verify", str(tmp_path / "p.ir")]
    run += ["--inputs", str(tmp_path / "in.npz"), "--expected"]
    good = subprocess.run(run + [str(tmp_path / "good.npz")], capture_output=True, text=True)
    assert good.returncode == 0, good.stderr
    assert "passed: 1 of 1 outputs within tolerance" in good.stdout
    bad = subprocess.run(run + [str(tmp_path / "bad.npz")], capture_output=True, text=True)
    assert bad.returncode == 3
    # |8 - 9| = 1, relative 1 / 9 = 0.111
    assert "y f32[2, 2]: max abs err 1, max rel err 0.111" in bad.stdout
    assert "FAILED" in bad.stdout and bad.stderr == ""


def test_an_undefined_error_is_null_with_a_reason_and_json_compliant():
    import json

    # i64 indices [0, 28] against [0, 0] (a sort's indices among ties, as the per-op check of
    # transformers' Mixtral met them): absolute error |28 - 0| = 28; the relative one divides
    # by max(|0|, scale = max(1, 0) = 1) (exact dtypes: the scale): 28 / 1 = 28, a number.
    check = compare_output("i", "i64", np.array([0, 28]), np.array([0, 0]))
    assert check["max_abs_err"] == 28.0
    assert check["max_rel_err"] == 28.0
    assert "err_reason" not in check
    # f32 expected [0, 1], got [2^-20, 1]: relative to (atol / rtol) * scale = (1e-5 / 1e-4) * 1
    # = 0.1 at the 0: 2^-20 / 0.1 = 9.5367e-6 (not 2^-20 / 2.2e-308 ~ 4e301); passes.
    small = compare_output("y", "f32", np.float32([2**-20, 1]), np.float32([0, 1]))
    assert small["passed"] and small["max_rel_err"] == pytest.approx(2**-20 / 0.1, rel=1e-12)
    # a NaN against 1.0: neither error is a number
    nan = compare_output("y", "f32", np.array([np.nan], np.float32), np.ones(1, np.float32))
    assert nan["max_abs_err"] is None and nan["max_rel_err"] is None
    assert nan["err_reason"] == "errors undefined: a NaN where the other side has a number"
    json.dumps([check, nan], allow_nan=False)  # what the reports write: no NaN, no infinity
