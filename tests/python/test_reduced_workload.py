"""A benchmark workload too large to verify whole is verified on a reduced workload of its
definition (docs/benchmarks.md, "How each workload is verified"): the same reference at var
axes of at most 16, its inputs made again, run whole; and the full-size program op by op. Where
no reduced workload can be made, the reason is said and the full-size program is verified per
op as before."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")

from solar import cli  # noqa: E402

GEMM = {
    "name": "gemm_n256_k256",
    "axes": {
        "M": {"type": "var"},
        "N": {"type": "const", "value": 256},
        "K": {"type": "const", "value": 256},
    },
    "inputs": {
        "A": {"shape": ["M", "K"], "dtype": "bfloat16"},
        "B": {"shape": ["N", "K"], "dtype": "bfloat16"},
    },
    "outputs": {"C": {"shape": ["M", "N"], "dtype": "bfloat16"}},
    "reference": "import torch\n\n\ndef run(A, B):\n    return A @ B.t()\n",
}


def _analyse(tmp_path, workloads: list[dict], budget_mb: str) -> list[dict]:
    folder = tmp_path / "gemm"
    folder.mkdir()
    (folder / "definition.json").write_text(json.dumps(GEMM))
    (folder / "workload.jsonl").write_text("".join(json.dumps(w) + "\n" for w in workloads))
    out = tmp_path / "out.json"
    argv = ["analyze", str(folder), "--verify-budget-mb", budget_mb, "--json", str(out)]
    assert cli.main(argv) == 0
    return [w["report"]["verification"] for w in json.loads(out.read_text())["workloads"]]


RANDOM = {"A": {"type": "random"}, "B": {"type": "random"}}


def test_a_workload_over_the_budget_is_verified_whole_on_a_reduced_workload(tmp_path):
    # M = 1024, in bf16: A [1024, 256] 524,288 B, B [256, 256] 131,072 B, its transpose
    # 131,072 B, C [1024, 256] 524,288 B: 1,310,720 B, over a budget of 1,000,000 B. At M = 16:
    # 8,192 + 131,072 + 131,072 + 8,192 = 278,528 B, within it: run whole.
    workload = {"uuid": "m1024", "axes": {"M": 1024}, "inputs": RANDOM}
    (v,) = _analyse(tmp_path, [workload], "1")
    assert v["status"] == "passed" and v["mode"] == "twin", v["detail"]
    assert v["why"] == (
        "the whole program holds 1.311 MB of tensors, over the verification budget of 1 MB "
        "(--verify-budget-mb): verified on a reduced workload of the same definition"
    )
    assert v["detail"].startswith(
        "verified on a reduced workload of the same definition (M 1024 -> 16): passed (1 "
        "output(s) compared with PyTorch on the same inputs); per op at full size: passed"
    )
    assert [o["shape"] for o in v["outputs"]] == [[16, 256]]  # the reduced workload's C


def test_no_reduced_workload_without_an_axis_to_shrink(tmp_path):
    # M = 16 already: nothing shrinks. Its 278,528 B (above) over a 270,000 B budget: per op,
    # as before, and the reason no reduced workload was made.
    workload = {"uuid": "m16", "axes": {"M": 16}, "inputs": RANDOM}
    (v,) = _analyse(tmp_path, [workload], "0.27")
    assert v["status"] == "passed" and v["mode"] == "per_op", v["detail"]
    assert v["why"].endswith("; no reduced workload (no var axis above 16 to shrink)")


def test_no_reduced_workload_when_an_input_is_read_from_a_file(tmp_path):
    # A's values come from a file: they are M = 1024's, not a smaller workload's.
    import torch
    from safetensors.torch import save_file

    folder = tmp_path / "data"
    folder.mkdir()
    save_file({"A": torch.randn(1024, 256).to(torch.bfloat16)}, str(folder / "a.safetensors"))
    given = {"type": "safetensors", "path": str(folder / "a.safetensors"), "tensor_key": "A"}
    workload = {"uuid": "m1024", "axes": {"M": 1024}, "inputs": {"A": given, "B": RANDOM["B"]}}
    (v,) = _analyse(tmp_path, [workload], "1")
    assert v["status"] == "passed" and v["mode"] == "per_op", v["detail"]
    assert v["why"].endswith(
        "; no reduced workload (input(s) A read from files hold the full workload's values)"
    )
