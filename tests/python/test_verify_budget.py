"""The verification's time budget (--verify-budget-s) is honoured by the estimate of SOLAR's
executor time (``executor_seconds``), never by a timed run: the whole program is
verified only when its estimate fits, and a one-op check at full size only when its estimate
fits (else that size is refused, with its reason, and the op is listed as not verified). A 3-D
convolution whose depth (16) would shrink below its kernel is checked at a reduced size, each
size at least 16 (the ``floor`` map), not at its full size."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from solar import torch as solar_torch  # noqa: E402
from solar.torch._per_op import _candidates  # noqa: E402
from solar.verify.budget import (  # noqa: E402
    EXECUTOR_BYTES_PER_S,
    EXECUTOR_MACS_PER_S,
    executor_seconds,
    over_time_budget,
)

MATMUL_IR = """input a : f32[64, 32]
input b : f32[32, 16]
output c : f32[64, 16]
kernel mm {
  for i in 0..64, j in 0..16, k in 0..32:
    c[i, j] += a[i, k] * b[k, j]
}
"""


def test_the_estimate_adds_each_kind_of_work_at_its_rate():
    # 64 * 16 * 32 = 32768 MACs, no other op; bytes read a + b = (64 * 32 + 32 * 16) * 4 =
    # 10240, written c = 64 * 16 * 4 = 4096. At 1e8 MAC/s and 5e8 B/s:
    # 32768 / 1e8 + (10240 + 4096) / 5e8 = 3.2768e-4 + 2.8672e-5 = 3.56352e-4 s.
    assert EXECUTOR_MACS_PER_S == 1e8
    assert EXECUTOR_BYTES_PER_S == 5e8
    assert executor_seconds(MATMUL_IR) == pytest.approx(3.56352e-4, rel=1e-12)
    assert over_time_budget(MATMUL_IR, 3.6e-4) is None
    assert over_time_budget(MATMUL_IR, 3.5e-4) == (
        "about 0.000356 s in SOLAR's executor, over the verification budget of 0.00035 s "
        "(--verify-budget-s)"
    )


@pytest.mark.parametrize(("budget_s", "mode"), [(3.6e-4, "whole_program"), (3.5e-4, "per_op")])
def test_the_whole_program_is_verified_only_when_its_estimate_fits(budget_s, mode):
    # The same matmul captured from PyTorch: its estimate is 3.56352e-4 s (above), so a budget
    # of 3.6e-4 s takes the whole program and one of 3.5e-4 s does not.
    report = solar_torch.analyze(
        lambda a, b: a @ b, (torch.randn(64, 32), torch.randn(32, 16)), verify_budget_s=budget_s
    )
    v = report.verification
    assert v["mode"] == mode, v["why"]
    if mode == "whole_program":
        assert v["status"] == "passed"
        return
    assert "about 0.000356 s in SOLAR's executor" in v["why"]
    # Per op, the matmul's tensors (14336 B) are under the 1 MiB a reduced check aims at, so
    # its only size is the real one, whose estimate is the same 3.56352e-4 s: over the budget,
    # so it is listed as not verified, with the reason, and the verification is partial.
    assert v["status"] == "partial"
    (check,) = v["ops"]
    assert check["result"] == "not_verified"
    assert check["reason"] == "real size: " + over_time_budget(report.ir, budget_s)


@pytest.mark.parametrize(("budget_s", "status"), [(7e-6, "passed"), (6e-6, "partial")])
def test_a_full_size_op_check_over_the_budget_is_refused_and_said(budget_s, status):
    # a[8, 8] @ b[8, 8]: no size reaches 16, so nothing shrinks and the only size is the real
    # one: 8 * 8 * 8 = 512 MACs and (64 + 64) * 4 = 512 B read, 64 * 4 = 256 B written:
    # 512 / 1e8 + 768 / 5e8 = 5.12e-6 + 1.536e-6 = 6.656e-6 s, under 7e-6 s, over 6e-6 s.
    report = solar_torch.analyze(
        lambda a, b: a @ b,
        (torch.randn(8, 8), torch.randn(8, 8)),
        verify_mode="per_op",
        verify_budget_s=budget_s,
    )
    v = report.verification
    assert v["status"] == status
    (check,) = v["ops"]
    if status == "passed":
        assert check["size"] == "real size"
    else:
        assert check["result"] == "not_verified"
        assert check["reason"] == (
            "real size: about 6.66e-06 s in SOLAR's executor, over the verification budget "
            "of 6e-06 s (--verify-budget-s)"
        )
        assert "1 NOT verified" in v["detail"]


def test_a_3d_convolution_of_depth_16_shrinks_to_sizes_of_at_least_16():
    # KernelBench level2/90's convolution: Conv3d(8, 64, 3) of x[128, 8, 16, 64, 64], out
    # [128, 64, 14, 62, 62]. The sizes that may shrink (>= 16): 128, 16, 64, 62. The floor map
    # takes each to max(16, S // d): at d = 8, 128 -> 16, 16 -> 16, 64 -> 16, 62 -> 16; at
    # d = 16 the same map, so d stays 8. Reduced: x[16, 8, 16, 16, 16], weight [16, 8, 3, 3, 3],
    # bias [16], out [16, 16, 14, 16, 16] by the map (PyTorch's is [16, 16, 14, 14, 14]).
    shapes = {
        "x": [128, 8, 16, 64, 64],
        "w": [64, 8, 3, 3, 3],
        "b": [64],
        "y": [128, 64, 14, 62, 62],
    }
    node = {
        "name": "conv",
        "op": "aten.convolution.default",
        "args": {
            "input": {"tensor": "x"},
            "weight": {"tensor": "w"},
            "bias": {"tensor": "b"},
            "stride": [1, 1, 1],
            "padding": [0, 0, 0],
            "dilation": [1, 1, 1],
            "transposed": False,
            "output_padding": [0, 0, 0],
            "groups": 1,
        },
        "outputs": ["y"],
    }
    found = dict(_candidates(node, shapes, dict.fromkeys(shapes, "f32"), 2048 * 10**6))
    assert found["reduced (floor, sizes / 8, at least 16)"] == {128: 16, 16: 16, 64: 16, 62: 16}
