"""Lowering rules against PyTorch: small modules and functions, one or more per operator family
and per attribute that changes the work (docs/lowering.md), each captured with torch.export,
lowered, run by SOLAR's executor and compared with PyTorch (solar.torch.analyze)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402, N812

from solar import stages  # noqa: E402
from solar import torch as solar_torch  # noqa: E402


class Fn(nn.Module):
    """A function of tensors as a module."""

    def __init__(self, f) -> None:
        super().__init__()
        self.f = f

    def forward(self, *args):
        return self.f(*args)


class Recurrent(nn.Module):
    """An RNN module's output sequence and final state(s)."""

    def __init__(self, rnn: nn.Module) -> None:
        super().__init__()
        self.rnn = rnn

    def forward(self, x):
        out, state = self.rnn(x)
        return (out, *state) if isinstance(state, tuple) else (out, state)


class Cells(nn.Module):
    """One step of an LSTM cell and a GRU cell."""

    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTMCell(4, 5)
        self.gru = nn.GRUCell(4, 5)

    def forward(self, x):
        return (*self.lstm(x), self.gru(x))


class Convs(nn.Module):
    """Grouped strided 3-d, transposed 2-d with output_padding, dilated padded 1-d."""

    def __init__(self) -> None:
        super().__init__()
        self.c3 = nn.Conv3d(4, 6, (2, 3, 3), stride=(1, 2, 1), groups=2)
        self.t2 = nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1)
        self.c1 = nn.Conv1d(3, 4, 3, padding=2, dilation=2)

    def forward(self, a, b, c):
        return self.c3(a), self.t2(b), self.c1(c)


def assign_slices(x, v):
    """Assignment into a clone: exports as copy, slice_scatter and select_scatter patterns."""
    y = x.clone()
    y[:, 1] = v
    y[0, 1:3] = 0.0
    y[1:, ::2] = y[1:, ::2] * 2
    return y


def assign_apart(y, j, i, v):
    """y[j, :, i] = v on a clone: index_put with indices around a whole dim."""
    y = y.clone()
    y[j, :, i] = v
    return y


def r(*shape: int) -> torch.Tensor:
    return torch.randn(*shape)


def idx(*values) -> torch.Tensor:
    return torch.tensor(values)


# Each case: name -> (module or function, inputs), built lazily after torch.manual_seed(0).
CASES = {
    # activations and elementwise
    "activations": lambda: (
        lambda x: (
            F.elu(x, alpha=0.5),
            F.selu(x),
            F.mish(x) + F.softplus(x, beta=2.0, threshold=1.0),
            F.hardswish(x * 4) + F.hardsigmoid(x * 4) + F.relu6(x * 4),
        ),
        (r(3, 4),),
    ),
    "inplace_chain": lambda: (
        lambda x: torch.relu_(x * 2).add_(1.0).mul_(x).div_(3.0).sigmoid_().tanh_(),
        (r(2, 3),),
    ),
    "division_rounding_pow": lambda: (
        lambda x, y: (
            torch.div(x, y, rounding_mode="trunc") + torch.div(x, y, rounding_mode="floor"),
            torch.round(x * 3) + torch.trunc(x * 3) + torch.fmod(x, 0.4) + torch.remainder(x, 0.4),
            torch.pow(x.abs(), y) + torch.pow(2.0, x) + x**3,
        ),
        (r(2, 3) * 4, r(3)),
    ),
    "compare_select_fill": lambda: (
        lambda x, y, lo, hi: (
            (x == y).float() + (x != 0.5).float() + (x < y).float() + (x >= 0.1).float(),
            torch.clamp(x, lo, hi),
            torch.bitwise_not(x > 0).float() + torch.isinf(x / 0).float(),
            (1 - x).masked_fill(x > 0, -1.0) + torch.tril(x, -1) + torch.triu(x, 1),
            torch.xlogy(x, y.abs()),
            torch.zeros_like(x)
            + torch.ones(2, 3)
            + torch.full((2, 3), 2.5)
            + torch.empty_like(x).fill_(1.0),
        ),
        (r(2, 3), r(3), r(3) - 1, r(2, 1) + 1),
    ),
    "transcendental": lambda: (
        lambda x: (
            torch.atan(x)
            + torch.asin(x.clamp(-0.9, 0.9))
            + torch.acos(x.clamp(-0.9, 0.9))
            + torch.tan(x.clamp(-1, 1))
            + torch.sinh(x)
            + torch.cosh(x)
            + torch.log10(x.abs() + 1)
            + torch.exp2(x)
        ),
        (r(3, 4),),
    ),
    # scans, reductions with indices, norms
    "cumsum_cumprod": lambda: (lambda x: (torch.cumsum(x, dim=1), torch.cumprod(x, 0)), (r(3, 5),)),
    "reductions_with_indices": lambda: (
        lambda x: (
            *torch.max(x, dim=1),
            *torch.min(x, dim=0, keepdim=True),
            torch.argmax(x, dim=1),
            torch.argmin(x),
            torch.max(x),
            torch.min(x),
        ),
        (r(3, 4),),
    ),
    "prod": lambda: (
        lambda x, i: (
            torch.prod(x, dim=1),
            torch.prod(x, dim=0, keepdim=True),
            torch.prod(x),
            torch.prod(i, dim=1),  # int32 -> int64, as torch promotes an integer product
        ),
        (r(3, 4) * 0.5 + 1.0, torch.arange(12, dtype=torch.int32).reshape(3, 4) % 5 + 1),
    ),
    "norms_var_logsumexp": lambda: (
        lambda x: (
            torch.norm(x, p=2, dim=1),
            torch.linalg.vector_norm(x, ord=3, dim=(0,)),
            torch.linalg.vector_norm(x, ord=float("inf"), dim=1, keepdim=True),
            torch.linalg.vector_norm(x, ord=1),
            F.normalize(x, dim=1),
            torch.var(x, dim=1) + torch.std(x, dim=1, unbiased=False),
            torch.logsumexp(x, dim=1),
        ),
        (r(3, 4),),
    ),
    "group_norm": lambda: (nn.GroupNorm(2, 4), (r(2, 4, 3, 3),)),
    "instance_norm": lambda: (nn.InstanceNorm2d(3, affine=True), (r(2, 3, 4, 4),)),
    "batch_norm_train": lambda: (nn.BatchNorm2d(3), (r(2, 3, 2, 2),)),
    "batch_norm_eval": lambda: (nn.BatchNorm2d(3).eval(), (r(2, 3, 2, 2),)),
    "dropout_train": lambda: (nn.Dropout(0.3), (r(4, 5),)),
    "losses": lambda: (
        lambda x, t, y: (
            F.cross_entropy(x, t),
            F.nll_loss(x.log_softmax(1), t, reduction="sum"),
            F.smooth_l1_loss(x, y, beta=0.5),
            F.mse_loss(x, y),
        ),
        (r(4, 5), idx(1, 0, 4, 2), r(4, 5)),
    ),
    # indexing and movement
    "flip_roll_unfold_diagonal_repeat": lambda: (
        lambda x: (
            torch.flip(x, [0, 2]),
            torch.roll(x, shifts=(1, -2), dims=(0, 1)),
            torch.roll(x, 3),
            x.unfold(2, 3, 1),
            torch.diagonal(x[0]),
            x.repeat(2, 1, 3),
        ),
        (r(2, 3, 4),),
    ),
    "index_tensor": lambda: (
        lambda x, i, j: (x[i], x[i, j], x[:, j], x[i, :, j]),
        (r(5, 3, 4), idx(4, 0, -1), idx(1, 2, 0)),
    ),
    "gather_scatter_index_select": lambda: (
        lambda x, i, s, k: (
            torch.gather(x, 1, i),
            x.scatter(1, i, s),
            x.scatter_add(1, i, s),
            torch.index_select(x, 1, k),
        ),
        (r(3, 4), idx([0, 3], [1, 1], [2, 0]), r(3, 2), idx(3, 1)),
    ),
    "setitem_on_clone": lambda: (assign_slices, (r(3, 4), r(3))),
    "index_put": lambda: (
        lambda x, i, v, y, j: (
            x.index_put((i,), v),
            x.index_put((i,), v, accumulate=True),
            assign_apart(y, j, i[:2], v[:2, :1]),
        ),
        (r(5, 3), idx(4, 0, 4), r(3, 3), r(2, 3, 5), idx(1, -2)),
    ),
    # pooling and resampling
    "pooling_resampling": lambda: (
        lambda x: (
            F.adaptive_avg_pool2d(x, (2, 3)),
            F.adaptive_avg_pool2d(x, (3, 1)),
            F.interpolate(x, scale_factor=2, mode="nearest"),
            F.interpolate(x, scale_factor=2, mode="bilinear"),
            F.interpolate(x, size=(18, 14), mode="bilinear"),
            F.max_pool2d(x, 3, 2, padding=1, ceil_mode=True),
            F.avg_pool2d(x, 3, 2, padding=1, ceil_mode=True, count_include_pad=False),
            F.avg_pool2d(x, 2, 1, padding=1, count_include_pad=True),
        ),
        (r(1, 2, 6, 7),),
    ),
    # linear resampling by scale factors (the `.vec` form: output_size None, scale_factors
    # given; the output is floor(in * scale) points), both align_corners, up and down, 1-3 dims
    "upsample_scale_factors": lambda: (
        lambda x: (
            F.interpolate(x, scale_factor=1.5, mode="bilinear"),
            F.interpolate(x, scale_factor=1.5, mode="bilinear", align_corners=True),
            F.interpolate(x, scale_factor=0.5, mode="bilinear"),
            F.interpolate(x, scale_factor=(2.5, 1.7), mode="bilinear", align_corners=True),
            F.interpolate(x, scale_factor=(1.7, 0.75), mode="bilinear"),
        ),
        (r(1, 2, 6, 7),),
    ),
    # (export decomposes the 1-d and 3-d linear modes into gathers and arithmetic: these check
    # that decomposition with both align_corners, not the upsample rule)
    "upsample_linear_trilinear": lambda: (
        lambda a, b: (
            F.interpolate(a, scale_factor=1.5, mode="linear"),
            F.interpolate(a, size=4, mode="linear", align_corners=True),
            F.interpolate(b, scale_factor=(2.0, 1.5, 0.5), mode="trilinear", align_corners=True),
        ),
        (r(2, 3, 7), r(1, 2, 3, 4, 6)),
    ),
    # cumsum with an integer dtype of a float input: PyTorch converts (truncates) each element
    # first, then sums (transformers' Mixtral counts its tokens per expert so)
    "cumsum_dtype": lambda: (
        lambda x: (
            torch.cumsum(x * 3.0, 0, dtype=torch.int32),
            torch.cumsum(x, 1, dtype=torch.float64),
        ),
        (r(6, 3),),
    ),
    "view_copy": lambda: (
        lambda x: torch.ops.aten.view_copy.default(x, [4, 6]) * 2.0,
        (r(2, 3, 4),),
    ),
    # convolutions and contractions
    "conv3d_depthwise": lambda: (nn.Conv3d(4, 4, 3, padding=1, groups=4), (r(1, 4, 3, 4, 4),)),
    "convolutions": lambda: (Convs(), (r(1, 4, 3, 5, 5), r(1, 3, 3, 4), r(2, 3, 7))),
    "bilinear": lambda: (nn.Bilinear(3, 4, 5), (r(2, 3), r(2, 4))),
    "contractions": lambda: (
        lambda a, b, c, d, e, v: (
            torch.einsum("...ij,...jk->...ik", a, b),
            torch.baddbmm(c, a, b, beta=0.5, alpha=2.0),
            torch.matmul(d, e),
            torch.matmul(e, v),
        ),
        (r(2, 3, 4), r(2, 4, 5), r(2, 3, 5), r(2, 1, 3, 4), r(3, 4, 5), r(5)),
    ),
    # attention
    "mha_batch_first": lambda: (
        nn.MultiheadAttention(8, 2, batch_first=True),
        (r(2, 3, 8), r(2, 4, 8), r(2, 4, 8)),
    ),
    "sdpa_masks_scale": lambda: (
        lambda q, k, v, m, f: (
            F.scaled_dot_product_attention(q, k, v, attn_mask=m),
            F.scaled_dot_product_attention(q, k, v, attn_mask=f, scale=0.3),
        ),
        (r(1, 2, 3, 4), r(1, 2, 5, 4), r(1, 2, 5, 4), torch.rand(3, 5) > 0.3, r(1, 1, 3, 5)),
    ),
    # multi-query attention without enable_gqa: k and v of one head broadcast over the query's
    # four (Falcon's call); and k, v of rank 3 against rank 4, broadcast over the batch
    "sdpa_multi_query": lambda: (
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v),
        (r(2, 4, 8, 16), r(2, 1, 8, 16), r(2, 1, 8, 16)),
    ),
    "sdpa_multi_query_causal_rank3": lambda: (
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
        (r(2, 4, 8, 16), r(4, 8, 16), r(1, 8, 12)),
    ),
    # grouped-query attention: 6 query heads over 2 key/value heads (enable_gqa), causal with a
    # dropout-free float mask too
    "sdpa_enable_gqa": lambda: (
        lambda q, k, v, m: (
            F.scaled_dot_product_attention(q, k, v, enable_gqa=True),
            F.scaled_dot_product_attention(q, k, v, attn_mask=m, enable_gqa=True),
            F.scaled_dot_product_attention(
                q, k[:, :, :3], v[:, :, :3], is_causal=True, enable_gqa=True
            ),
        ),
        (r(2, 6, 3, 4), r(2, 2, 5, 4), r(2, 2, 5, 4), r(2, 6, 3, 5)),
    ),
    "sdpa_causal": lambda: (
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
        (r(2, 4, 4), r(2, 4, 4), r(2, 4, 3)),
    ),
    # recurrent modules
    "gru_2layer_bidirectional_batch_first": lambda: (
        Recurrent(nn.GRU(3, 4, num_layers=2, bidirectional=True, batch_first=True)),
        (r(2, 2, 3),),
    ),
    "lstm_2layer_bidirectional_batch_first": lambda: (
        Recurrent(nn.LSTM(3, 4, num_layers=2, bidirectional=True, batch_first=True)),
        (r(2, 2, 3),),
    ),
    "rnn_relu_2layer_no_bias": lambda: (
        Recurrent(nn.RNN(3, 4, num_layers=2, nonlinearity="relu", bias=False)),
        (r(2, 2, 3),),
    ),
    "rnn_tanh_bidirectional": lambda: (Recurrent(nn.RNN(3, 4, bidirectional=True)), (r(2, 2, 3),)),
    "lstm_gru_cells": lambda: (Cells(), (r(2, 4),)),
}


def build(name: str):
    torch.manual_seed(0)
    model, inputs = CASES[name]()
    return (model if isinstance(model, nn.Module) else Fn(model)), inputs


@pytest.mark.parametrize("name", sorted(CASES))
def test_lowering_matches_torch(name: str) -> None:
    model, inputs = build(name)
    report = solar_torch.analyze(model, inputs)
    assert report.verification["status"] == "passed", report.summary()


def analyzed(name: str):
    model, inputs = build(name)
    report = solar_torch.analyze(model, inputs)
    assert report.verification["status"] == "passed", report.summary()
    return report


def test_depthwise_conv3d_counts_one_window_per_output():
    # Conv3d(4, 4, 3, padding=1, groups=4) on [1, 4, 3, 4, 4]: the output is [1, 4, 3, 4, 4],
    # 192 points; each reads one input channel's 3*3*3 window: 192 * 27 = 5184 MACs (not
    # 192 * 27 * 4, which a conv ignoring groups would count). The bias adds 192 other ops.
    totals = analyzed("conv3d_depthwise").data["totals"]
    assert totals["macs"] == 5184
    assert totals["other_ops"] == 192


def test_prod_multiplies_once_per_element():
    # The "prod" case: four products over 3 x 4 tensors, each one `*=` kernel over the 12
    # elements: 4 x 12 = 48 other ops, no MACs (a product of one operand is no contraction).
    # Unfused, each reads its input alone: x (f32, 48 B) three times, i (i32, 48 B) once; the
    # outputs: f32[3] 12 B, f32[1, 4] 16 B, f32[] 4 B, i64[3] 24 B.
    #   3 x 48 + 48 + 12 + 16 + 4 + 24 = 248 B; fused: x and i once, 48 + 48 + 56 = 152 B.
    data = analyzed("prod").data
    assert data["totals"]["macs"] == 0 and data["totals"]["other_ops"] == 48
    assert data["bytes"]["unfused"] == 248 and data["bytes"]["fused"] == 152


def test_scans_count_one_operation_per_element():
    # cumsum over dim 1 of [3, 5]: 4 steps of 3 adds = 12; cumprod over dim 0: 2 steps of 5
    # multiplies = 10. A triangular-sum formulation would count 3 * (1+2+3+4+5) = 45 for cumsum.
    totals = analyzed("cumsum_cumprod").data["totals"]
    assert totals["macs"] == 0
    assert totals["other_ops"] == 12 + 10


def test_bilinear_contracts_in_two_stages():
    # nn.Bilinear(3, 4, 5) on batch 2: y[b, o] = sum_ij x1[b, i] W[o, i, j] x2[b, j] + bias[o].
    # First t[b, o, j] = sum_i x1[b, i] W[o, i, j]: 2 * 5 * 4 * 3 = 120 MACs; then
    # y[b, o] = sum_j t[b, o, j] x2[b, j]: 2 * 5 * 4 = 40 MACs; the bias: 2 * 5 = 10 adds.
    totals = analyzed("bilinear").data["totals"]
    assert totals["macs"] == 120 + 40
    assert totals["other_ops"] == 10


def test_dropout_mask_is_elementwise_work():
    # nn.Dropout(0.3) on [4, 5], 20 elements, per element: the flat index i0 * 5 + i1 (2 ops),
    # + 1, * 0.618.., % 1.0, >= p, the select and the scaling by 1 / (1 - p): 8 ops; no MACs.
    totals = analyzed("dropout_train").data["totals"]
    assert totals["macs"] == 0
    assert totals["other_ops"] == 20 * 8


def test_sdpa_dropout_drops_weights_with_the_weyl_mask():
    # Training-mode attention exports SDPA with dropout_p; PyTorch's own run draws a random
    # mask, so the reference here is the math path with the deterministic mask of
    # docs/lowering.md: weight (flat row-major index i) kept iff frac((i + 1) * 0.618..) >= p.
    import numpy as np

    import solar
    from solar.torch.capture import capture

    torch.manual_seed(0)
    q, k, v = r(1, 2, 3, 4), r(1, 2, 5, 4), r(1, 2, 5, 3)
    model = Fn(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, dropout_p=0.25))
    cap = capture(model, (q, k, v))
    ops = [node["op"] for node in cap.document["nodes"]]
    assert ops == ["aten.scaled_dot_product_attention.default"]
    names = [t["name"] for t in cap.document["tensors"] if t["role"] == "input"]
    feed = dict(zip(names, (q.numpy(), k.numpy(), v.numpy()), strict=True))
    got = solar.run(stages.lower_detailed(cap.to_json()).ir, feed)
    w = torch.softmax((q @ k.transpose(-1, -2)).double() / 2.0, dim=-1)  # scale 1/sqrt(4)
    step = (torch.arange(w.numel(), dtype=torch.float64) + 1) * 0.6180339887498949
    keep = ((step - torch.floor(step)) >= 0.25).reshape(w.shape)
    want = torch.where(keep, w / 0.75, 0.0) @ v.double()
    np.testing.assert_allclose(got[cap.document["outputs"][0]], want.numpy(), rtol=1e-5, atol=1e-6)


def test_multi_query_attention_reads_the_shared_keys_once():
    # q [2, 4, 8, 16], k and v [2, 1, 8, 16] (one key/value head for four query heads): every
    # query head contracts with the same keys. MACs: q k^T is 2*4 heads * 8*8 scores * 16 =
    # 8192; the weights times v 2*4 * 8*8 * 16 = 8192: 16384 in all (the same as with four real
    # key heads). Bytes (one operation; the scores stay on chip): q 2*4*8*16*4 B = 4096, k and v
    # 2*1*8*16*4 B = 1024 each (read once, not once per head: 4096 each), the output
    # 2*4*8*16*4 B = 4096: 4096 + 1024 + 1024 + 4096 = 10,240 B, unfused and fused.
    data = analyzed("sdpa_multi_query").data
    assert data["totals"]["macs"] == 16384
    assert data["bytes"]["unfused"] == 10240
    assert data["bytes"]["fused"] == 10240


def test_view_copy_is_a_copy():
    # view_copy of x [2, 3, 4] f32 (24 elements, 96 B) to [4, 6], then * 2.0. Unfused, the
    # view_copy is a copy, as eager runs it: read x 96 B, write the copy 96 B; the multiply reads
    # the copy 96 B and writes y 96 B: 96 * 4 = 384 B. Fused: x in, y out: 192 B. The multiply is
    # the only arithmetic: 24 other ops.
    data = analyzed("view_copy").data
    assert data["bytes"]["unfused"] == 384
    assert data["bytes"]["fused"] == 192
    assert data["totals"]["other_ops"] == 24


def test_bilinear_by_a_scale_factor_counts_its_bytes_once():
    # F.interpolate(x, scale_factor=1.5, mode="bilinear") of x [1, 2, 6, 7] f32: the output has
    # floor(6 * 1.5) = 9 by floor(7 * 1.5) = 10 points (PyTorch's size). One operation: read x
    # 1*2*6*7*4 B = 336, write y 1*2*9*10*4 B = 720: 1056 B; the rows interpolated first stay
    # on chip.
    from solar.torch.capture import capture

    model = Fn(lambda x: F.interpolate(x, scale_factor=1.5, mode="bilinear"))
    torch.manual_seed(0)
    (node,) = capture(model, (r(1, 2, 6, 7),)).document["nodes"]
    assert node["op"] == "aten.upsample_bilinear2d.vec"
    assert node["args"]["output_size"] is None and node["args"]["scale_factors"] == [1.5, 1.5]
    report = solar_torch.analyze(model, (r(1, 2, 6, 7),))
    assert report.verification["status"] == "passed", report.summary()
    data = report.data
    assert data["bytes"]["unfused"] == 1056
    assert data["bytes"]["fused"] == 1056
