"""Plain tensor attributes (docs/capture.md, "Plain tensor attributes"): a model that keeps a
tensor in a module attribute that is neither a parameter nor a buffer (``self.h0 =
torch.randn(...)`` in __init__), reads it in forward, and may reassign it there. The models are
tests/python/models/attributes/; each is captured (with FakeTensors, as `solar analyze` does, and
for real: the same document), lowered, verified against PyTorch and analysed, and its MACs are
counted by hand and against torch.utils.flop_counter.FlopCounterMode.

Before this capture, such a model built with FakeTensors failed torch.export (the attribute's
fake mode is not export's), and the make_fx fallback asserted the same mismatch; built for real,
export lifted the attribute as a constant and lost its reassignment."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from solar import stages  # noqa: E402
from solar import torch as solar_torch  # noqa: E402
from solar.torch import _trace  # noqa: E402
from solar.torch._trace import tensor_attributes  # noqa: E402
from solar.torch.capture import capture, load_model_file  # noqa: E402

MODELS = Path(__file__).resolve().parent / "models" / "attributes"

# name -> MACs, by hand (B batch, T steps, I input width, H hidden, O outputs).
HAND_MACS = {
    # 2 layers, B=4, T=5, I=8, H=16, gates 4H=64: layer 1: T*B*(4H*I + 4H*H) = 20*(512 + 1024)
    # = 30720; layer 2 (input H): 20*(1024 + 1024) = 40960; fc: B*O*H = 4*4*16 = 256;
    # total 71936
    "lstm_state": 71936,
    # B=3, T=4, I=6, H=10, gates 3H=30: T*B*(3H*I + 3H*H) = 12*(180 + 300) = 5760
    "gru_state": 5760,
    # B*O*I = 4*8*12 = 384 (the scale and offset are elementwise)
    "arithmetic": 384,
    # cell: B*H*(I + H) = 2*16*24 = 768; out: B*O*H = 2*4*16 = 128; total 896
    "recurrent_state": 896,
}
RNN = {"lstm_state", "gru_state"}  # aten.lstm/aten.gru have no FlopCounterMode formula


@functools.cache
def report(name: str) -> stages.Report:
    return solar_torch.analyze_file(MODELS / f"{name}.py")


def captured(name: str, fake: bool = False):
    model, inputs = load_model_file(MODELS / f"{name}.py", fake=fake)
    return model, inputs, capture(model, inputs, source=f"{name}.py")


def roles(doc: dict) -> dict[str, str]:
    return {t["name"]: t["role"] for t in doc["tensors"] if t["role"] != "intermediate"}


def test_every_model_file_is_listed():
    assert sorted(p.stem for p in MODELS.glob("*.py")) == sorted(HAND_MACS)


@pytest.mark.parametrize("name", sorted(HAND_MACS))
def test_analyze_verifies_and_counts_macs(name):
    r = report(name)
    assert r.verification["status"] == "passed", r.summary()
    assert r.verification["mode"] == "whole_program"
    assert r.data["coverage"]["unsupported_ops"] == []
    assert r.data["capture"]["method"] == "torch.export"
    assert r.data["totals"]["macs"] == HAND_MACS[name]


@pytest.mark.parametrize("name", sorted(HAND_MACS))
def test_flop_counter_agrees(name):
    model, inputs = load_model_file(MODELS / f"{name}.py")
    if name in RNN:  # count the exported, decomposed graph: its addmm/bmm are the same work
        model = torch.export.export(model, tuple(inputs)).run_decompositions().module()
    with FlopCounterMode(display=False) as counter:
        model(*inputs)
    assert counter.get_total_flops() == 2 * HAND_MACS[name]


@pytest.mark.parametrize("name", sorted(HAND_MACS))
def test_fake_and_real_capture_are_the_same_document(name):
    _, inputs, fake = captured(name, fake=True)
    assert type(inputs[0]).__name__ == "FakeTensor"
    assert fake.to_json() == captured(name)[2].to_json()


def test_lstm_initial_state_is_a_constant_input():
    _, _, cap = captured("lstm_state")
    doc = cap.document
    r = roles(doc)
    # h0 and c0 are reassigned to themselves (.to on their own device): no new value, so no
    # output; the LSTM is one aten.lstm.input, kept whole as for a plain nn.LSTM (no
    # mkldnn_rnn_layer, no select_copy), its initial state the two constants
    assert r["c_h0"] == "constant" and r["c_c0"] == "constant"
    assert [t["shape"] for t in doc["tensors"] if t["name"] in ("c_h0", "c_c0")] == [[2, 4, 16]] * 2
    assert doc["outputs"] == [n for n, role in r.items() if role == "output"]
    assert len(doc["outputs"]) == 1
    ops = [n["op"] for n in doc["nodes"]]
    assert not any("rnn" in op or "_copy" in op for op in ops), ops
    (lstm,) = [n for n in doc["nodes"] if n["op"] == "aten.lstm.input"]
    assert lstm["args"]["hx"] == [{"tensor": "c_h0"}, {"tensor": "c_c0"}]
    assert lstm["args"]["num_layers"] == 2 and lstm["args"]["batch_first"] is True


def test_unused_attribute_is_not_captured_and_submodule_paths_name_the_input():
    model, _, cap = captured("arithmetic")
    paths = [a.path for a in tensor_attributes(model)]
    assert paths == ["offset", "unused", "head.scale"]  # module order: the root first
    r = roles(cap.document)
    assert r["c_head_scale"] == "constant" and r["c_offset"] == "constant"
    assert "c_unused" not in r  # never read (and complex64, which SOLAR has no name for)


def test_reassigned_attribute_is_an_output_and_its_golden_value_is_the_models():
    model, inputs, cap = captured("recurrent_state")
    doc = cap.document
    before = model.state
    # the new state tanh(..) is the second output, after the model's own
    assert len(doc["outputs"]) == 2
    new_state = doc["outputs"][1]
    (node,) = [n for n in doc["nodes"] if n["outputs"] == [new_state]]
    assert node["op"] == "aten.tanh.default"
    assert cap.traced.outputs[1][1].kind == "attribute_update"
    assert model.state is before  # tracing left the attribute as it was
    data = cap.golden(model, inputs)
    np.testing.assert_array_equal(data["c_state"], before.numpy())  # the value before the run
    assert model.state is not before  # the real run reassigned it
    np.testing.assert_array_equal(data[new_state], model.state.numpy())
    expected = torch.tanh(model.cell(torch.cat([inputs[0], before], dim=1)))
    np.testing.assert_allclose(data[new_state], expected.detach().numpy(), rtol=1e-6)


def test_value_returned_and_stored_is_one_output():
    def step(self, x):
        self.state = torch.tanh(self.cell(torch.cat([x, self.state], dim=1)))
        return self.state

    model, inputs = load_model_file(MODELS / "recurrent_state.py")
    model.forward = step.__get__(model)
    cap = capture(model, inputs)
    assert [b.kind for _, b in cap.traced.outputs] == ["output", "attribute_update"]
    assert len(cap.document["outputs"]) == 1  # the same tensor, listed once
    r = solar_torch.analyze_capture(cap, lambda w: cap.golden(model, inputs, w), "H100-SXM", None)
    assert r.verification["status"] == "passed", r.summary()


@pytest.mark.parametrize("name", ["arithmetic", "recurrent_state"])
def test_make_fx_fallback_traces_attributes_too(monkeypatch, name):
    def refuse(module, args, attributes=()):
        raise RuntimeError("export refused")

    monkeypatch.setattr(_trace, "_trace_export", refuse)
    r = solar_torch.analyze_file(MODELS / f"{name}.py")
    assert r.data["capture"]["method"] == "make_fx"
    assert r.verification["status"] == "passed", r.summary()
    assert r.data["totals"]["macs"] == HAND_MACS[name]
    _, _, cap = captured(name, fake=True)
    attrs = [n for n, b in cap.traced.placeholders.items() if b.kind == "attribute"]
    expected = {"arithmetic": ["c_head_scale", "c_offset"], "recurrent_state": ["c_state"]}
    assert sorted(set(attrs) - cap.traced.dropped) == expected[name]  # c_unused: dropped
    updates = [b.target for _, b in cap.traced.outputs if b.kind == "attribute_update"]
    assert updates == (["state"] if name == "recurrent_state" else [])


class KeywordForward(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.bias = torch.randn(3)

    def forward(self, x, scale=2.0, **extra):
        return x * scale + self.bias


def test_forward_with_keyword_arguments():
    model, inputs = KeywordForward(), (torch.randn(4, 3),)
    cap = capture(model, inputs)
    assert cap.method == "torch.export"
    assert roles(cap.document) == {"x": "input", "c_bias": "constant", "add": "output"}
    r = solar_torch.analyze_capture(cap, lambda w: cap.golden(model, inputs, w), "H100-SXM", None)
    assert r.verification["status"] == "passed", r.summary()


class Int16Attribute(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.k = torch.ones(4, dtype=torch.int16)

    def forward(self, x):
        return x + self.k


def test_attribute_of_a_dtype_without_a_solar_name_is_one_line_naming_it():
    from solar.torch.capture import CaptureError

    with pytest.raises(CaptureError, match=r"^tensor 'c_k': dtype torch.int16 has no SOLAR dtype"):
        capture(Int16Attribute(), (torch.randn(2, 4),))


class DropoutState(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.state = torch.randn(2, 16)
        self.unused = torch.zeros(2, dtype=torch.complex64)
        self.cell = torch.nn.Linear(24, 16)
        self.drop = torch.nn.Dropout(0.25)  # training mode: the golden run is the graph's

    def forward(self, x):
        self.state = torch.tanh(self.drop(self.cell(torch.cat([x, self.state], dim=1))))
        return self.state * 2


def test_attributes_in_a_golden_run_of_the_graph():
    # dropout makes the golden run a run of the captured graph (docs/capture.md): the attribute
    # placeholders, the unused one too, are fed from the model, and the new state is compared
    torch.manual_seed(0)
    model = DropoutState()
    r = solar_torch.analyze(model, (torch.randn(2, 8),))
    assert r.verification["status"] == "passed", r.summary()
    assert [o["name"] for o in r.verification["outputs"]] == ["mul", "tanh"]
    assert any("dropout made deterministic" in note for note in r.verification["notes"])
