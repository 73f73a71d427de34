"""Complex tensors and FFTs (issue 28, item 3; docs/capture.md, "Complex tensors and FFTs"):
models in tests/python/models/refs/, analysed as `solar analyze` does, verified against
PyTorch (complex outputs compared as (real, imaginary) pairs), their work and bytes counted by
hand. An FFT of n = 2^m points counts Johnson & Frigo's exact real additions and multiplications
(the modified split radix, IEEE Trans. Signal Processing 55(1), 2007): per complex transform
34/9 n m - 124/27 n - 2 m - 2/9 (-1)^m m + 16/27 (-1)^m + 8, per real-input or real-output one
17/9 n m - 89/27 n - m - 1/9 (-1)^m m + 8/27 (-1)^m + 6; no MACs (docs/fidelities.md, "FFTs").
H100-SXM."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import solar  # noqa: E402

MODELS = Path(__file__).resolve().parent / "models" / "refs"


@functools.cache
def report(name: str) -> dict:
    data = solar.analyze_file(MODELS / f"{name}.py", hw="H100-SXM").data
    assert data["verification"]["status"] == "passed", data["verification"]
    return data


def node_ops(data: dict, op: str) -> list[dict]:
    return [n for n in data["nodes"] if n["op"] == op]


def test_rfft_filter_irfft_counts_and_bytes_by_hand():
    data = report("rfft_filter")
    nodes = data["nodes"]
    assert sum(n["macs"] for n in nodes) == 0  # an FFT is no dense DFT contraction
    # rfft: 8 transforms of 1024 = 2^10 real points (m = 10, (-1)^m = 1); times 27 the count is
    # 51 x 1024 x 10 - 89 x 1024 - 27 x 10 - 3 x 10 + 8 + 162 = 522,240 - 91,136 - 270 - 30 + 170
    # = 430,974 = 27 x 15,962: 15,962 each, 8 x 15,962 = 127,696 ops; irfft the same: 127,696.
    for op in ("rfft", "irfft"):
        (fft,) = node_ops(data, op)
        assert fft["other_ops"] == 127_696
    # Fused: reads x (8 x 1024 x 4 = 32,768 B) and the filter (513 x 4 = 2,052 B), writes y
    # (32,768 B) and the sum (4 B); the spectrum (8 x 513 x 8 B) stays on chip: 67,592 B.
    assert data["bytes"]["fused"] == 32_768 + 2_052 + 32_768 + 4


def test_fft_of_a_complex_input_and_its_real_pairs():
    data = report("fft_complex")
    # fft and ifft: 4 transforms of 64 = 2^6 complex points (m = 6, (-1)^m = 1); times 27 the
    # count is 102 x 64 x 6 - 124 x 64 - 54 x 6 - 6 x 6 + 16 + 216 = 39,168 - 7,936 - 324 - 36 +
    # 232 = 31,104 = 27 x 1,152: 1,152 each (the split radix's 4 x 64 x 6 - 6 x 64 + 8 = 1,160
    # less 8), 4 x 1,152 = 4,608.
    (fft,) = node_ops(data, "fft")
    (ifft,) = node_ops(data, "ifft")
    assert fft["other_ops"] == ifft["other_ops"] == 4_608
    # Fused: reads z and w (4 x 64 x 8 B = 2,048 B each), writes the pairs (4 x 64 x 2 x 4 B =
    # 2,048 B) and the ifft (2,048 B): 8,192 B; the spectrum f and the product g stay on chip.
    assert data["bytes"]["fused"] == 4 * 2_048


def test_an_op_on_complex_tensors_without_a_rule_is_one_line_naming_it(tmp_path):
    model = tmp_path / "fft_exp.py"
    model.write_text(
        "import torch\n"
        "class Model(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        return torch.exp(torch.fft.rfft(x))\n"
        "def get_inputs():\n"
        "    return [torch.randn(2, 8)]\n"
        "def get_init_inputs():\n"
        "    return []\n"
    )
    with pytest.raises(ValueError, match="aten.exp.default of complex tensor"):
        solar.analyze_file(model, hw="H100-SXM")


def test_an_fft_convolution_divides_multiplies_and_adds_spectra():
    """Issue 38, family 4: ``rfft(u, n=2L) / (2L)`` (a complex tensor divided by a real scalar)
    had no lowering rule; with it the spectra's product and sum (complex by complex), each on
    the (real, imaginary) pairs as two kernels."""
    data = report("fft_conv")
    ops = {n["name"]: n["other_ops"] for n in data["nodes"]}
    # The input's spectrum: 2 x 4 transforms of n = 32 points, 17 complex values each: 136.
    # Divided by 32: one division per part, 136 each. The product (a + bi)(c + di): 3 ops per
    # part, 408 each; the sum: one add per part, 136 each.
    assert (ops["div_re"], ops["div_im"]) == (136, 136)
    assert (ops["mul_re"], ops["mul_im"]) == (408, 408)
    assert (ops["add_re"], ops["add_im"]) == (136, 136)
    # The FFTs: real input (and real output) of n = 32 = 2^5 (m = 5, (-1)^m = -1); times 27 the
    # count is 51 x 32 x 5 - 89 x 32 - 27 x 5 + 3 x 5 - 8 + 162 = 8,160 - 2,848 - 135 + 15 + 154
    # = 5,346 = 27 x 198: 198 a transform; u's 8 and the inverse's 8: 1,584; k's 4: 792.
    assert ops["rfft:_fft_r2c"] == ops["irfft:_fft_c2r"] == 8 * 198
    assert ops["rfft:_fft_r2c_1"] == 4 * 198
    # Fused: u 2 x 4 x 16 x 4 = 512 B, k 4 x 16 x 4 = 256 B, y (the first 16 of each 32) 512 B.
    assert data["bytes"]["fused"] == 512 + 256 + 512
    # Unfused: the cut `[..., :L]` is a view in eager (no kernel): the slice costs nothing, the
    # inverse FFT reads the spectra's pairs (2 x 4 x 17 x 2 x 4 = 1,088 B) and writes every
    # point of the 2 x 4 x 32 signal (1,024 B)
    nodes = {n["name"]: n for n in data["nodes"]}
    assert nodes["slice:slice_1"]["bytes_unfused"] == 0
    assert nodes["irfft:_fft_c2r"]["bytes_unfused"] == 1_088 + 1_024
