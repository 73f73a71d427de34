"""Issue 18, "Also found on the older problem set": the models in tests/python/models/issue18/.

- LSTMs and GRUs whose initial states are plain tensors made in ``__init__`` (reassigned in
  forward, or c0 the same tensor as h0): torch.export traces them as constant inputs and keeps
  the layer whole (aten.lstm.input / aten.gru.input), so they analyse and verify. On the make_fx
  fallback the layer was traced through its CPU implementation (aten.mkldnn_rnn_layer for an
  LSTM; every cell of every step with in-place aten.add_.Tensor for a GRU): now a one-line
  error naming the op and the model's line.
- A GRU whose output is updated in place (``out.add_(x)``) and a hand-written GRU (nn.GRUCell)
  whose state is updated with ``h.add_``: export functionalizes the model's own in-place ops.
- Scans over a 128 x 4000 fp32 tensor (cumsum, cumprod, reverse, exclusive, masked cumsum):
  analysed and verified in about 12 s each on two shared cores (the issue saw > 150 s).

MACs by hand: one RNN layer with input width I, hidden H, batch B, T steps and G gates does
B*T*G*H*(I + H) (tests/python/test_rnn.py). Scan bytes by hand: fp32 128 x 4000 is 2,048,000
bytes; a scan reads its input and writes its output once (fused).
"""

from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")


from solar import torch as solar_torch  # noqa: E402
from solar.torch import _trace  # noqa: E402
from solar.torch.capture import CaptureError, capture_model_file  # noqa: E402

MODELS = os.path.join(os.path.dirname(__file__), "models", "issue18")


def path(name: str) -> str:
    return os.path.join(MODELS, f"{name}.py")


def ops(name: str) -> list[str]:
    cap, _, _ = capture_model_file(path(name))
    return [n["op"] for n in cap.document["nodes"]]


# name -> MACs by hand
RNNS = {
    # B=4, T=10, I=16, H=32, G=4: 4*10*128*(16 + 32) = 245760
    "lstm_init_state": 245760,
    "lstm_init_state_to": 245760,
    "lstm_init_state_alias": 245760,
    # 2 layers, T=10, B=4, I=16, H=32, G=3: 4*10*96*(16 + 32) + 4*10*96*(32 + 32) = 430080
    "gru_init_state": 430080,
    # B=4, T=10, I=H=16, G=3: 4*10*48*(16 + 16) = 61440 (the in-place residual add: no MAC)
    "gru_add_inplace": 61440,
    # nn.GRUCell over 6 steps, B=4, I=16, H=32: 6 * 4*96*(16 + 32) = 110592
    "gru_cell_loop": 110592,
}


@pytest.mark.parametrize("name", sorted(RNNS))
def test_recurrent_models_analyse_and_verify_with_macs_by_hand(name):
    report = solar_torch.analyze_file(path(name))
    assert report.verification["status"] == "passed", report.summary()
    assert report.data["totals"]["macs"] == RNNS[name]


@pytest.mark.parametrize("name", ["lstm_init_state", "lstm_init_state_alias", "gru_add_inplace"])
def test_the_layer_is_kept_whole_and_nothing_in_place_survives(name):
    found = ops(name)
    assert len([op for op in found if op in ("aten.lstm.input", "aten.gru.input")]) == 1, found
    assert not any("mkldnn" in op or op.split(".")[1].endswith("_") for op in found), found


def test_gru_cell_loop_in_place_add_is_functionalized():
    found = ops("gru_cell_loop")
    assert "aten.add_.Tensor" not in found and "aten.add.Tensor" in found


@pytest.fixture
def no_export(monkeypatch):
    def refuse(*args):
        raise RuntimeError("export refused\nsecond line")

    monkeypatch.setattr(_trace, "_trace_export", refuse)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("lstm_init_state", "aten.lstm.input at lstm_init_state.py:16 in forward"),
        ("gru_add_inplace", "aten.gru.input at gru_add_inplace.py:16 in forward"),
        ("gru_init_state", "aten.gru.input at gru_init_state.py:16 in forward"),
        ("gru_cell_loop", "aten.add_.Tensor at gru_cell_loop.py:16 in forward"),
    ],
)
def test_make_fx_fallback_refuses_in_one_line_naming_the_op(no_export, name, expected):
    with pytest.raises(CaptureError) as info:
        capture_model_file(path(name))
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("capture failed: torch.export: RuntimeError: export refused;")
    assert expected in message, message


# name -> (other ops, fused DRAM bytes) by hand; 128 rows of 4000: a scan does 3999 adds (or
# multiplies) a row, 128*3999 = 511872
SCANS = {
    "cumsum": (511872, 4096000),
    "cumprod": (511872, 4096000),
    # the flips move data and do no arithmetic; fused, they are index maps of the scan's loads
    "cumsum_reverse": (511872, 4096000),
    # x[:, :-1] reads 128*3999 fp32 (2,047,488 bytes); the zero column is computed
    "cumsum_exclusive": (511872, 2047488 + 2048000),
    # x * mask: 512000 multiplies; bytes x 2,048,000 + bool mask 512,000 + output 2,048,000
    "cumsum_masked": (512000 + 511872, 4608000),
}


@pytest.mark.parametrize("name", sorted(SCANS))
def test_scans_over_128_by_4000_analyse_and_verify(name):
    # (the issue's >150 s is a speed target: bench/, not a timed test)
    report = solar_torch.analyze_file(path(name))
    assert report.verification["status"] == "passed", report.summary()
    other, dram = SCANS[name]
    assert report.data["totals"]["macs"] == 0
    assert report.data["totals"]["other_ops"] == other
    assert report.data["bytes"]["fused"] == dram
