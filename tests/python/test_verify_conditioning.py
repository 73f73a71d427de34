"""Whole-program verification that fails in float32 is run again in float64 (docs/capture.md,
"Verification"): an ill-conditioned BatchNorm passes with a ``conditioning`` entry, a changed
constant in the lowered program (a lowering bug) stays failed, and a program with no float64
form stays failed and says why."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import solar  # noqa: E402
from solar import stages  # noqa: E402
from solar import torch as solar_torch  # noqa: E402
from solar.verify import Verification  # noqa: E402
from solar.verify.float64 import _as_float64, conditioned_recheck  # noqa: E402
from solar.verify.whole import TOLERANCES, compare_output, lowest_precision_computed  # noqa: E402

pytestmark = pytest.mark.skipif(
    not hasattr(solar._core, "lower_capture_detailed"),
    reason="this build of solar._core has no lower_capture_detailed",
)

MODELS = Path(__file__).resolve().parent / "models" / "verify"


def test_ill_conditioned_batchnorm_passes_by_its_float64_run():
    # x = 1000 + 0.01 z over a batch of 2: per channel the two values a, b differ by d ~ 0.01,
    # mean = (a + b) / 2, biased variance = (d / 2)^2 ~ 2.5e-5, out = +-(d / 2) / sqrt(var +
    # 1e-5) ~ +-0.85. float32 spacing at 1000 (in [512, 1024)) is 2^(9 - 23) = 2^-14 ~ 6.1e-5:
    # PyTorch's float32 mean can be off by half of it, 3.05e-5, which moves out by about
    # 3.05e-5 / sqrt(3.5e-5) ~ 5e-3, far over the f32 tolerance 1e-4 * 0.85 + 1e-5 ~ 9.5e-5.
    # In float64 the spacing is 2^(9 - 52) ~ 1.1e-13: out moves by ~ 1.1e-13 / 5.9e-3 ~ 2e-11,
    # under the f64 tolerance 1e-9 * 0.85 + 1e-12 ~ 8.5e-10.
    report = solar_torch.analyze_file(MODELS / "batchnorm_ill_conditioned.py")
    v = report.verification
    assert v["mode"] == "whole_program"
    # the float32 check really fails: the normalised output is a mismatch in float32 ...
    f32 = {o["name"]: o for o in v["outputs"]}
    assert not all(o["passed"] for o in f32.values()), report.summary()
    (bad,) = [o for o in f32.values() if not o["passed"]]
    assert bad["dtype"] == "f32" and bad["shape"] == [2, 8]
    assert bad["max_abs_err"] > 1e-4  # bigger than the whole f32 allowance (~9.5e-5, above)
    # ... and float64 passes: every output of the float64 run within the f64 tolerances
    c = v["conditioning"]
    assert c["result"] == "float64_agrees"
    assert c["float64_outputs"] and all(o["passed"] for o in c["float64_outputs"])
    assert [o["dtype"] for o in c["float64_outputs"] if o["name"] == bad["name"]] == ["f64"]
    assert c["float64_max_rel_err"] < 1e-9 < 1e-4 < c["float32_max_rel_err"]
    assert c["float32_max_rel_err"] == bad["max_rel_err"]
    assert v["status"] == "passed"
    assert "ill-conditioned in float32: the float64 runs agree" in v["detail"]
    assert "passed: whole program" in report.table  # the header's status line
    assert "ill-conditioned in float32" in report.table
    assert "float64 recheck: ill-conditioned in float32" in report.summary()


def test_the_float32_disagreement_is_pytorchs_rounding():
    # The same model by hand: PyTorch in float32 against the exact result (numpy, float64, on
    # the same float32 inputs) is off by more than the f32 tolerance; PyTorch in float64 is not.
    torch.manual_seed(0)
    x = 1000.0 + 0.01 * torch.randn(2, 8)
    xd = x.double().numpy()
    mean = xd.mean(axis=0)
    exact = (xd - mean) / np.sqrt(((xd - mean) ** 2).mean(axis=0) + 1e-5)
    bn = torch.nn.BatchNorm1d(8)
    with torch.no_grad():
        got32 = bn(x).double().numpy()
        got64 = bn.double()(x.double()).numpy()
    assert np.max(np.abs(got32 - exact)) > 1e-4  # the f32 allowance is ~9.5e-5 (above)
    assert np.max(np.abs(got64 - exact)) < 1e-9


def _changed_constant(monkeypatch, old: str, new: str) -> None:
    """Every lowering (the float32 one and the float64 recheck's) writes ``new`` for ``old``."""
    real = stages.lower_detailed

    def lowered(*args, **kwargs):
        result = real(*args, **kwargs)
        assert old in result.ir
        return result.replace_ir(result.ir.replace(old, new))  # the program the analysis reads

    monkeypatch.setattr(stages, "lower_detailed", lowered)


def test_a_changed_constant_stays_failed_in_float64(monkeypatch):
    # tanh(x) * 3.0 lowered as tanh(x) * 3.001: every element is off by 1/3000 ~ 3.3e-4 of its
    # value, over rtol 1e-4 in float32 and over rtol 1e-9 in float64.
    _changed_constant(monkeypatch, "* 3.0)", "* 3.001)")

    def f(x):
        return torch.tanh(x) * 3.0

    torch.manual_seed(0)
    report = solar_torch.analyze(f, (torch.randn(4, 8),))
    v = report.verification
    assert v["status"] == "failed", report.summary()
    c = v["conditioning"]
    assert c["result"] == "float64_disagrees"
    # 3.001 / 3 - 1 = 3.33e-4 relative error, in both precisions (up to rounding)
    assert c["float32_max_rel_err"] == pytest.approx(1 / 3000, rel=1e-3)
    assert c["float64_max_rel_err"] == pytest.approx(1 / 3000, rel=1e-9)
    assert "the float64 runs disagree too: a lowering bug" in v["detail"]
    assert "\n" not in v["detail"]


def test_an_integer_program_has_no_float64_form(monkeypatch):
    # x * 3 on int64 (the IR writes 3.0) lowered as x * 4.0: the exact comparison fails, and
    # there is no floating-point tensor at all.
    _changed_constant(monkeypatch, "* 3.0)", "* 4.0)")

    def f(x):
        return x * 3

    report = solar_torch.analyze(f, (torch.arange(6).reshape(2, 3),))
    v = report.verification
    assert v["status"] == "failed", report.summary()
    assert v["conditioning"]["result"] == "not_possible"
    assert "no float64 recheck: the program has no floating-point tensors" in v["detail"]


def test_a_model_that_fixes_its_dtype_has_no_float64_form(monkeypatch):
    # The output is cast to float32 by the model itself, so its float64 run would still compare
    # float32 values: the recheck says so and the result stays failed.
    _changed_constant(monkeypatch, "* 3.0)", "* 3.001)")

    def f(x):
        return (torch.tanh(x) * 3.0).to(torch.float32)

    torch.manual_seed(0)
    report = solar_torch.analyze(f, (torch.randn(4, 8),))
    v = report.verification
    assert v["status"] == "failed", report.summary()
    assert v["conditioning"]["result"] == "not_possible"
    assert "stays f32 when the model and its inputs are made float64" in v["detail"]


def _recheck(got: float, want: float, low: float) -> tuple[Verification, dict[str, float]]:
    """One f32 output y = [want, 0.5]: PyTorch's float32 value of y[0] is ``low``, its float64
    one ``want``, SOLAR's float64 one ``got``; runs the widened float64 comparison."""
    document = {"tensors": [{"name": "y", "dtype": "f32", "shape": [2]}], "outputs": ["y"]}
    golden = {"y": np.array([low, 0.5], dtype=np.float32)}
    golden64 = {"y": np.array([want, 0.5])}
    got64 = {"y": np.array([got, 0.5])}
    compared = [compare_output("y", "f64", got64["y"], golden64["y"])]
    v64 = Verification("failed", "whole_program", "", outputs=compared)
    return conditioned_recheck(v64, document, document, golden, golden64, got64)


def test_the_float64_allowance_grows_with_the_frameworks_own_float32_error():
    # PyTorch's float32 y[0] = 1 (exact in f32), its float64 y[0] = 1 + 2^-10: its own error
    # E = 2^-10. Allowance = 1024 * (2^-53 / 2^-24) * E = 2^10 * 2^-29 * 2^-10 = 2^-29
    # ~ 1.863e-9. Plain f64 bound at y[0]: atol * scale + rtol * |y| with scale = max(1, 1 +
    # 2^-10) = 1.0009765625: (1e-12 + 1e-9) * 1.0009765625 ~ 1.002e-9. SOLAR off by 2e-9: over
    # the plain bound, under 1.002e-9 + 1.863e-9 = 2.865e-9.
    want = 1.0 + 2.0**-10
    plain = compare_output("y", "f64", np.array([want + 2e-9]), np.array([want]))
    assert not plain["passed"]
    v64, widened = _recheck(want + 2e-9, want, 1.0)
    assert widened == {"y": 2.0**-10}
    assert v64.status == "passed" and v64.outputs[0]["passed"]
    # atol becomes 1e-12 + 2^-29 / 1.0009765625 ~ 1.8626e-9
    assert v64.outputs[0]["atol"] == pytest.approx(1e-12 + 2.0**-29 / (1 + 2.0**-10), rel=1e-12)
    # off by 4e-9 > 2.865e-9: still failed, and nothing is reported as widened
    v64, widened = _recheck(want + 4e-9, want, 1.0)
    assert widened == {} and v64.status == "failed"


def test_a_well_conditioned_output_gets_no_allowance():
    # PyTorch's float32 and float64 values agree exactly (E = 0): a lowering error of 1e-6
    # (over the plain bound ~1e-9 * 1 + 1e-12) stays failed.
    v64, widened = _recheck(1.0 + 1e-6, 1.0, 1.0)
    assert widened == {} and v64.status == "failed"


def test_efficientnet_with_pooled_stages_passes_within_its_conditioning():
    # KernelBench level3/24-style: after the first stage's pool every activation is 1x1, so each
    # training-mode BatchNorm sees 2 values per channel and amplifies rounding by up to
    # 1 / sqrt(1e-5) ~ 316 (models/verify/efficientnet_pooled.py). Before the fix the float64
    # check failed at the plain f64 tolerance and the verdict was "a lowering bug".
    report = solar_torch.analyze_file(MODELS / "efficientnet_pooled.py")
    v = report.verification
    assert v["mode"] == "whole_program"
    assert not all(o["passed"] for o in v["outputs"]), report.summary()  # float32 fails
    c = v["conditioning"]
    assert c["result"] == "float64_agrees_within_conditioning", v["detail"]
    assert v["status"] == "passed"
    assert "the float64 runs agree within PyTorch's own float32 error" in v["detail"]
    # at least one float64 output needed the widened allowance (its atol is above 1e-12)
    assert any(o["atol"] > 1e-12 for o in c["float64_outputs"])
    assert all(o["passed"] for o in c["float64_outputs"])
    # the verdict names PyTorch's own float32 error (test below: over 1e-3)
    assert "its float32 run is up to " in v["detail"]


def test_pytorch_alone_disagrees_with_itself_on_the_pooled_efficientnet():
    # The same model by hand: PyTorch's float32 logits against its float64 logits (the same
    # float32 weights and inputs made float64) differ by more than 1e-3, over the f32 allowance
    # 1e-4 * |y| + 1e-5 * max(1, max|y|) for logits of size ~1.
    import copy
    import importlib.util

    spec = importlib.util.spec_from_file_location("m", MODELS / "efficientnet_pooled.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    torch.manual_seed(0)
    model = m.Model(*m.get_init_inputs())
    (x,) = m.get_inputs()
    model64 = copy.deepcopy(model).double()
    with torch.no_grad():
        y32 = model(x).double()
        y64 = model64(x.double())
    assert (y32 - y64).abs().max().item() > 1e-3


def test_bf16_golden_bits_read_as_float64():
    # bf16 is the high half of a float32: 0x3F80 -> 0x3F800000 = 1.0, 0xC000 -> 0xC0000000 =
    # -2.0, 0x3F81 -> 0x3F810000 = 1 + 2^-7 = 1.0078125.
    bits = np.array([0x3F80, 0xC000, 0x3F81], dtype=np.uint16)
    assert _as_float64(bits, "bf16").tolist() == [1.0, -2.0, 1.0078125]
    assert _as_float64(bits.view(np.int16), "bf16").tolist() == [1.0, -2.0, 1.0078125]
    assert _as_float64(np.array([0x38], dtype=np.uint8), "f8e4m3") is None


def test_an_f32_output_computed_through_bf16_is_compared_at_bf16s_tolerance(monkeypatch):
    # The product is computed in bf16, then made float32: two correct runs differ by bf16's
    # rounding (the framework rounds each bf16 op, SOLAR once per store), so the float32
    # output gets bf16's tolerance (rtol 2e-2, atol 1e-2). Lowered with 3.001 for 3.0, each
    # value moves by 1/3000 ~ 3.3e-4 of itself before its bf16 rounding (at most one bf16
    # step after it, 2^-7 ~ 7.8e-3 relative): within 2e-2, where float32's 1e-4 would fail.
    _changed_constant(monkeypatch, "* 3.0)", "* 3.001)")

    def f(x):
        return (x.to(torch.bfloat16) * 3.0).to(torch.float32) + 1.0

    torch.manual_seed(0)
    report = solar_torch.analyze(f, (torch.randn(4, 8),))
    v = report.verification
    assert v["status"] == "passed" and v.get("conditioning") is None, v["detail"]
    (out,) = v["outputs"]
    assert out["dtype"] == "f32"
    assert (out["rtol"], out["atol"]) == TOLERANCES["bf16"] == (2e-2, 1e-2)
    assert (
        "; 1 compared at the tolerance of a lower precision they were computed in (add f32 "
        "through bf16)"
    ) in v["detail"]


def test_an_input_in_bf16_does_not_widen_the_tolerance(monkeypatch):
    # Only values computed in a lower precision count: a bf16 input made float32 is exact on
    # both sides, so the float32 output keeps float32's tolerance and the changed constant
    # (3.3e-4 relative, over rtol 1e-4) fails, in float64 too.
    _changed_constant(monkeypatch, "* 3.0)", "* 3.001)")

    def f(x):
        return x.to(torch.float32) * 3.0

    torch.manual_seed(0)
    report = solar_torch.analyze(f, (torch.randn(4, 8).to(torch.bfloat16),))
    v = report.verification
    assert v["status"] == "failed", v["detail"]
    (out,) = v["outputs"]
    assert out["rtol"] == 1e-4 and "lower precision" not in v["detail"]
    assert "1 outside the tolerance: mul f32[4, 8] max_abs_err=" in v["detail"]


def test_the_lowest_precision_a_value_was_computed_in_by_hand():
    # y = f32(b) + x, b = bf16(a) * 2, a = x * 3 (f32); z = x * 2 (f32); w = f16(x) (an output
    # in f16 itself): y went through bf16, z did not, w is no more precise than what made it.
    t = lambda name, dtype: {"name": name, "dtype": dtype, "shape": [2]}  # noqa: E731
    document = {
        "tensors": [t("x", "f32"), t("a", "f32"), t("c", "bf16"), t("b", "bf16")]
        + [t("y", "f32"), t("z", "f32"), t("w", "f16")],
        "nodes": [
            {"op": "mul", "args": {"self": {"tensor": "x"}, "other": 3}, "outputs": ["a"]},
            {"op": "cast", "args": {"self": {"tensor": "a"}}, "outputs": ["c"]},
            {"op": "mul", "args": {"self": {"tensor": "c"}, "other": 2}, "outputs": ["b"]},
            {"op": "add", "args": {"xs": [{"tensor": "b"}, {"tensor": "x"}]}, "outputs": ["y"]},
            {"op": "mul", "args": {"self": {"tensor": "x"}, "other": 2}, "outputs": ["z"]},
            {"op": "cast", "args": {"self": {"tensor": "x"}}, "outputs": ["w"]},
        ],
        "outputs": ["y", "z", "w"],
    }
    assert lowest_precision_computed(document) == {"y": "bf16"}


def test_a_float64_recheck_over_the_budget_is_not_run_and_says_so(monkeypatch):
    # tanh(x) * 3.0 on f32[4, 8]: x, tanh, mul hold 3 x 32 x 4 = 384 B, within a budget of
    # 500 B; made float64 they would hold 3 x 32 x 8 = 768 B, over it: no recheck, said.
    _changed_constant(monkeypatch, "* 3.0)", "* 3.001)")

    def f(x):
        return torch.tanh(x) * 3.0

    torch.manual_seed(0)
    report = solar_torch.analyze(f, (torch.randn(4, 8),), verify_budget_mb=500e-6)
    v = report.verification
    assert v["mode"] == "whole_program" and v["status"] == "failed", v["detail"]
    assert v["conditioning"]["result"] == "not_possible"
    assert (
        "no float64 recheck: the float64 program would hold 768 B of tensors, over the "
        "verification budget of 500 B (--verify-budget-mb)"
    ) in v["detail"]


def test_transformers_experts_run_in_float64():
    # torch._grouped_mm has no float64 kernel on the CPU; transformers' experts made float64
    # take its per-expert fallback, so a MoE's float64 recheck can run (it raised "Expected
    # mat_a to be Float32, BFloat16 or Float16 matrix, got Double").
    pytest.importorskip("transformers")
    from transformers import Qwen3MoeConfig, Qwen3MoeForCausalLM

    from solar.torch.capture import to_float64

    config = Qwen3MoeConfig(
        vocab_size=64, hidden_size=32, intermediate_size=64, moe_intermediate_size=16,
        num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1, head_dim=16,
        num_experts=4, num_experts_per_tok=2,
    )  # fmt: skip
    torch.manual_seed(0)
    lm = Qwen3MoeForCausalLM(config).eval()
    ids = torch.randint(0, 64, (1, 5))
    with torch.no_grad():
        want = lm(input_ids=ids, use_cache=False).logits
        got = to_float64(lm)(input_ids=ids, use_cache=False).logits
    assert got.dtype == torch.float64
    assert torch.allclose(got.float(), want, rtol=1e-4, atol=1e-5)
