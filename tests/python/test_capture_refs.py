"""Every reference program captured (issue 28, item 3; docs/capture.md, "Programs written for a
GPU", "In-place updates of inputs", "Values of the data"): the models are
tests/python/models/refs/, each analysed as `solar analyze` does (built with FakeTensors first),
verified against PyTorch, and its MACs and bytes counted by hand. H100-SXM."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import solar  # noqa: E402

MODELS = Path(__file__).resolve().parent / "models" / "refs"
F32 = 4  # bytes


@functools.cache
def report(name: str) -> dict:
    data = solar.analyze_file(MODELS / f"{name}.py", hw="H100-SXM").data
    assert data["verification"]["status"] == "passed", data["verification"]
    assert data["verification"]["mode"] == "whole_program"
    return data


def macs(data: dict) -> int:
    return sum(n["macs"] for n in data["nodes"])


def notes(data: dict) -> list[str]:
    return data["verification"].get("notes", [])


def test_a_reference_written_for_cuda_runs_on_the_cpu_and_says_so_once():
    data = report("cuda_device")
    assert notes(data) == ["device 'cuda' in the reference mapped to the CPU, where SOLAR runs it"]
    # x + ones: fused reads x [4, 8] (128 B) and writes the sum (128 B): 256 B (the ones are
    # made on chip)
    assert data["bytes"]["fused"] == 4 * 8 * F32 * 2


def test_a_kv_cache_write_in_place_counts_only_the_rows_written():
    data = report("kv_write")
    # cache[:, 5] = k writes 2 x 16 f32 = 128 B into the [2, 64, 16] cache (8,192 B), which is
    # neither read nor written whole. Fused: read k 128 B and q 128 B, write the scores
    # [2] 8 B and the written rows 128 B: 392 B (not 392 + 2 x 8,192 for a functional copy).
    assert data["bytes"]["fused"] == 128 + 128 + 8 + 128
    outputs = [o["name"] for o in data["verification"]["outputs"]]
    assert "cache_written" in outputs  # the rows, checked against PyTorch's updated cache


def test_index_copy_into_a_state_counts_the_rows_it_writes():
    data = report("index_copy_state")
    # state.index_copy_(0, [3, 17], rows): 2 rows of 8 f32 = 64 B written into the [32, 8]
    # state (1,024 B). Fused: read rows 64 B, write rows * 2 64 B and the written rows 64 B:
    # 192 B.
    assert data["bytes"]["fused"] == 64 + 64 + 64


def test_a_row_written_through_another_name_then_read_counts_the_cache_read():
    data = report("kv_write_read")
    # s = cache; s[:, 3] = k; s.sum(): an in-place write of 4 f32 (16 B) into the [4, 64] cache
    # (1,024 B), then the whole updated cache read. Fused: read the cache 1,024 B and k 16 B,
    # write the rows written 16 B and the sum 4 B: 1,060 B (36 B before: the copy of the cache
    # was taken for dead, and the sum's read of the cache lost).
    assert data["bytes"]["fused"] == 1024 + 16 + 16 + 4
    # Unfused, as eager runs it: the write (k 16 B read, 16 B of rows written), the sum (1,024 B
    # read, 4 B written): 1,060 B. The output `cache_written` is the record of the rows written
    # in place, not a kernel of its own (1,092 B before: the rows counted twice); no copy of
    # the whole cache (an in-place kernel makes none).
    assert data["bytes"]["unfused"] == 32 + 1028
    assert data["bytes"]["cache_aware"] == 1024 + 16 + 16 + 4


def test_an_index_copy_then_a_read_of_the_state_writes_the_rows_in_place():
    data = report("index_copy_read")
    # cache.index_copy_(1, [3, 7], k): 4 x 2 f32 (32 B) written into the [4, 64] state
    # (1,024 B), then the whole state read. Fused: read the state 1,024 B, k 32 B and the index
    # 2 x 8 = 16 B, write the rows written 32 B and the sum 4 B: 1,108 B.
    assert data["bytes"]["fused"] == 1024 + 32 + 16 + 32 + 4
    # Unfused, as eager runs it: index_copy_ reads the index 16 B and k 32 B and writes 32 B of
    # the state in place (80 B); the sum reads 1,024 B and writes 4 B: 1,108 B. The rows are
    # written once: `cache_written` records them (1,172 B before, the rows counted again as a
    # copy of k, 32 + 32 B; 3,188 B before that: a scatter into a whole copy of the state).
    assert data["bytes"]["unfused"] == 80 + 1028
    record = next(n for n in data["nodes"] if n["name"] == "cache_written_copy")
    assert record["bytes_unfused"] == 0


def test_index_put_then_a_read_of_the_state_counts_the_rows_once():
    data = report("index_put_read")
    # cache[[1, 5]] = v: 2 rows of 16 f32 (128 B) written into the [8, 16] state (512 B), then
    # the whole state read. Eager: index_put_ reads the index 2 x 8 = 16 B and v 128 B and
    # writes the 2 rows 128 B (272 B); the sum reads 512 B and writes 4 B (516 B): 788 B.
    assert data["bytes"]["unfused"] == 16 + 128 + 128 + 512 + 4
    # Fused: read the state 512 B, v 128 B and the index 16 B, write the rows 128 B and the sum
    # 4 B: 788 B (every byte of the eager run is a graph input or output here).
    assert data["bytes"]["fused"] == 512 + 128 + 16 + 128 + 4


def test_one_row_broadcast_by_index_put_then_a_read_counts_the_rows_once():
    data = report("index_put_broadcast_read")
    # cache[[1, 5]] = v, v one row of 16 f32 (64 B) broadcast into 2 rows (128 B) of the [8, 16]
    # state (512 B), then the whole state read. Eager: index_put_ reads the index 2 x 8 = 16 B
    # and v 64 B and writes the 2 rows 128 B (208 B); the sum reads 512 B and writes 4 B
    # (516 B): 724 B. The record `cache_written` (v broadcast into the part: reads 64 B, writes
    # 128 B) is the in-place write's, not a kernel (before: an internal error in the capture, the
    # record's copy placed before the broadcast it reads; then 916 B, the rows counted twice).
    assert data["bytes"]["unfused"] == 16 + 64 + 128 + 512 + 4
    record = next(n for n in data["nodes"] if n["name"] == "cache_written_copy")
    assert record["bytes_unfused"] == 0
    # Fused: read the state 512 B, v 64 B and the index 16 B, write the rows 128 B and the sum
    # 4 B: 724 B.
    assert data["bytes"]["fused"] == 512 + 64 + 16 + 128 + 4


def test_a_slice_written_then_read_counts_the_rows_once():
    data = report("slice_write_read")
    # cache[2:4] = v: 2 rows of 16 f32 (128 B) written into the [8, 16] state (512 B), then the
    # whole state read. Eager: copy_ reads v 128 B and writes 128 B (256 B); the sum reads
    # 512 B and writes 4 B (516 B): 772 B.
    assert data["bytes"]["unfused"] == 128 + 128 + 512 + 4
    # Fused: read the state 512 B and v 128 B, write the rows 128 B and the sum 4 B: 772 B.
    assert data["bytes"]["fused"] == 512 + 128 + 128 + 4


def test_a_whole_state_updated_in_place_is_written_whole():
    data = report("state_update")
    # state.mul_(0.5).add_(x) writes all 64 f32 of the state: fused reads state 256 B and x
    # 256 B, writes the new state 256 B and x * 2 256 B: 1024 B
    assert data["bytes"]["fused"] == 4 * 256
    assert len(data["verification"]["outputs"]) == 2  # x * 2 and the new state, checked


def test_an_item_that_decides_a_size_is_specialised_and_named():
    data = report("item_size")
    # counts.max().item() = 5: x[:5] * 2 reads 5 x 8 f32 = 160 B and writes 160 B
    assert data["bytes"]["fused"] == 160 + 160
    (note,) = notes(data)
    assert "specialised on 1 value(s)" in note
    assert "item = 5 at item_size.py:10 in forward" in note


def test_varlen_attention_is_specialised_on_its_sequence_lengths():
    data = report("varlen_attention")
    # cu_seqlens [0, 3, 8]: sequences of 3 and 5 tokens, head width 16. Each sequence of L
    # tokens: q k^T L x L x 16 MACs, p v L x L x 16 MACs: 2 x 16 x (3^2 + 5^2) = 1088 MACs
    # (the sum of per-sequence squares, not 2 x 16 x 8^2 = 2048 for the packed batch)
    assert macs(data) == 2 * 16 * (3**2 + 5**2)
    (note,) = notes(data)
    assert "specialised on 4 value(s)" in note  # the two bounds of each of the two sequences
    for value in (0, 3, 8):
        assert f"__int__ = {value} at varlen_attention.py:12 in forward" in note


def test_vanilla_rnn_with_its_hidden_state_updated_in_forward_analyses_and_verifies():
    data = report("vanilla_rnn")
    # B=4, I=12, H=20, O=6: i2h B*H*(I+H) = 4*20*32 = 2560, h2o B*O*H = 4*6*20 = 480
    assert macs(data) == 2560 + 480
    outputs = {o["name"] for o in data["verification"]["outputs"]}
    assert len(outputs) == 2  # the output and the new hidden state


def test_vanilla_rnn_that_overwrites_then_rebinds_its_hidden_state_analyses_and_verifies():
    data = report("vanilla_rnn_initial_hidden")
    # B=4, I=12, H=20, O=6: i2h B*H*(I+H) = 4*20*32 = 2560, h2o B*O*H = 4*6*20 = 480
    assert macs(data) == 2560 + 480
    # fused bytes: read x 4*12 and h0 4*20 (the old hidden state is overwritten unread), the
    # weights 20*32 + 20 and 6*20 + 6; write the output 4*6 and the new hidden state 4*20:
    # 48 + 80 + 660 + 126 + 24 + 80 = 1,018 f32 = 4,072 B
    assert data["bytes"]["fused"] == (48 + 80 + 660 + 126 + 24 + 80) * F32
    outputs = {o["name"] for o in data["verification"]["outputs"]}
    assert len(outputs) == 2  # the output and the new hidden state (the dead write is not one)


def test_an_attribute_overwritten_in_place_is_an_output():
    data = report("attribute_in_place")
    # fc: 4 x 16 x 16 = 1,024 MACs
    assert macs(data) == 4 * 16 * 16
    # fused bytes: read x 4*16, the weight 16*16 and bias 16 (the old state is not read: it is
    # overwritten whole); write the state 4*16 and the output 4*16: 64 + 256 + 16 + 64 + 64 =
    # 464 f32 = 1,856 B
    assert data["bytes"]["fused"] == (64 + 256 + 16 + 64 + 64) * F32
    assert len(data["verification"]["outputs"]) == 2  # the output and the state's new value


@pytest.mark.parametrize(
    ("name", "fused"),
    [("vanilla_rnn_initial_hidden", 1018 * F32), ("attribute_in_place", 464 * F32)],
)
def test_make_fx_captures_an_attribute_written_in_place_as_export_does(monkeypatch, name, fused):
    from solar.torch import _trace

    def refuse(*args):
        raise RuntimeError("export refused")

    monkeypatch.setattr(_trace, "_trace_export", refuse)
    data = solar.analyze_file(MODELS / f"{name}.py", hw="H100-SXM").data
    assert data["verification"]["status"] == "passed", data["verification"]
    assert data["bytes"]["fused"] == fused  # the sums of the two tests above
    assert len(data["verification"]["outputs"]) == 2


def test_a_capture_that_still_fails_names_the_line_in_one_line():
    env = dict(os.environ)
    cmd = [sys.executable, "-m", "solar", "analyze", str(MODELS / "capture_fails.py")]
    run = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 1
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("solar analyze: error: capture failed at capture_fails.py:11")
    assert "nonexistent_op" in lines[0]


def test_a_data_dependent_size_on_fake_inputs_is_one_line_naming_the_call():
    from solar.torch._trace import DataDependentError
    from solar.torch.capture import capture, load_model_file

    model, inputs = load_model_file(MODELS / "item_size.py", fake=True)
    with pytest.raises(DataDependentError) as e:
        capture(model, inputs)
    message = str(e.value)
    assert "\n" not in message
    assert message.startswith("capture failed: torch.export: ")
    # the op and the line where the trace stopped
    assert message.endswith(
        "(the trace stopped at torch.TensorBase.item at item_size.py:10 in forward)"
    )


def test_the_users_frames_are_those_outside_torch_solar_and_the_standard_library():
    import contextlib
    import sysconfig

    import numpy
    import torch

    from solar.torch import _where

    # wherever each is installed (a venv, an editable checkout, the system Python)
    assert _where.is_library_file(torch.__file__)
    assert _where.is_library_file(_where.__file__)
    assert _where.is_library_file(contextlib.__file__)  # the standard library
    assert _where.is_library_file("<frozen importlib._bootstrap>")
    # a package installed beside torch (numpy here; transformers' modeling code in real use)
    # is not the standard library, even where site-packages sits inside it
    numpy_file = Path(numpy.__file__).resolve()
    assert Path(sysconfig.get_paths()["purelib"]).resolve() in numpy_file.parents
    assert not _where.is_library_file(numpy.__file__)
    assert not _where.is_library_file(str(MODELS / "item_size.py"))
    assert _where.user_location(str(MODELS / "item_size.py"), 10, "forward") == (
        "item_size.py:10 in forward"
    )


# name -> fused bytes, by hand (the cache itself, [2, 64, 16] f32 = 8,192 B, is never counted)
WRITES = {
    # read k 128 B and q 128 B, write the scores 8 B and the row written 128 B (above)
    "kv_write": 128 + 128 + 8 + 128,
    # cache[:, 4:6] = k, k [2, 2, 16] f32 = 256 B: read k 256 B, write its sums [2, 2] 16 B and
    # the rows written 256 B
    "kv_slice_write": 256 + 16 + 256,
}


@pytest.mark.parametrize("name", sorted(WRITES))
@pytest.mark.parametrize("tracer", ["torch.export", "make_fx"])
def test_both_tracers_capture_a_cache_write_as_the_rows_written(monkeypatch, name, tracer):
    from solar.torch import _trace

    if tracer == "make_fx":  # the fallback: functionalize's copy_ back into the input

        def refuse(*args):
            raise RuntimeError("export refused")

        monkeypatch.setattr(_trace, "_trace_export", refuse)
    data = solar.analyze_file(MODELS / f"{name}.py", hw="H100-SXM").data
    assert data["verification"]["status"] == "passed", data["verification"]
    assert data["bytes"]["fused"] == WRITES[name]
    assert "cache_written" in [o["name"] for o in data["verification"]["outputs"]]


def test_varlen_attention_with_item_is_specialised_like_int():
    data = report("varlen_attention_item")
    # as varlen_attention, its bounds read by .item(), which torch.export keeps as
    # aten._local_scalar_dense: cu_seqlens [0, 3, 8], head width 16, 2 x 16 x (3^2 + 5^2) =
    # 1088 MACs
    assert macs(data) == 2 * 16 * (3**2 + 5**2)
    (note,) = notes(data)
    assert "specialised on 3 value(s)" in note  # each bound read once
    for value in (0, 3, 8):
        assert f"item = {value} at varlen_attention_item.py:11 in" in note


def test_topk_indices_among_tied_keys_verify_up_to_ties():
    data = report("topk_ties")
    # every row's 8 probabilities are [a, b, a, b, a, b, a, b] with a > b: experts 0, 2, 4, 6
    # tie at the top, so any two distinct of them are a valid top-2; PyTorch and SOLAR pick
    # differently and the indices pass only because the keys they select are equal
    assert "verified up to ties in topk (getitem_1" in data["verification"]["detail"]


def test_tied_indices_are_accepted_only_when_they_select_equal_keys():
    from solar.verify.whole import _accept_tied_indices

    keys = {"k": np.array([[1.0, 0.0, 1.0, 1.0]])}  # experts 0, 2, 3 tie at the top
    topk = {"keys": "k", "dim": -1}
    cases = [
        ([[2, 3]], True),  # keys 1, 1: a valid pick among the ties
        ([[0, 1]], False),  # keys 1, 0: expert 1 is not a top-2 expert
        ([[2, 2]], False),  # keys 1, 1 but one expert twice
    ]
    for ours, passed in cases:
        compared = {"name": "idx", "passed": False}
        golden = {**keys, "idx": np.array([[0, 2]])}  # the framework's pick: keys 1, 1
        _accept_tied_indices(compared, topk, np.array(ours), golden)
        assert compared["passed"] is passed, ours


def test_the_topk_indices_are_found_once_per_check(monkeypatch):
    from solar.verify import whole
    from solar.verify.whole import topk_indices

    calls = []
    found = topk_indices

    def counted(document):
        calls.append(document)
        return found(document)

    monkeypatch.setattr(whole, "topk_indices", counted)
    data = solar.analyze_file(MODELS / "topk_ties.py", hw="H100-SXM").data
    assert "verified up to ties in topk" in data["verification"]["detail"]
    # one topk's indices: found once, by the check, which records their keys in the golden run
    # and accepts ties in the comparison with them (twice before: once for each)
    assert len(calls) == 1


@pytest.mark.parametrize("tracer", ["torch.export", "make_fx"])
def test_a_kv_cache_written_in_place_and_returned_counts_the_rows_once(monkeypatch, tracer):
    from solar.torch import _trace

    if tracer == "make_fx":  # the fallback: functionalize's copy_ back into the input

        def refuse(*args):
            raise RuntimeError("export refused")

        monkeypatch.setattr(_trace, "_trace_export", refuse)
    data = solar.analyze_file(MODELS / "kv_cache_returned.py", hw="H100-SXM").data
    assert data["verification"]["status"] == "passed", data["verification"]
    # key_cache[:, :, 7] = k and value_cache[:, :, 7] = v, k and v [2, 4, 8] f32 = 256 B each,
    # the caches [2, 4, 32, 8] (8,192 B each) returned. The returned cache is the input's own
    # storage: the program writes the rows once. Fused: read k and v, 2 x 256 B, write the
    # rows, 2 x 256 B: 1,024 B (not 1,024 + 2 x 8,192 for the caches copied whole)
    assert data["bytes"]["fused"] == 4 * 256
    outputs = [o["name"] for o in data["verification"]["outputs"]]
    assert outputs == ["key_cache_written", "value_cache_written"]  # the rows, checked
