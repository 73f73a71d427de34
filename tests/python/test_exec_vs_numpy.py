"""The executor against numpy, on every program in examples/.

Each example has a case here: seeded random inputs and a numpy reference written from the
operator's definition (often by another route than the IR takes: transposed convolution as a
correlation of the zero-dilated input with the flipped kernel, logsumexp without the max shift),
never from SOLAR's output. References compute in float64; float32 outputs must match within
RTOL/ATOL (one float32 rounding per stored intermediate); data movement must match exactly; the
bf16 matmul must match bit for bit. Every case runs with the GEMM fast paths on and off.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import solar

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# float32 outputs against float64 references: each stored float32 intermediate adds a relative
# error of 2**-24 (6e-8), and outputs are sums of O(10) values, so 1e-5 leaves a wide margin
# while any real bug (a wrong index, a missed term) is off by far more.
RTOL = 1e-5
ATOL = 1e-5

Arrays = dict[str, np.ndarray]


@dataclass(frozen=True)
class Case:
    inputs: Callable[[np.random.Generator], Arrays]
    reference: Callable[[Arrays], Arrays]
    exact: bool = False  # data movement only: outputs must equal the reference exactly


def normal(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def f64(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float64)


# ---------------------------------------------------------------------------------------------
# References


def strided(start: int, stride: int, count: int) -> slice:
    """Positions start, start + stride, ... (count of them)."""
    return slice(start, start + stride * (count - 1) + 1, stride)


def conv2d_ref(x, w, b, stride, dilation, padding, groups):
    n, _, h, wd = x.shape
    f, cg, kh, kw = w.shape
    fg = f // groups
    oh = (h + 2 * padding - dilation * (kh - 1) - 1) // stride + 1
    ow = (wd + 2 * padding - dilation * (kw - 1) - 1) // stride + 1
    xp = np.pad(f64(x), ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    out = np.zeros((n, f, oh, ow))
    for g in range(groups):
        xs = xp[:, g * cg : (g + 1) * cg]
        ws = f64(w[g * fg : (g + 1) * fg])
        for i in range(kh):
            for j in range(kw):
                rows, cols = strided(i * dilation, stride, oh), strided(j * dilation, stride, ow)
                patch = xs[:, :, rows, cols]
                out[:, g * fg : (g + 1) * fg] += np.einsum("nchw,fc->nfhw", patch, ws[:, :, i, j])
    return out + f64(b)[None, :, None, None]


def conv_transpose2d_ref(x, w, stride, padding):
    # The adjoint of a strided convolution: dilate the input with stride-1 zeros, pad it by
    # k-1-padding, and correlate with the spatially flipped kernel.
    n, c, h, wd = x.shape
    _, f, kh, kw = w.shape
    xd = np.zeros((n, c, (h - 1) * stride + 1, (wd - 1) * stride + 1))
    xd[:, :, ::stride, ::stride] = x
    ph, pw = kh - 1 - padding, kw - 1 - padding
    xdp = np.pad(xd, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    wf = f64(w)[:, :, ::-1, ::-1]
    oh, ow = xdp.shape[2] - kh + 1, xdp.shape[3] - kw + 1
    out = np.zeros((n, f, oh, ow))
    for i in range(kh):
        for j in range(kw):
            out += np.einsum("nchw,cf->nfhw", xdp[:, :, i : i + oh, j : j + ow], wf[:, :, i, j])
    return out


def pool_windows(xp, k, stride, oh, ow):
    for i in range(k):
        for j in range(k):
            yield xp[:, :, strided(i, stride, oh), strided(j, stride, ow)]


def maxpool_ref(x, k, stride, padding):
    h, w = x.shape[2:]
    oh, ow = (h + 2 * padding - k) // stride + 1, (w + 2 * padding - k) // stride + 1
    pads = ((0, 0), (0, 0), (padding, padding), (padding, padding))
    xp = np.pad(f64(x), pads, constant_values=-np.inf)
    return np.maximum.reduce(list(pool_windows(xp, k, stride, oh, ow)))


def avgpool_ref(x, k, stride, padding):
    # count_include_pad=True: the divisor is always k*k.
    h, w = x.shape[2:]
    oh, ow = (h + 2 * padding - k) // stride + 1, (w + 2 * padding - k) // stride + 1
    xp = np.pad(f64(x), ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    return sum(pool_windows(xp, k, stride, oh, ow)) / (k * k)


def softmax_ref(x, axis=-1):
    e = np.exp(f64(x))  # no max shift: float64 cannot overflow on these inputs
    return e / e.sum(axis=axis, keepdims=True)


def causal_attention_ref(q, k, v):
    d = q.shape[-1]
    t = q.shape[-2]
    scores = np.einsum("hid,hjd->hij", f64(q), f64(k)) / math.sqrt(d)
    scores = np.where(np.tril(np.ones((t, t), dtype=bool)), scores, -np.inf)
    return np.einsum("hij,hjd->hid", softmax_ref(scores), f64(v))


def rnn_ref(x, h0, wx, wh, b):
    h = f64(h0)
    ys = []
    for t in range(x.shape[0]):
        h = np.tanh(f64(wx) @ f64(x[t]) + f64(wh) @ h + f64(b))
        ys.append(h)
    return np.stack(ys)


def bf16_bits_rne(x: np.ndarray) -> np.ndarray:
    """Bits of float32 values rounded to bf16, round to nearest even (finite values only)."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_bits(a: np.ndarray) -> np.ndarray:
    """solar returns bf16 as raw uint16 bits, or as ml_dtypes.bfloat16 when that is installed."""
    return a if a.dtype == np.uint16 else a.view(np.uint16)


def bf16_values(rng: np.random.Generator, *shape: int) -> np.ndarray:
    # Multiples of 1/8 in [-1, 1]: exact in bf16, and every product and sum of 64 of them is exact
    # in float32 and float64, so the only rounding is the final one to bf16.
    return (rng.integers(-8, 9, size=shape) / 8).astype(np.float32)


def bf16_matmul_inputs(rng):
    return {"A": bf16_values(rng, 8, 64), "B": bf16_values(rng, 64, 8)}


def bf16_matmul_ref(a):
    exact = f64(a["A"]) @ f64(a["B"])
    assert np.all(exact.astype(np.float32) == exact)  # the premise of the comment above
    return {"C": bf16_bits_rne(exact)}


def scatter_add_ref(x, idx, src):
    y = f64(x).copy()
    cols = np.broadcast_to(np.arange(x.shape[1]), idx.shape)
    np.add.at(y, (idx, cols), f64(src))
    return y


def erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf)(x)


def batchnorm_ref(x, gamma, beta):
    x = f64(x)
    mean = x.mean(axis=(0, 2, 3))
    var = x.var(axis=(0, 2, 3))
    shape = (1, -1, 1, 1)
    y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + 1e-5)
    return {"mean": mean, "var": var, "y": y * f64(gamma).reshape(shape) + f64(beta).reshape(shape)}


def layernorm_ref(x, gamma, beta):
    x = f64(x)
    mu = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * f64(gamma) + f64(beta)


# ---------------------------------------------------------------------------------------------
# Cases: one per example file, with its default sizes.

CASES: dict[str, Case] = {
    "gemm": Case(
        lambda r: {"A": normal(r, 32, 48), "B": normal(r, 48, 24)},
        lambda a: {"C": f64(a["A"]) @ f64(a["B"])},
    ),
    "batched_gemm": Case(
        lambda r: {"A": normal(r, 3, 16, 20), "W": normal(r, 1, 20, 12)},
        lambda a: {"C": np.matmul(f64(a["A"]), f64(a["W"]))},
    ),
    "conv2d": Case(
        lambda r: {"x": normal(r, 2, 4, 11, 10), "w": normal(r, 6, 2, 3, 3), "b": normal(r, 6)},
        lambda a: {
            "y": conv2d_ref(a["x"], a["w"], a["b"], stride=2, dilation=2, padding=1, groups=2)
        },
    ),
    "conv_transpose2d": Case(
        lambda r: {"x": normal(r, 2, 3, 5, 6), "w": normal(r, 3, 4, 3, 3)},
        lambda a: {"y": conv_transpose2d_ref(a["x"], a["w"], stride=2, padding=1)},
    ),
    "maxpool2d": Case(
        lambda r: {"x": normal(r, 2, 3, 9, 8)},
        lambda a: {"y": maxpool_ref(a["x"], k=3, stride=2, padding=1)},
        exact=True,
    ),
    "avgpool2d": Case(
        lambda r: {"x": normal(r, 2, 3, 9, 8)},
        lambda a: {"y": avgpool_ref(a["x"], k=3, stride=2, padding=1)},
    ),
    "softmax": Case(
        lambda r: {"x": 3 * normal(r, 8, 50)},
        lambda a: {"y": softmax_ref(a["x"])},
    ),
    "layernorm": Case(
        lambda r: {"x": normal(r, 6, 40) + 2, "gamma": normal(r, 40), "beta": normal(r, 40)},
        lambda a: {"y": layernorm_ref(a["x"], a["gamma"], a["beta"])},
    ),
    "causal_attention": Case(
        lambda r: {"q": normal(r, 2, 16, 8), "k": normal(r, 2, 16, 8), "v": normal(r, 2, 16, 8)},
        lambda a: {"o": causal_attention_ref(a["q"], a["k"], a["v"])},
    ),
    "cumsum": Case(
        lambda r: {"x": normal(r, 5, 30)},
        lambda a: {"y": np.cumsum(f64(a["x"]), axis=1)},
    ),
    "gather": Case(
        lambda r: {"x": normal(r, 4, 10), "idx": r.integers(0, 10, size=(4, 6))},
        lambda a: {"y": 2 * np.take_along_axis(f64(a["x"]), a["idx"], axis=1)},
        exact=True,
    ),
    "concat": Case(
        lambda r: {"a": normal(r, 3, 4), "b": normal(r, 3, 2), "c": normal(r, 3, 5)},
        lambda a: {
            "y": np.maximum(np.concatenate([a["a"], a["b"], a["c"]], axis=1), 0),
            "mid": np.concatenate([a["a"], a["b"], a["c"]], axis=1)[:, 3:7],
        },
        exact=True,
    ),
    "transpose": Case(
        lambda r: {"x": normal(r, 2, 3, 4, 5), "m": normal(r, 3, 5)},
        lambda a: {"y": a["x"].transpose(0, 2, 3, 1).reshape(2, 20, 3), "mt": a["m"].T},
        exact=True,
    ),
    "rnn": Case(
        lambda r: {
            "x": normal(r, 5, 6),
            "h0": normal(r, 8),
            "wx": 0.5 * normal(r, 8, 6),
            "wh": 0.5 * normal(r, 8, 8),
            "b": normal(r, 8),
        },
        lambda a: {"ys": rnn_ref(a["x"], a["h0"], a["wx"], a["wh"], a["b"])},
    ),
    "mlp": Case(
        lambda r: {
            "x": normal(r, 4, 16),
            "w1": normal(r, 16, 32),
            "b1": normal(r, 32),
            "w2": normal(r, 32, 8),
            "b2": normal(r, 8),
        },
        lambda a: {
            "y": np.maximum(f64(a["x"]) @ f64(a["w1"]) + f64(a["b1"]), 0) @ f64(a["w2"])
            + f64(a["b2"])
        },
    ),
    "bf16_matmul": Case(bf16_matmul_inputs, bf16_matmul_ref, exact=True),
    "scatter_add": Case(
        lambda r: {
            "x": normal(r, 5, 4),
            "idx": r.integers(0, 5, size=(7, 4)),
            "src": normal(r, 7, 4),
        },
        lambda a: {"y": scatter_add_ref(a["x"], a["idx"], a["src"])},
    ),
    "embedding": Case(
        lambda r: {"ids": r.integers(0, 20, size=(2, 5)), "table": normal(r, 20, 8)},
        lambda a: {"y": f64(a["table"])[a["ids"]] * math.sqrt(8)},
    ),
    "gelu": Case(
        lambda r: {"x": 2 * normal(r, 4, 64)},
        lambda a: {"y": f64(a["x"]) / 2 * (1 + erf(f64(a["x"]) / math.sqrt(2)))},
    ),
    "logsumexp": Case(
        lambda r: {"x": 2 * normal(r, 6, 33)},
        lambda a: {"y": np.log(np.exp(f64(a["x"])).sum(axis=1))},
    ),
    "batchnorm": Case(
        lambda r: {"x": normal(r, 3, 4, 5, 6) + 1, "gamma": normal(r, 4), "beta": normal(r, 4)},
        lambda a: batchnorm_ref(a["x"], a["gamma"], a["beta"]),
    ),
}


def test_every_example_has_a_case():
    assert sorted(p.stem for p in EXAMPLES.glob("*.ir")) == sorted(CASES)
    assert len(CASES) >= 20


def compare(name: str, got: Arrays, want: Arrays, exact: bool) -> None:
    assert sorted(got) == sorted(want), f"{name}: outputs"
    for out, expected in want.items():
        actual = got[out]
        assert actual.shape == expected.shape, f"{name}.{out}: shape"
        if name == "bf16_matmul":
            actual = bf16_bits(actual)
        if exact:
            np.testing.assert_array_equal(actual, expected, err_msg=f"{name}.{out}")
        else:
            np.testing.assert_allclose(
                actual, expected, rtol=RTOL, atol=ATOL, err_msg=f"{name}.{out}"
            )


@pytest.mark.parametrize("fast_paths", [True, False], ids=["fast", "generic"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_example_matches_numpy(name: str, fast_paths: bool):
    case = CASES[name]
    inputs = case.inputs(np.random.default_rng(zlib.crc32(name.encode())))
    got = solar.run(EXAMPLES / f"{name}.ir", inputs, fast_paths=fast_paths)
    compare(name, got, case.reference(inputs), case.exact)


def test_bf16_rounding_is_to_nearest_even_not_truncation():
    # Guards the bf16 case: with these inputs some results differ between round-to-nearest-even
    # and truncation, so a truncating executor fails test_example_matches_numpy[bf16_matmul].
    inputs = bf16_matmul_inputs(np.random.default_rng(1234))
    exact = (f64(inputs["A"]) @ f64(inputs["B"])).astype(np.float32)
    truncated = (exact.view(np.uint32) >> 16).astype(np.uint16)
    assert np.any(bf16_bits_rne(exact) != truncated)


@pytest.mark.parametrize(
    ("name", "sizes", "inputs", "reference"),
    [
        (
            "gemm",
            {"M": 5, "K": 300, "N": 3},
            lambda r: {"A": normal(r, 5, 300), "B": normal(r, 300, 3)},
            lambda a: {"C": f64(a["A"]) @ f64(a["B"])},
        ),
        (
            "causal_attention",
            {"H": 1, "T": 7, "D": 3},
            lambda r: {"q": normal(r, 1, 7, 3), "k": normal(r, 1, 7, 3), "v": normal(r, 1, 7, 3)},
            lambda a: {"o": causal_attention_ref(a["q"], a["k"], a["v"])},
        ),
        (
            "cumsum",
            {"R": 2, "C": 100},
            lambda r: {"x": normal(r, 2, 100)},
            lambda a: {"y": np.cumsum(f64(a["x"]), axis=1)},
        ),
    ],
    ids=["gemm", "causal_attention", "cumsum"],
)
def test_size_overrides(name, sizes, inputs, reference):
    arrays = inputs(np.random.default_rng(7))
    got = solar.run(EXAMPLES / f"{name}.ir", arrays, sizes=sizes)
    compare(name, got, reference(arrays), exact=False)
