"""Complex tensors and FFTs (issue 28, item 3; docs/capture.md, "Complex tensors and FFTs"):
models in tests/python/models/refs/, analysed as `solar analyze` does, verified against
PyTorch (complex outputs compared as (real, imaginary) pairs), their work and bytes counted by
hand. An FFT of n points counts floor(34/9 n log2(n)) operations per complex transform and
floor(17/9 n log2(n)) per real-input or real-output one (Johnson & Frigo's modified split radix,
below benchFFT's 5 n log2(n) convention), rounded down per transform, no MACs. H100-SXM."""

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
    # rfft: 8 transforms of 1024 = 2^10 real points, floor(17/9 x 1024 x 10) = floor(174,080 / 9)
    # = floor(19,342.2) = 19,342 each (floor per transform): 8 x 19,342 = 154,736 ops; irfft the
    # same: 154,736.
    for op in ("rfft", "irfft"):
        (fft,) = node_ops(data, op)
        assert fft["other_ops"] == 154_736
    # Fused: reads x (8 x 1024 x 4 = 32,768 B) and the filter (513 x 4 = 2,052 B), writes y
    # (32,768 B) and the sum (4 B); the spectrum (8 x 513 x 8 B) stays on chip: 67,592 B.
    assert data["bytes"]["fused"] == 32_768 + 2_052 + 32_768 + 4


def test_fft_of_a_complex_input_and_its_real_pairs():
    data = report("fft_complex")
    # fft and ifft: 4 transforms of 64 = 2^6 complex points, floor(34/9 x 64 x 6) = floor(13,056 /
    # 9) = floor(1,450.7) = 1,450 each (floor per transform): 4 x 1,450 = 5,800.
    (fft,) = node_ops(data, "fft")
    (ifft,) = node_ops(data, "ifft")
    assert fft["other_ops"] == ifft["other_ops"] == 5_800
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
