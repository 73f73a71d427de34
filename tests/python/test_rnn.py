"""nn.LSTM, nn.GRU and nn.RNN kept whole by capture (aten.lstm.input, aten.gru.input,
aten.rnn_tanh.input, aten.rnn_relu.input: KEPT_WHOLE in solar/capture/_trace.py) and lowered by
src/frontend/rules_rnn.cpp to one `repeat` over the time steps per layer and direction
(docs/lowering.md, "Recurrent layers"); verified against PyTorch whole and per op.

MACs by hand. One layer and direction with input width I, hidden H, batch B, T steps and
G gates (LSTM 4, GRU 3, RNN 1) does B*T*G*H*(I + H) MACs: the input projection,
B*T rows of G*H outputs over I inputs, and the hidden projection, B*T rows of G*H outputs over
H inputs. A layer after the first reads the previous layer's output, I = D*H with D directions.
FlopCounterMode: on the CPU nn.LSTM is one aten.lstm kernel (mkldnn) that it counts as 0, so an
LSTM is compared with FlopCounterMode on the exported, decomposed graph, whose addmm/mm are the
same products; nn.GRU and nn.RNN run as their decomposition on the CPU, which it counts.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from solar import torch as solar_torch  # noqa: E402
from solar.torch.capture import capture  # noqa: E402


class Recurrent(nn.Module):
    """An RNN module's output sequence and final state(s), from given initial states or not."""

    def __init__(self, rnn: nn.Module) -> None:
        super().__init__()
        self.rnn = rnn

    def forward(self, x, *state):
        if isinstance(self.rnn, nn.LSTM) and state:
            out, s = self.rnn(x, tuple(state))
        else:
            out, s = self.rnn(x, *state)
        return (out, *s) if isinstance(s, tuple) else (out, s)


def r(*shape: int) -> torch.Tensor:
    return torch.randn(*shape)


# name -> (module, inputs, MACs by hand)
CASES = {
    # 2 layers, batch first, B=3, T=5, I=4, H=8, G=4: layer 0: 3*5*32*(4 + 8) = 5760;
    # layer 1: 3*5*32*(8 + 8) = 7680; total 13440
    "lstm_2layer": (lambda: nn.LSTM(4, 8, num_layers=2, batch_first=True), (r(3, 5, 4),), 13440),
    # bidirectional GRU, time first, T=5, B=2, I=4, H=6, G=3, D=2: layer 0:
    # 2 * 2*5*18*(4 + 6) = 3600; layer 1 reads 2*6 = 12: 2 * 2*5*18*(12 + 6) = 6480; total 10080
    "gru_bidirectional": (
        lambda: nn.GRU(4, 6, num_layers=2, bidirectional=True),
        (r(5, 2, 4),),
        10080,
    ),
    # no bias, time first, given h0 and c0: T=4, B=2, I=3, H=5, G=4: 2*4*20*(3 + 5) = 1280
    "lstm_no_bias_given_state": (
        lambda: nn.LSTM(3, 5, bias=False),
        (r(4, 2, 3), r(1, 2, 5), r(1, 2, 5)),
        1280,
    ),
    # Elman RNN, tanh, bidirectional, batch first, no bias: B=2, T=3, I=4, H=5, G=1, D=2:
    # 2 * 2*3*5*(4 + 5) = 540
    "rnn_tanh_bidirectional_no_bias": (
        lambda: nn.RNN(4, 5, bidirectional=True, batch_first=True, bias=False),
        (r(2, 3, 4),),
        540,
    ),
    # Elman RNN, ReLU, 2 layers, given h0: T=3, B=2, I=4, H=6: layer 0: 2*3*6*(4 + 6) = 360;
    # layer 1: 2*3*6*(6 + 6) = 432; total 792
    "rnn_relu_2layer_given_state": (
        lambda: nn.RNN(4, 6, num_layers=2, nonlinearity="relu"),
        (r(3, 2, 4), r(2, 2, 6)),
        792,
    ),
    # LSTM with a projection (proj_size 3): B=2, T=4, I=4, H=6, P=3: gates 2*4*24*(4 + 3) = 1344
    # plus the projection h = W_hr m, 2*4*3*6 = 144: 1488
    "lstm_proj": (lambda: nn.LSTM(4, 6, proj_size=3, batch_first=True), (r(2, 4, 4),), 1488),
}
RNN_OPS = {"aten.lstm.input", "aten.gru.input", "aten.rnn_tanh.input", "aten.rnn_relu.input"}


def build(name: str):
    torch.manual_seed(0)
    make, inputs, _ = CASES[name]
    return Recurrent(make()), inputs


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_layer_is_one_node_of_the_capture(name):
    model, inputs = build(name)
    ops = [n["op"] for n in capture(model, inputs).document["nodes"]]
    assert len([op for op in ops if op in RNN_OPS]) == 1, ops
    assert not any(op in ops for op in ("aten.sigmoid.default", "aten.tanh.default")), ops


@pytest.mark.parametrize("name", sorted(CASES))
def test_verifies_whole_and_counts_macs_by_hand(name):
    model, inputs = build(name)
    report = solar_torch.analyze(model, inputs)
    assert report.verification["status"] == "passed", report.summary()
    assert report.verification["mode"] == "whole_program"
    assert report.data["totals"]["macs"] == CASES[name][2]


@pytest.mark.parametrize("name", sorted(CASES))
def test_verifies_per_op(name):
    model, inputs = build(name)
    report = solar_torch.analyze(model, inputs, verify_mode="per_op")
    assert report.verification["status"] == "passed", report.summary()


def flop_counter_macs(model: nn.Module, inputs: tuple) -> int:
    with FlopCounterMode(display=False) as counter:
        model(*inputs)
    flops = counter.get_total_flops()
    assert flops % 2 == 0
    return flops // 2


@pytest.mark.parametrize("name", ["gru_bidirectional", "rnn_relu_2layer_given_state"])
def test_gru_and_rnn_macs_equal_flop_counter(name):
    model, inputs = build(name)
    assert flop_counter_macs(model, inputs) == CASES[name][2]


@pytest.mark.parametrize("name", ["lstm_2layer", "lstm_no_bias_given_state"])
def test_lstm_macs_equal_flop_counter_on_the_decomposed_graph(name):
    model, inputs = build(name)
    assert flop_counter_macs(model, inputs) == 0  # the CPU's one aten.lstm kernel: no formula
    decomposed = torch.export.export(model, inputs).run_decompositions().module()
    assert flop_counter_macs(decomposed, inputs) == CASES[name][2]


def test_training_mode_inter_layer_dropout_is_refused_naming_the_op():
    torch.manual_seed(0)
    model = Recurrent(nn.LSTM(4, 8, num_layers=2, dropout=0.5))  # training mode: dropout on
    with pytest.raises(ValueError) as info:
        solar_torch.analyze(model, (r(3, 2, 4),))
    message = str(info.value)
    assert "\n" not in message
    assert "aten.lstm.input" in message
    assert "inter-layer dropout in training mode (dropout=0.5) is not supported" in message


def test_eval_mode_dropout_verifies():
    torch.manual_seed(0)
    model = Recurrent(nn.LSTM(4, 8, num_layers=2, dropout=0.5)).eval()
    report = solar_torch.analyze(model, (r(3, 2, 4),))
    assert report.verification["status"] == "passed", report.summary()
