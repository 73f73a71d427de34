"""Attention in bf16 bounds its second product at the bf16 tensor rate: the attention weights
are stored in the query's dtype before P V, as FlashAttention does, so P V is a bf16 x bf16
contraction (docs/precision.md), not an f32 one at the vector rate, which would put the fused
bound above what fused attention kernels run at."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from solar import torch as solar_torch  # noqa: E402


def attention(q, k, v):
    return torch.nn.functional.scaled_dot_product_attention(q, k, v)


@pytest.mark.parametrize(("dtype", "precision"), [("bfloat16", "bf16 tensor"), ("float32", None)])
def test_pv_runs_at_the_inputs_precision(dtype, precision):
    dt = getattr(torch, dtype)
    q, k, v = (torch.randn(2, 4, 64, 32, dtype=dt) for _ in range(3))
    report = solar_torch.analyze(attention, (q, k, v))
    assert report.verification["status"] == "passed", report.summary()
    nodes = {n["name"]: n for n in report.data["nodes"]}
    (pv,) = [n for name, n in nodes.items() if name.endswith("_pv")]
    (qk,) = [n for name, n in nodes.items() if name.endswith("_qk")]
    # batch 2 x 4 heads, 64 queries x 64 keys, head size 32: 2 * 4 * 64 * 64 * 32 = 1,048,576
    assert pv["macs"] == qk["macs"] == 2 * 4 * 64 * 64 * 32
    # bf16: both products on the bf16 tensor cores; f32 (PyTorch's default, no TF32): both at
    # the fp32 vector rate, as before.
    assert pv["precision"] == qk["precision"] == (precision or "fp32 vector")
