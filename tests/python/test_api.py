"""The Python API: parse / format_ir / check / run, errors, and zero-copy data exchange.

Zero copy is verified two ways. By addresses: ``solar._input_addresses`` imports the arrays
exactly as ``solar.run`` does and returns the address the executor will read each one from, which
must be the numpy array's own ``ctypes.data``; and the returned arrays must not own their data
(``flags.owndata`` is false) but be views of the executor's buffer. By peak memory, in a fresh
process: running ``y = 2 * x`` on a 100 MB ``x`` may raise the peak resident size by one 100 MB
buffer (``y``) only; a copy of the input or of the output would add another.
"""

from __future__ import annotations

import gc
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import solar

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

GEMM = (Path(__file__).resolve().parents[1] / "fixtures" / "gemm.ir").read_text()  # C = A @ B

A = np.arange(6, dtype=np.float32).reshape(2, 3)
B = np.array([[1, 0], [0, 1], [1, 1]], dtype=np.float32)
C = np.array([[2, 3], [8, 9]], dtype=np.float32)  # A @ B, by hand


def test_version():
    assert re.fullmatch(r"\d+\.\d+\.\d+", solar.__version__)


def test_parse_text_path_and_program():
    from_text = solar.parse(GEMM)
    from_path = solar.parse(EXAMPLES / "gemm.ir")
    assert isinstance(from_text, solar.Program)
    assert solar.parse(from_text) is from_text
    assert from_path.file.endswith("gemm.ir")
    assert solar.parse(str(EXAMPLES / "gemm.ir")) == from_path
    assert ("A", "input", "f32") in from_text.tensors
    assert ("C", "output", "f32") in from_text.tensors
    with pytest.raises(TypeError):
        solar.parse(42)


def test_format_is_canonical_and_round_trips():
    messy = GEMM.replace("size K = 3", "size   K=3").replace("\n\n", "\n\n\n")
    text = solar.format_ir(messy)
    assert text == solar.format_ir(text)
    assert solar.parse(text) == solar.parse(messy)
    assert solar.parse(text) != solar.parse(GEMM.replace("+=", "max="))
    assert str(solar.parse(messy)) == text


def test_check_returns_every_size():
    sizes = solar.check(EXAMPLES / "conv2d.ir")
    # Derived sizes, by hand: OH = (11 + 2 - 2*2 - 1) / 2 + 1 = 5, OW = (10 + 2 - 4 - 1) / 2 + 1 = 4
    assert sizes["OH"] == 5 and sizes["OW"] == 4 and sizes["CG"] == 2
    sizes = solar.check(EXAMPLES / "conv2d.ir", sizes={"H": 21})
    assert sizes["H"] == 21 and sizes["OH"] == 10


def test_run_computes_outputs():
    for fast_paths in (True, False):
        out = solar.run(GEMM, {"A": A, "B": B}, fast_paths=fast_paths)
        assert list(out) == ["C"]
        assert out["C"].dtype == np.float32
        np.testing.assert_array_equal(out["C"], C)


def test_run_accepts_sizes_and_exact_conversions():
    a = np.ones((4, 3))  # float64 holding float32 values: converted
    out = solar.run(GEMM, {"A": a, "B": B.tolist()}, sizes={"M": 4})
    np.testing.assert_array_equal(out["C"], np.tile([[2, 2]], (4, 1)))


def test_scalars_go_in_and_come_out_as_0d_arrays():
    program = "input s : f32[]\ninput v : f32[3]\noutput t : f32[]\n\n" + (
        "kernel total {\n  for i in 0..3:\n    t[] += v[i] * s[]\n}\n"
    )
    out = solar.run(program, {"s": np.float32(2), "v": np.array([1, 2, 3], np.float32)})
    assert out["t"].shape == () and out["t"] == 12


# ---------------------------------------------------------------------------------------------
# Errors


def test_parse_error_is_an_irerror_with_location():
    bad = GEMM.replace("B[k, j]", "Q[k, j]")
    with pytest.raises(solar.IRError) as info:
        solar.parse(bad)
    assert isinstance(info.value, ValueError)
    message = str(info.value)
    assert re.match(r"<input>:12:\d+: error: .*Q", message), message
    assert "\n" not in message
    assert info.value.diagnostics == [message]


def test_file_errors_name_the_file(tmp_path):
    path = tmp_path / "bad.ir"
    path.write_text(GEMM.replace("A[i, k] *", "A[i, k] * *"))
    with pytest.raises(solar.IRError, match=re.escape(str(path)) + r":12:\d+: error: "):
        solar.parse(path)
    with pytest.raises(solar.IRError, match="missing.ir"):
        solar.parse(tmp_path / "missing.ir")


def test_check_lists_every_problem():
    bad = GEMM.replace("C[i, j] += A[i, k]", "C[i, j] += A[i, k + 1] * A[i + 5, k]")
    with pytest.raises(solar.IRError) as info:
        solar.check(bad)
    assert len(info.value.diagnostics) >= 2, info.value.diagnostics
    for line in info.value.diagnostics:
        assert re.match(r"<input>:12:\d+: error: ", line), line
    assert str(info.value) == info.value.diagnostics[0]


@pytest.mark.parametrize(
    ("inputs", "kwargs", "pattern"),
    [
        ({"A": A}, {}, "B"),  # missing input
        ({"A": A, "B": B, "Z": B}, {}, "Z"),  # not an input
        ({"A": A.reshape(3, 2), "B": B}, {}, "A"),  # wrong shape
        ({"A": A + 0.1, "B": B.astype(np.float64) + 0.1}, {}, "not exactly representable"),
        ({"A": A.astype(np.int16), "B": B}, {}, "numpy dtype"),
        ({"A": A, "B": B}, {"memory_limit": 16}, "memory limit"),
        ({"A": A, "B": B}, {"sizes": {"Q": 3}}, "Q"),
    ],
    ids=["missing", "extra", "shape", "inexact", "dtype", "memory", "size"],
)
def test_run_errors_are_irerrors(inputs, kwargs, pattern):
    with pytest.raises(solar.IRError, match=pattern) as info:
        solar.run(GEMM, inputs, **kwargs)
    assert "\n" not in str(info.value)


# ---------------------------------------------------------------------------------------------
# Zero copy


def test_inputs_are_not_copied():
    program = solar.parse(EXAMPLES / "embedding.ir")
    ids = np.zeros((2, 5), dtype=np.int64)
    table = np.ones((20, 8), dtype=np.float32)
    addresses = solar._input_addresses(program, {"ids": ids, "table": table})
    assert addresses == {"ids": ids.ctypes.data, "table": table.ctypes.data}
    # Read-only arrays are lent too (the executor never writes inputs).
    table.flags.writeable = False
    assert solar._input_addresses(program, {"ids": ids, "table": table})["table"] == (
        table.ctypes.data
    )


def test_converted_or_strided_inputs_are_copied():
    # The check above could pass by accident only if addresses were always equal: here they
    # must differ, because a conversion or a contiguous copy is needed.
    program = solar.parse(EXAMPLES / "embedding.ir")
    ids32 = np.zeros((2, 5), dtype=np.int32)  # declared i64: converted
    strided = np.ones((8, 20), dtype=np.float32).T  # not C-contiguous: copied
    addresses = solar._input_addresses(program, {"ids": ids32, "table": strided})
    assert addresses["ids"] != ids32.ctypes.data
    assert addresses["table"] != strided.ctypes.data


def test_outputs_are_views_of_the_executor_buffer():
    out = solar.run(GEMM, {"A": A, "B": B})
    c = out["C"]
    assert not c.flags.owndata
    assert c.base is not None and not isinstance(c.base, np.ndarray)
    assert c.flags.writeable
    del out
    gc.collect()
    np.testing.assert_array_equal(c, C)  # the buffer lives as long as the array


def test_no_copies_by_peak_memory():
    # Peak RSS (VmHWM) of a fresh process, reset just before the run with /proc/self/clear_refs.
    # getrusage's ru_maxrss is not usable: it survives exec, so a child of a big pytest process
    # (torch loaded) starts with the parent's peak and shows no growth at all.
    script = textwrap.dedent(
        """
        import numpy as np
        import solar

        def peak_kib():
            with open("/proc/self/status") as f:
                return next(int(l.split()[1]) for l in f if l.startswith("VmHWM:"))

        n = 25_000_000  # 100 MB of float32
        program = solar.parse(
            f"size N = {n}\\ninput x : f32[N]\\noutput y : f32[N]\\n\\n"
            "kernel double {\\n  for i in 0..N:\\n    y[i] = x[i] * 2.0\\n}\\n"
        )
        x = np.ones(n, dtype=np.float32)
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset the peak to the current RSS
        before = peak_kib()
        y = solar.run(program, {"x": x})["y"]
        after = peak_kib()
        assert y[0] == 2.0 and y[-1] == 2.0
        print((after - before) * 1024 / (4 * n))  # growth, in units of one 100 MB buffer
        """
    )
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    growth = float(r.stdout)
    assert 0.9 < growth < 1.5, f"peak memory grew by {growth:.2f} buffers of 100 MB (1 expected)"


def test_bf16_exchange():
    program = solar.parse(EXAMPLES / "bf16_matmul.ir")
    a = np.ones((8, 64), dtype=np.float32)
    b = np.full((64, 8), 0.5, dtype=np.float32)
    bits_a = (a.view(np.uint32) >> 16).astype(np.uint16)  # exact: these are bf16 values
    bits_b = (b.view(np.uint32) >> 16).astype(np.uint16)
    from_bits = solar.run(program, {"A": bits_a, "B": bits_b})["C"]
    from_floats = solar.run(program, {"A": a, "B": b})["C"]
    try:
        import ml_dtypes
    except ImportError:
        assert from_bits.dtype == np.uint16
    else:
        assert from_bits.dtype == ml_dtypes.bfloat16
        from_bits = from_bits.view(np.uint16)
        from_floats = from_floats.view(np.uint16)
    np.testing.assert_array_equal(from_bits, from_floats)
    np.testing.assert_array_equal(from_bits, np.full((8, 8), 0x4200, dtype=np.uint16))  # 32.0


def test_random_inputs_are_seeded():
    program = solar.parse(EXAMPLES / "embedding.ir")
    first = solar.random_inputs(program, seed=3)
    again = solar.random_inputs(program, seed=3)
    other = solar.random_inputs(program, seed=4)
    assert sorted(first) == ["ids", "table"]
    for name in first:
        np.testing.assert_array_equal(first[name], again[name])
    assert not np.array_equal(first["table"], other["table"])
    assert first["ids"].dtype == np.int64
    assert first["ids"].min() >= 0 and first["ids"].max() < 20  # indices of the 20-row table
    solar.run(program, first)


def test_rule_log_records_the_rules_a_lowering_fires(tmp_path, monkeypatch):
    # scripts/test.sh sets SOLAR_RULE_LOG for pytest too: lowerings through the bindings append
    # the rules they fired (tests/frontend/test_rule_coverage.cpp reads the log).
    from solar import _core

    capture = (Path(__file__).resolve().parents[1] / "frontend/data/linear_relu.json").read_text()
    log = tmp_path / "rules.txt"
    monkeypatch.setenv("SOLAR_RULE_LOG", str(log))
    _core.lower_capture_detailed(capture)
    # linear_relu.json: three nodes, aten.t, aten.addmm, aten.relu; the names sorted.
    assert log.read_text() == "aten.addmm.default\naten.relu.default\naten.t.default\n"
    monkeypatch.setenv("SOLAR_RULE_LOG", "")
    log.unlink()
    _core.lower_capture_detailed(capture)
    assert not log.exists()


def test_plurals_follow_the_one_rule_of_the_core():
    from solar import _core
    from solar.verify.per_op import per_op_verification

    # util/text.h's counted: the noun alone for 1, with an s otherwise (0 included)
    assert _core.counted(1, "node") == "1 node"
    assert _core.counted(0, "node") == "0 nodes"
    assert _core.counted(3, "node") == "3 nodes"
    # the per-op verification's detail: 1 configuration of 1 node, then 2 of 1 + 2 = 3 nodes
    one = {"result": "passed", "nodes": 1, "size": "full"}
    two = {"result": "passed", "nodes": 2, "size": "reduced 4x"}
    assert "(1 node) run alone" in per_op_verification([one], "PyTorch").detail
    detail = per_op_verification([one, two], "PyTorch").detail
    assert "2 of 2 distinct op configuration(s) (3 nodes) run alone" in detail
    assert "1 at reduced size" in detail


def test_a_per_op_verification_that_fails_names_each_failing_op_configuration():
    from solar.verify.per_op import per_op_verification

    ok = {"op": "aten.mm.default", "result": "passed", "nodes": 1, "size": "real size"}
    wrong = {
        "op": "aten.index.Tensor",
        "result": "failed",
        "nodes": 2,
        "size": "reduced (exact, sizes / 8)",
        "outputs": [
            {"name": "i0", "dtype": "f32", "shape": [4], "passed": True},
            {
                "name": "index",
                "dtype": "bf16",
                "shape": [8, 64],
                "passed": False,
                "max_abs_err": 0.5,
                "max_rel_err": 0.25,
                "rtol": 0.02,
                "atol": 0.01,
            },
        ],
    }
    skipped = {"op": "aten.sort.default", "result": "not_verified", "nodes": 1, "size": None}
    skipped["reason"] = "real size: over the verification budget"
    v = per_op_verification([ok, wrong, skipped], "PyTorch")
    assert v.status == "failed"
    assert v.detail == (
        "2 of 3 distinct op configuration(s) (4 nodes) run alone and compared with PyTorch, 1 at "
        "reduced size; 1 failed: aten.index.Tensor at reduced (exact, sizes / 8): index "
        "bf16[8, 64] max_abs_err=0.5 max_rel_err=0.25 (rtol=0.02 atol=0.01); 1 NOT verified: "
        "aten.sort.default (real size: over the verification budget)"
    )
    # more than three of a kind: the first three and how many more
    many = [dict(skipped, op=f"aten.op{i}.default") for i in range(5)]
    assert per_op_verification(many, "PyTorch").detail.endswith(
        "aten.op2.default (real size: over the verification budget); and 2 more"
    )
