"""``solar analyze DEFINITION`` (docs/benchmarks.md): FlashInfer-Bench "definition + workloads"
problems. Every definition here is written for this test (none is copied from a suite); every
number is worked out by hand in a comment.

The reading, the errors, the score and the CSV need no torch; the analyses capture ``run``
through PyTorch."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os

import pytest

from solar import cli
from solar.suites import definition as fmt

# ---------------------------------------------------------------------------------------------
# Definitions written for this test


def axes(*var: str, **const: int) -> dict:
    """The ``axes`` of a definition: the ``var`` axes named, then the ``const`` ones."""
    out: dict = {name: {"type": "var"} for name in var}
    out.update({name: {"type": "const", "value": value} for name, value in const.items()})
    return out


GEMM = {
    "name": "test_gemm_n64_k32",
    "axes": axes("M", N=64, K=32),
    "inputs": {
        "A": {"shape": ["M", "K"], "dtype": "bfloat16"},
        "B": {"shape": ["N", "K"], "dtype": "bfloat16"},
    },
    "outputs": {"C": {"shape": ["M", "N"], "dtype": "bfloat16"}},
    "reference": "import torch\n\ndef run(A, B):\n    return A @ B.t()\n",
}
GEMM_WORKLOADS = [
    {"uuid": "m4", "axes": {"M": 4}, "inputs": {"A": {"type": "random"}, "B": {"type": "random"}}},
    {
        "uuid": "m16",
        "axes": {"M": 16},
        "inputs": {"A": {"type": "random"}, "B": {"type": "random"}},
    },
]

# RMSNorm over tokens = batch * seq (an expr axis), eps a scalar input.
RMSNORM = {
    "name": "test_rmsnorm_h64",
    "axes": {
        "batch": {"type": "var"},
        "seq": {"type": "var"},
        "tokens": {"type": "expr", "expression": "batch * seq"},
        "hidden": {"type": "const", "value": 64},
    },
    "inputs": {
        "x": {"shape": ["tokens", "hidden"], "dtype": "float32"},
        "weight": {"shape": ["hidden"], "dtype": "float32"},
        "eps": {"shape": None, "dtype": "float32"},
    },
    "outputs": {"y": {"shape": ["tokens", "hidden"], "dtype": "float32"}},
    "reference": (
        "import torch\n\n"
        "def run(x, weight, eps):\n"
        "    rms = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)\n"
        "    return x * rms * weight\n"
    ),
}
RMSNORM_WORKLOADS = [
    {
        "uuid": "b2s3",
        "axes": {"batch": 2, "seq": 3},
        "inputs": {
            "x": {"type": "random"},
            "weight": {"type": "random"},
            "eps": {"type": "scalar", "value": 1e-6},
        },
    }
]

# A row gather whose indices come from the custom entry point (valid rows of the table).
EMBEDDING = {
    "name": "test_embedding_v100_d16",
    "axes": axes("tokens", vocab=100, dim=16),
    "custom_inputs_entrypoint": "make_ids",
    "inputs": {
        "ids": {"shape": ["tokens"], "dtype": "int64"},
        "table": {"shape": ["vocab", "dim"], "dtype": "float32"},
    },
    "outputs": {"out": {"shape": ["tokens", "dim"], "dtype": "float32"}},
    "reference": (
        "import torch\n\n"
        "def make_ids(axes_and_scalars, device):\n"
        "    n = axes_and_scalars['tokens']\n"
        "    return {'ids': torch.randperm(axes_and_scalars['vocab'], device=device)[:n]}\n\n"
        "def run(ids, table):\n"
        "    return table[ids]\n"
    ),
}
EMBEDDING_WORKLOADS = [
    {
        "uuid": "t8",
        "axes": {"tokens": 8},
        "inputs": {"ids": {"type": "custom"}, "table": {"type": "random"}},
    }
]

# Variable-length attention over cu_seqlens, its bounds read with .item() (FlashInfer-style
# prefill): the custom entry point packs sequences of 3 and 5 tokens.
VARLEN = {
    "name": "test_varlen_attention_item_d16",
    "axes": axes("batch", "tokens", dim=16),
    "custom_inputs_entrypoint": "make_cu",
    "inputs": {
        "q": {"shape": ["tokens", "dim"], "dtype": "float32"},
        "k": {"shape": ["tokens", "dim"], "dtype": "float32"},
        "v": {"shape": ["tokens", "dim"], "dtype": "float32"},
        "cu_seqlens": {"shape": ["batch_plus_one"], "dtype": "int64"},
    },
    "outputs": {"out": {"shape": ["tokens", "dim"], "dtype": "float32"}},
    "reference": (
        "import torch\n\n"
        "def make_cu(axes_and_scalars, device):\n"
        "    return {'cu_seqlens': torch.tensor([0, 3, 8], device=device)}\n\n"
        "def run(q, k, v, cu_seqlens):\n"
        "    outs = []\n"
        "    for b in range(cu_seqlens.shape[0] - 1):\n"
        "        s, e = cu_seqlens[b].item(), cu_seqlens[b + 1].item()\n"
        "        p = torch.softmax(q[s:e] @ k[s:e].transpose(0, 1), dim=-1)\n"
        "        outs.append(p @ v[s:e])\n"
        "    return torch.cat(outs)\n"
    ),
}
VARLEN["axes"]["batch_plus_one"] = {"type": "expr", "expression": "batch + 1"}
VARLEN_WORKLOADS = [
    {
        "uuid": "b2",
        "axes": {"batch": 2, "tokens": 8},
        "inputs": {
            "q": {"type": "random"},
            "k": {"type": "random"},
            "v": {"type": "random"},
            "cu_seqlens": {"type": "custom"},
        },
    }
]

# A GEMM plus a bias read from a safetensors file: its values decide no shape (float32).
F32 = {"shape": None, "dtype": "float32"}
BIAS = {
    **GEMM,
    "name": "test_gemm_bias_from_file",
    "inputs": {
        "A": {**F32, "shape": ["M", "K"]},
        "B": {**F32, "shape": ["N", "K"]},
        "bias": {**F32, "shape": ["N"]},
    },
    "outputs": {"C": {**F32, "shape": ["M", "N"]}},
    "reference": "import torch\n\ndef run(A, B, bias):\n    return A @ B.t() + bias\n",
}
SAFETENSORS = {"type": "safetensors", "path": "blob/bias.safetensors", "tensor_key": "bias"}
BIAS_WORKLOADS = [
    {
        "uuid": "m8",
        "axes": {"M": 8},
        "inputs": {"A": {"type": "random"}, "B": {"type": "random"}, "bias": SAFETENSORS},
    }
]

# Sequence lengths from a safetensors file whose values decide a slice: refused.
LENGTHS = {
    "name": "test_lengths_from_file",
    "axes": axes("batch", T=16),
    "inputs": {
        "x": {"shape": ["batch", "T"], "dtype": "float32"},
        "lengths": {"shape": ["batch"], "dtype": "int32"},
    },
    "outputs": {"y": {"shape": ["batch"], "dtype": "float32"}},
    "reference": (
        "import torch\n\n"
        "def run(x, lengths):\n"
        "    return torch.stack([x[b, : int(lengths[b])].sum() for b in range(x.shape[0])])\n"
    ),
}
LENGTHS_WORKLOADS = [
    {
        "uuid": "b2",
        "axes": {"batch": 2},
        "inputs": {
            "x": {"type": "random"},
            "lengths": {"type": "safetensors", "path": "blob/l.safetensors", "tensor_key": "len"},
        },
    }
]


def write(folder, definition, workloads) -> str:
    """``folder/definition.json`` and ``folder/workload.jsonl``; returns the folder."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "definition.json"), "w") as f:
        json.dump(definition, f, indent=1)
    with open(os.path.join(folder, "workload.jsonl"), "w") as f:
        f.writelines(json.dumps(w) + "\n" for w in workloads)
    return str(folder)


def solar(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main(list(args))
    return rc, out.getvalue(), err.getvalue()


# ---------------------------------------------------------------------------------------------
# Reading (no torch)


def test_axes_resolve_const_var_and_expr(tmp_path):
    problem = fmt.load(write(tmp_path / "rms", RMSNORM, RMSNORM_WORKLOADS))
    (workload,) = problem.workloads
    axes = fmt.resolve_axes(problem.definition, workload)
    # batch = 2, seq = 3 (var); tokens = batch * seq = 6 (expr); hidden = 64 (const)
    assert axes == {"batch": 2, "seq": 3, "tokens": 6, "hidden": 64}
    spec = problem.definition.inputs
    assert fmt.shape_of(spec["x"], axes) == (6, 64)
    assert fmt.shape_of(spec["eps"], axes) is None  # a scalar


def test_a_workload_trace_line_and_a_stem_named_workload_file(tmp_path):
    # FlashInfer-Bench's trace lines wrap the workload: {"definition", "workload", ...}; the
    # workloads of NAME.json may be NAME.jsonl beside it.
    (tmp_path / "gemm.json").write_text(json.dumps(GEMM))
    lines = [{"definition": GEMM["name"], "solution": None, "workload": w} for w in GEMM_WORKLOADS]
    (tmp_path / "gemm.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    problem = fmt.load(str(tmp_path / "gemm.json"))
    assert [w.uuid for w in problem.workloads] == ["m4", "m16"]


def test_select_by_uuid_and_index(tmp_path):
    problem = fmt.load(write(tmp_path / "g", GEMM, GEMM_WORKLOADS))
    assert [w.uuid for w in fmt.select(problem, ["1", "m4"])] == ["m16", "m4"]
    with pytest.raises(fmt.DefinitionError, match=r"--workload 7: .*index 0 to 1"):
        fmt.select(problem, ["7"])


def broken(**changes):
    data = json.loads(json.dumps(GEMM))
    for key, value in changes.items():
        if value is None:
            del data[key]
        else:
            data[key] = value
    return data


# (definition, workloads, the message's fragment after "definition.json: " or the line)
BAD = [
    (broken(reference=None), GEMM_WORKLOADS, "definition.json: reference: missing"),
    (
        broken(inputs={"A": {"shape": ["M", "K"], "dtype": "float7"}, "B": GEMM["inputs"]["B"]}),
        GEMM_WORKLOADS,
        "definition.json: inputs.A.dtype: unknown dtype 'float7'",
    ),
    (
        broken(reference="def forward(A, B):\n    return A\n"),
        GEMM_WORKLOADS,
        "definition.json: reference: defines no top-level function 'run'",
    ),
    (
        broken(reference="def run(B, A):\n    return A\n"),
        GEMM_WORKLOADS,
        "definition.json: reference: run(B, A) does not take the inputs in order (A, B)",
    ),
    (
        broken(axes={"M": {"type": "var"}, "N": {"type": "const", "value": 64}}),
        GEMM_WORKLOADS,
        "definition.json: inputs.A.shape: no axis named 'K'",
    ),
    (
        broken(axes={**GEMM["axes"], "P": {"type": "expr", "expression": "M + Q"}}),
        GEMM_WORKLOADS,
        "definition.json: axes.P.expression: no axis named 'Q'",
    ),
    (
        broken(axes={**GEMM["axes"], "P": {"type": "expr", "expression": "abs(M)"}}),
        GEMM_WORKLOADS,
        "definition.json: axes.P.expression: 'abs(M)': only integers",
    ),
    (
        GEMM,
        [{"uuid": "x", "axes": {}, "inputs": GEMM_WORKLOADS[0]["inputs"]}],
        "workload.jsonl:1: axes.M: the var axis has no value",
    ),
    (
        GEMM,
        [{"axes": {"M": 1}, "inputs": GEMM_WORKLOADS[0]["inputs"]}],
        "workload.jsonl:1: uuid: missing",
    ),
    (
        GEMM,
        [{"uuid": "x", "axes": {"M": 1}, "inputs": {"A": {"type": "random"}}}],
        "workload.jsonl:1: inputs.B: missing",
    ),
    (
        GEMM,
        [
            {
                "uuid": "x",
                "axes": {"M": 1},
                "inputs": {"A": {"type": "zeros"}, "B": {"type": "random"}},
            }
        ],
        "workload.jsonl:1: inputs.A.type: unknown input type 'zeros'",
    ),
    (
        GEMM,
        [
            {
                "uuid": "x",
                "axes": {"M": 1},
                "inputs": {"A": {"type": "custom"}, "B": {"type": "random"}},
            }
        ],
        "inputs.A.type: custom, but the definition has no custom_inputs_entrypoint",
    ),
    (GEMM, [*GEMM_WORKLOADS, GEMM_WORKLOADS[0]], "workload.jsonl:3: uuid: 'm4' is also at"),
    (GEMM, [], "workload.jsonl: no workloads"),
]


@pytest.mark.parametrize(("definition", "workloads", "message"), BAD, ids=[m for _, _, m in BAD])
def test_bad_input_is_one_line_naming_file_and_field(tmp_path, definition, workloads, message):
    folder = write(tmp_path / "d", definition, workloads)
    csv_path = tmp_path / "out.csv"
    rc, out, err = solar("analyze", folder, "--csv", str(csv_path))
    assert rc == 1
    assert err.count("\n") == 1 and err.startswith("solar analyze: error: "), err
    assert message in err, err
    assert "Traceback" not in err and out == ""
    assert not csv_path.exists()


def test_not_json_names_the_line(tmp_path):
    folder = write(tmp_path / "d", GEMM, GEMM_WORKLOADS)
    with open(os.path.join(folder, "workload.jsonl"), "a") as f:
        f.write("{not json\n")
    rc, _, err = solar("analyze", folder)
    assert rc == 1 and "workload.jsonl:3: not JSON" in err, err


def test_workload_flags_need_a_definition(tmp_path):
    rc, _, err = solar("analyze", "model.py", "--workload", "0")
    assert rc == 1 and "--workload needs a definition" in err, err


def test_model_file_options_are_refused_with_a_definition(tmp_path):
    folder = write(tmp_path / "d", GEMM, GEMM_WORKLOADS)
    rc, _, err = solar("analyze", folder, "--serve", "decode")
    assert rc == 1 and "--serve cannot be given with a definition" in err, err


# ---------------------------------------------------------------------------------------------
# The score and the measured file (no torch)


def test_sol_score_by_hand():
    # S = 1 / (1 + (T_kernel - T_SOL) / (T_baseline - T_SOL))
    # T_kernel 3, T_SOL 1, T_baseline 5: 1 / (1 + 2/4) = 1 / 1.5 = 2/3
    assert fmt.sol_score(3.0, 1.0, 5.0) == (pytest.approx(2 / 3), None)
    # at the SOL: 1 / (1 + 0) = 1; at the baseline: 1 / (1 + 1) = 0.5
    assert fmt.sol_score(1.0, 1.0, 5.0)[0] == 1.0
    assert fmt.sol_score(5.0, 1.0, 5.0)[0] == 0.5
    # undefined: no baseline, or a baseline at (or under) the SOL (a zero or negative divisor)
    assert fmt.sol_score(3.0, 1.0, None) == (None, "no baseline_ms")
    assert fmt.sol_score(3.0, 1.0, 1.0)[0] is None
    assert "T_baseline - T_SOL <= 0" in fmt.sol_score(3.0, 1.0, 0.5)[1]
    # headroom = T_kernel / T_SOL: 3 / 1 = 3; a zero SOL has none
    assert fmt.headroom(3.0, 1.0) == (3.0, None)
    assert fmt.headroom(3.0, 0.0) == (None, "the fused SOL is 0")


def test_measured_file_errors(tmp_path):
    problem = fmt.load(write(tmp_path / "g", GEMM, GEMM_WORKLOADS))
    cases = {
        "uuid,ms\nm4,1\n": "header 'uuid,ms'",
        "workload_uuid,latency_ms\nzz,1\n": "'zz' is not a workload",
        "workload_uuid,latency_ms\nm4,-1\n": "latency_ms '-1' is not a positive number",
        "workload_uuid,latency_ms\nm4,nan\n": "latency_ms 'nan' is not a positive number",
        "workload_uuid,latency_ms\nm4,1\nm4,2\n": "'m4' is measured twice",
    }
    for text, message in cases.items():
        path = tmp_path / "m.csv"
        path.write_text(text)
        with pytest.raises(fmt.DefinitionError, match=message):
            fmt.read_measured(str(path), problem)
    path.write_text("workload_uuid,latency_ms,baseline_ms\nm4,0.5,2\nm16,1.5,\n")
    measured = fmt.read_measured(str(path), problem)
    assert measured["m4"] == fmt.Measured(0.5, 2.0)
    assert measured["m16"] == fmt.Measured(1.5, None)


# ---------------------------------------------------------------------------------------------
# Analyses (PyTorch)


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def test_gemm_per_workload_macs_bytes_and_csv(tmp_path, torch):
    folder = write(tmp_path / "gemm", GEMM, GEMM_WORKLOADS)
    csv_path, json_path = tmp_path / "g.csv", tmp_path / "g.json"
    rc, out, err = solar("analyze", folder, "--csv", str(csv_path), "--json", str(json_path))
    assert rc == 0, err
    rows = list(csv.DictReader(csv_path.open()))
    assert list(rows[0]) == list(fmt.CSV_COLUMNS)
    assert [r["workload_uuid"] for r in rows] == ["m4", "m16"]
    assert [r["axes"] for r in rows] == ["M=4", "M=16"]
    # MACs = M * N * K: 4 * 64 * 32 = 8192; 16 * 64 * 32 = 32768
    assert [int(r["macs"]) for r in rows] == [8192, 32768]
    # bytes fused = (M*K + N*K + M*N) * 2 (bf16): (128 + 2048 + 256) * 2 = 4864;
    # (512 + 2048 + 1024) * 2 = 7168
    assert [float(r["bytes_fused"]) for r in rows] == [4864.0, 7168.0]
    assert all(r["definition"] == "test_gemm_n64_k32" for r in rows)
    assert all(r["verification"] == "passed" for r in rows)
    assert all(r["precision"].startswith("bf16") for r in rows), rows
    # the fused SOL is never above the unfused one
    assert all(float(r["sol_fused_ms"]) <= float(r["sol_unfused_ms"]) for r in rows)
    document = json.loads(json_path.read_text())
    assert document["definition"] == "test_gemm_n64_k32"
    assert [w["axes"] for w in document["workloads"]] == [
        {"M": 4, "N": 64, "K": 32},
        {"M": 16, "N": 64, "K": 32},
    ]
    assert document["workloads"][0]["report"]["totals"]["macs"] == 8192
    assert "test_gemm_n64_k32: 2 workload(s)" in out
    # captured once (M symbolic), M bound to 4 and 16: the MACs and bytes above are each
    # workload's own
    assert document["capture"] == {"captures": 1, "workloads": 2, "shared": 1}
    assert [r["capture"] for r in rows] == ["symbolic", "symbolic"]
    assert document["workloads"][1]["notes"] == [
        "capture shared: traced once with symbolic sizes on workload m4, bound here "
        "(A.shape[0] = 16)"
    ]
    assert "capture: 1 capture(s) for 2 workload(s), 1 on a capture shared" in out


def test_expr_axis_workloads_captured_once(tmp_path, torch):
    workloads = [
        {**RMSNORM_WORKLOADS[0], "uuid": uuid, "axes": {"batch": b, "seq": q}}
        for uuid, b, q in (("b2s3", 2, 3), ("b4s5", 4, 5))
    ]
    folder = write(tmp_path / "rms", RMSNORM, workloads)
    json_path = tmp_path / "r.json"
    rc, _, err = solar("analyze", folder, "--json", str(json_path))
    assert rc == 0, err
    document = json.loads(json_path.read_text())
    assert document["capture"] == {"captures": 1, "workloads": 2, "shared": 1}
    entries = document["workloads"]
    # tokens = batch * seq: 2 * 3 = 6 and 4 * 5 = 20 (x's first dimension, symbolic)
    assert [e["axes"]["tokens"] for e in entries] == [6, 20]
    # bytes fused = (x + weight + y) * 4 (f32): (6*64 + 64 + 6*64) * 4 = 832 * 4 = 3328;
    # (20*64 + 64 + 20*64) * 4 = (1280 + 64 + 1280) * 4 = 2624 * 4 = 10496
    assert [e["report"]["bytes"]["fused"] for e in entries] == [3328, 10496]
    assert [e["row"]["verification"] for e in entries] == ["passed", "passed"]
    assert "bound here (x.shape[0] = 20)" in entries[1]["notes"][-1], entries[1]["notes"]


def test_differing_scalars_are_captured_alone(tmp_path, torch):
    # eps is fixed in the captured program: workloads with two values share no capture
    workloads = [
        {**RMSNORM_WORKLOADS[0], "uuid": f"eps{i}", "inputs": {**inputs, "eps": eps}}
        for i, (inputs, eps) in enumerate(
            (RMSNORM_WORKLOADS[0]["inputs"], {"type": "scalar", "value": v}) for v in (1e-6, 1e-5)
        )
    ]
    folder = write(tmp_path / "rms", RMSNORM, workloads)
    json_path = tmp_path / "r.json"
    assert solar("analyze", folder, "--json", str(json_path))[0] == 0
    document = json.loads(json_path.read_text())
    assert document["capture"] == {"captures": 2, "workloads": 2, "shared": 0}
    assert [e["row"]["capture"] for e in document["workloads"]] == ["alone", "alone"]


def test_a_size_the_trace_does_not_hold_for_is_traced_again(tmp_path, torch):
    branch = {
        **GEMM,
        "reference": (
            "import torch\n\ndef run(A, B):\n"
            "    C = A @ B.t()\n"
            "    return C * 2 if A.shape[0] > 8 else C\n"
        ),
    }
    m32 = {**GEMM_WORKLOADS[1], "uuid": "m32", "axes": {"M": 32}}
    m12 = {**GEMM_WORKLOADS[1], "uuid": "m12", "axes": {"M": 12}}
    folder = write(tmp_path / "branch", branch, [*GEMM_WORKLOADS, m32, m12])
    csv_path, json_path = tmp_path / "b.csv", tmp_path / "b.json"
    rc, _, err = solar("analyze", folder, "--csv", str(csv_path), "--json", str(json_path))
    assert rc == 0, err
    document = json.loads(json_path.read_text())
    # the trace on m4 took the branch M <= 8 (it holds for M in [2, 8]); m16 is traced again
    # (M > 8, workloads remain), and m32 and m12 bind to that second trace
    assert document["capture"] == {"captures": 2, "workloads": 4, "shared": 2}
    rows = list(csv.DictReader(csv_path.open()))
    assert [r["capture"] for r in rows] == ["symbolic"] * 4
    notes = [w["notes"][-1] for w in document["workloads"]]
    assert (
        "traced once with symbolic sizes on workload m16, bound here (A.shape[0] = 12)"
        in (notes[3])
    )
    reports = [w["report"] for w in document["workloads"]]
    # MACs = M * N * K: 4 * 64 * 32 = 8192; 16 * 64 * 32 = 32768; 32 * 64 * 32 = 65536;
    # 12 * 64 * 32 = 24576; M > 8 doubles C: M * N other ops, 16 * 64 = 1024, 32 * 64 = 2048,
    # 12 * 64 = 768 (m4: none)
    assert [r["totals"]["macs"] for r in reports] == [8192, 32768, 65536, 24576]
    assert [r["totals"]["other_ops"] for r in reports] == [0, 1024, 2048, 768]
    assert all(w["row"]["verification"] == "passed" for w in document["workloads"])


def test_a_size_the_trace_does_not_hold_for_in_the_last_workload_is_captured_alone(tmp_path, torch):
    fixed = {
        **GEMM,
        "reference": ("import torch\n\ndef run(A, B):\n    return (A @ B.t()).reshape(4, -1)\n"),
    }
    folder = write(tmp_path / "fixed", fixed, GEMM_WORKLOADS)
    json_path = tmp_path / "f.json"
    assert solar("analyze", folder, "--json", str(json_path))[0] == 0
    document = json.loads(json_path.read_text())
    # torch.export fixes M at 4 in the trace of reshape(4, -1) on m4 (Dim.AUTO fixes a
    # dimension the trace's guards pin); m16, the group's last workload, is captured alone
    why = "the symbolic capture fixed A.shape[0] at 4, here 16"
    assert document["capture"]["captures"] == 2
    assert [w["row"]["capture"] for w in document["workloads"]] == ["symbolic", f"alone: {why}"]
    assert f"captured alone: {why}" in document["workloads"][1]["notes"]
    # MACs = M * N * K: 4 * 64 * 32 = 8192; 16 * 64 * 32 = 32768
    assert [w["report"]["totals"]["macs"] for w in document["workloads"]] == [8192, 32768]


def test_same_input_same_bytes(tmp_path, torch):
    folder = write(tmp_path / "gemm", GEMM, GEMM_WORKLOADS)
    outputs = []
    for name in ("a", "b"):
        path = tmp_path / f"{name}.json"
        assert solar("analyze", folder, "--workload", "m4", "--json", str(path))[0] == 0
        outputs.append(path.read_bytes())
    assert outputs[0] == outputs[1]


def test_measured_scores_with_undefined_as_null(tmp_path, torch):
    folder = write(tmp_path / "gemm", GEMM, GEMM_WORKLOADS)
    json_path, csv_path = tmp_path / "g.json", tmp_path / "g.csv"
    rc, _, err = solar("analyze", folder, "--json", str(json_path))
    assert rc == 0, err
    sol = {
        w["uuid"]: w["row"]["sol_fused_ms"] for w in json.loads(json_path.read_text())["workloads"]
    }
    # m4 measured at 3 x its SOL with a baseline at 5 x: S = 1 / (1 + 2/4) = 2/3, headroom 3;
    # m16 with no baseline: no score (null), headroom 2
    measured = tmp_path / "m.csv"
    measured.write_text(
        "workload_uuid,latency_ms,baseline_ms\n"
        f"m4,{3 * sol['m4']!r},{5 * sol['m4']!r}\n"
        f"m16,{2 * sol['m16']!r},\n"
    )
    rc, out, err = solar(
        "analyze",
        folder,
        "--measured",
        str(measured),
        "--json",
        str(json_path),
        "--csv",
        str(csv_path),
    )
    assert rc == 0, err
    rows = {w["uuid"]: w["row"] for w in json.loads(json_path.read_text())["workloads"]}
    assert rows["m4"]["sol_score"] == pytest.approx(2 / 3)
    assert rows["m4"]["headroom"] == pytest.approx(3.0)
    assert rows["m16"]["sol_score"] is None
    assert rows["m16"]["score_note"] == "no baseline_ms"
    assert rows["m16"]["headroom"] == pytest.approx(2.0)
    header = csv_path.read_text().splitlines()[0].split(",")
    assert header == [*fmt.CSV_COLUMNS, *fmt.SCORE_COLUMNS]
    assert "NaN" not in json_path.read_text() and "nan" not in csv_path.read_text()
    assert "score" in out and "headroom" in out


def analysed(tmp_path, definition: dict, workloads: list) -> dict:
    """The JSON entry of the one workload of ``definition``, analysed by ``solar analyze``."""
    folder = write(tmp_path / "def", definition, workloads)
    json_path = tmp_path / "report.json"
    rc, _, err = solar("analyze", folder, "--json", str(json_path))
    assert rc == 0, err
    (entry,) = json.loads(json_path.read_text())["workloads"]
    return entry


def test_rmsnorm_expr_axis_and_scalar(tmp_path, torch):
    entry = analysed(tmp_path, RMSNORM, RMSNORM_WORKLOADS)
    assert entry["axes"]["tokens"] == 6  # batch * seq = 2 * 3
    # bytes fused = (x + weight + y) * 4 (f32) = (6*64 + 64 + 6*64) * 4 = (384 + 64 + 384) * 4
    # = 3328
    assert entry["report"]["bytes"]["fused"] == 3328
    assert entry["row"]["verification"] == "passed"
    assert any("eps=1e-06" in n for n in entry["notes"]), entry["notes"]


def test_custom_inputs_entrypoint(tmp_path, torch):
    entry = analysed(tmp_path, EMBEDDING, EMBEDDING_WORKLOADS)
    assert entry["row"]["verification"] == "passed"
    assert any("made by make_ids(axes_and_scalars" in n for n in entry["notes"])
    # fused bytes: the 8 ids (int64) + the 8 rows gathered of 16 f32 (each index distinct,
    # --routing balanced) + the output 8 x 16 f32: 8*8 + 8*16*4 + 8*16*4 = 64 + 512 + 512 = 1088
    assert entry["report"]["bytes"]["fused"] == 1088


def test_varlen_attention_with_item_is_specialised(tmp_path, torch):
    entry = analysed(tmp_path, VARLEN, VARLEN_WORKLOADS)
    assert entry["row"]["verification"] == "passed"
    # cu_seqlens [0, 3, 8], head width 16: per sequence of L tokens q k^T and p v are L x L x 16
    # MACs each: 2 x 16 x (3^2 + 5^2) = 1088 (not 2 x 16 x 8^2 = 2048 for the packed batch)
    assert entry["report"]["totals"]["macs"] == 2 * 16 * (3**2 + 5**2)
    (note,) = entry["report"]["verification"]["notes"]
    assert "specialised on 4 value(s)" in note, note
    for value in (0, 3, 8):
        assert f"item = {value} at " in note, note


def test_values_that_decide_the_program_are_traced_on_each_workload_at_once(
    tmp_path, torch, monkeypatch
):
    from solar.torch import _trace

    # the custom entry point splits the tokens into `batch` equal sequences
    varlen = {
        **VARLEN,
        "reference": VARLEN["reference"].replace(
            "torch.tensor([0, 3, 8], device=device)",
            "torch.tensor([axes_and_scalars['tokens'] * i // axes_and_scalars['batch']"
            " for i in range(axes_and_scalars['batch'] + 1)], device=device)",
        ),
    }
    sizes = (("b2t8", 2, 8), ("b2t6", 2, 6), ("b3t9", 3, 9))
    workloads = [
        {**VARLEN_WORKLOADS[0], "uuid": uuid, "axes": {"batch": b, "tokens": t}}
        for uuid, b, t in sizes
    ]
    exports = []
    export = _trace._trace_export
    monkeypatch.setattr(
        _trace, "_trace_export", lambda *a, **k: exports.append(1) or export(*a, **k)
    )
    folder = write(tmp_path / "varlen", varlen, workloads)
    json_path = tmp_path / "v.json"
    rc, _, err = solar("analyze", folder, "--json", str(json_path))
    assert rc == 0, err
    entries = json.loads(json_path.read_text())["workloads"]
    # cu_seqlens [0, 4, 8], [0, 3, 6], [0, 3, 6, 9]; MACs 2 x 16 x (sum of L^2):
    # 2 x 16 x (16 + 16) = 1024; 2 x 16 x (9 + 9) = 576; 2 x 16 x (9 + 9 + 9) = 864
    assert [e["report"]["totals"]["macs"] for e in entries] == [1024, 576, 864]
    assert all(e["row"]["verification"] == "passed" for e in entries)
    # b2t8's symbolic trace, on FakeTensors, stopped where it read the bounds (.item()): each
    # workload, b2t8 too, is then traced on its own values at once, on real inputs
    why = (
        "no symbolic capture (values of the data decide the program: each workload is traced "
        "on its own values)"
    )
    assert [e["row"]["capture"] for e in entries] == [f"alone: {why}"] * 3
    # two .item() a sequence: 2 x 2 = 4, 2 x 2 = 4, 2 x 3 = 6 values
    for entry, count in zip(entries, (4, 4, 6), strict=True):
        notes = entry["report"]["verification"]["notes"]
        assert any(f"specialised on {count} value(s)" in n for n in notes), notes
    # torch.export runs: b2t8's trace with symbolic sizes on FakeTensors (stopped at .item())
    # and one trace on the recorded values each for b2t8, b2t6 and b3t9: 1 + 3 = 4 (each
    # workload's own export with unbacked sizes would make it 6)
    assert len(exports) == 4


def test_custom_entrypoint_with_the_wrong_shape(tmp_path, torch):
    bad = json.loads(json.dumps(EMBEDDING))
    bad["reference"] = bad["reference"].replace("[:n]", "[: n + 1]")
    folder = write(tmp_path / "emb", bad, EMBEDDING_WORKLOADS)
    rc, _, err = solar("analyze", folder)
    assert rc == 1 and "inputs.ids: the custom input has shape [9], not [8]" in err, err


def test_safetensors_input_stands_in_with_a_note(tmp_path, torch):
    entry = analysed(tmp_path, BIAS, BIAS_WORKLOADS)
    assert any(
        "its file blob/bias.safetensors (key 'bias') is not there: a tensor of its shape" in n
        for n in entry["notes"]
    ), entry["notes"]
    assert entry["row"]["inputs"] == ""  # nothing built: a stand-in whose values decide nothing
    # bytes fused = (A + B + bias + C) * 4 = (8*32 + 64*32 + 64 + 8*64) * 4
    # = (256 + 2048 + 64 + 512) * 4 = 11520; MACs = 8 * 64 * 32 = 16384
    assert entry["report"]["bytes"]["fused"] == 11520
    assert entry["report"]["totals"]["macs"] == 16384


def test_safetensors_values_deciding_a_shape_are_refused(tmp_path, torch):
    folder = write(tmp_path / "len", LENGTHS, LENGTHS_WORKLOADS)
    rc, out, err = solar("analyze", folder)
    assert rc == 1
    assert err.count("\n") == 1, err
    assert "inputs.lengths: its values decide a shape (Tensor.__int__ in run)" in err, err
    assert "its file blob/l.safetensors is not there" in err, err


def test_fp8_inputs_by_hand(tmp_path, torch):
    fp8 = {
        **GEMM,
        "name": "test_gemm_fp8",
        "inputs": {
            "A": {"shape": ["M", "K"], "dtype": "float8_e4m3fn"},
            "B": {"shape": ["N", "K"], "dtype": "float8_e4m3fn"},
        },
        "reference": (
            "import torch\n\ndef run(A, B):\n"
            "    return A.to(torch.bfloat16) @ B.to(torch.bfloat16).t()\n"
        ),
    }
    entry = analysed(tmp_path, fp8, GEMM_WORKLOADS[:1])
    # MACs = M * N * K = 4 * 64 * 32 = 8192; bytes fused = A and B in fp8 (1 byte), C in bf16:
    # 4*32 + 64*32 + 4*64*2 = 128 + 2048 + 512 = 2688
    assert entry["report"]["totals"]["macs"] == 8192
    assert entry["report"]["bytes"]["fused"] == 2688
    assert entry["row"]["verification"] == "passed"


def test_a_failing_run_is_one_line_naming_the_workload(tmp_path, torch):
    failing = {**GEMM, "reference": "def run(A, B):\n    raise RuntimeError('boom')\n"}
    folder = write(tmp_path / "f", failing, GEMM_WORKLOADS)
    rc, out, err = solar("analyze", folder, "--workload", "m16")
    assert rc == 1 and err.count("\n") == 1, err
    assert "workload.jsonl:2 (workload m16): " in err and "RuntimeError: boom" in err, err


def test_json_to_stdout_and_suite_only(tmp_path, torch):
    folder = write(tmp_path / "g", GEMM, GEMM_WORKLOADS)
    rc, out, _ = solar("analyze", folder, "--workload", "0", "--json", "-")
    assert rc == 0
    assert [w["uuid"] for w in json.loads(out)["workloads"]] == ["m4"]
    rc, out, _ = solar("analyze", folder, "--suite-only")
    assert rc == 0
    assert out.startswith("test_gemm_n64_k32: 2 workload(s)\n")  # no workload's own table
    assert "fidelity  SOL time" not in out


def test_a_reference_written_for_cuda_runs_on_the_cpu(tmp_path, torch):
    cuda = {
        **GEMM,
        "reference": (
            "import torch\n\ndef run(A, B):\n"
            "    bias = torch.zeros(B.shape[0], dtype=A.dtype, device='cuda')\n"
            "    return A.cuda() @ B.to('cuda').t() + bias.to(torch.device('cuda'))\n"
        ),
    }
    entry = analysed(tmp_path, cuda, GEMM_WORKLOADS[:1])
    assert "device 'cuda' in the reference mapped to the CPU, where SOLAR runs it" in entry["notes"]
    assert entry["row"]["verification"] == "passed"
    # MACs = M * N * K = 4 * 64 * 32 = 8192 (the bias is made inside run: no input bytes)
    assert entry["report"]["totals"]["macs"] == 8192


def test_a_size_of_one_is_captured_alone_and_not_traced_symbolically(tmp_path, torch):
    # export fixes a dimension of size 1: the symbolic capture is made on m4 (the group's first
    # workload with M >= 2), m16 binds to it, m1 is captured alone
    m1 = {**GEMM_WORKLOADS[0], "uuid": "m1", "axes": {"M": 1}}
    folder = write(tmp_path / "gemm", GEMM, [m1, *GEMM_WORKLOADS])
    json_path = tmp_path / "g.json"
    assert solar("analyze", folder, "--json", str(json_path))[0] == 0
    document = json.loads(json_path.read_text())
    assert document["capture"] == {"captures": 2, "workloads": 3, "shared": 1}
    cells = [w["row"]["capture"] for w in document["workloads"]]
    why = "the symbolic capture holds for A.shape[0] in [2, inf), here 1"
    assert cells == [f"alone: {why}", "symbolic", "symbolic"]
    assert f"captured alone: {why}" in document["workloads"][0]["notes"]
    # MACs = M * N * K: 1 * 64 * 32 = 2048, 4 * 64 * 32 = 8192, 16 * 64 * 32 = 32768
    assert [w["report"]["totals"]["macs"] for w in document["workloads"]] == [2048, 8192, 32768]


# ---------------------------------------------------------------------------------------------
# Precision for kernel benchmarks (docs/benchmarks.md, "Precision")

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "benchmarks")


@pytest.mark.parametrize(
    ("policy", "m256_us", "m4096_us", "precision"),
    [
        # The fp32 GEMM (examples/benchmarks/gemm_fp32: N 1024, K 512) on an H100 SXM.
        # FLOPs 2 x M x 1024 x 512: M 256, 268,435,456; M 4096, 4,294,967,296.
        # Bytes (A, B, C in fp32, 4 B): (256 x 512 + 1024 x 512 + 256 x 1024) x 4 = 3,670,016;
        # (4096 x 512 + 1024 x 512 + 4096 x 1024) x 4 = 27,262,976; over 3.35e12 B/s: 1.0955 us
        # and 8.1382 us.
        # As PyTorch runs the reference: fp32 on the CUDA cores at 67e12 FLOP/s: compute bound,
        # 268,435,456 / 67e12 = 4.0065 us; 4,294,967,296 / 67e12 = 64.104 us.
        ("pytorch-cuda-default", 4.0065, 64.104, "fp32 vector"),
        # TF32 tensor cores at 494.5e12: 0.5428 us < 1.0955 us (memory bound); 4,294,967,296 /
        # 494.5e12 = 8.6855 us > 8.1382 us (still compute bound).
        ("tf32", 1.0955, 8.6855, "tf32 tensor"),
        # bf16 tensor cores at 989.5e12: 4.3405 us < 8.1382 us: both memory bound. The bytes stay
        # fp32 (the definition's inputs and output), so no faster precision moves the SOL below.
        ("bf16", 1.0955, 8.1382, "bf16 tensor"),
        ("fp8", 1.0955, 8.1382, "fp8 tensor"),
    ],
)
def test_the_policy_moves_an_fp32_gemms_sol(tmp_path, torch, policy, m256_us, m4096_us, precision):
    csv_path = tmp_path / "g.csv"
    folder = os.path.join(EXAMPLES, "gemm_fp32")
    args = ("analyze", folder, "--policy", policy, "--no-verify", "--csv", str(csv_path))
    rc, _, err = solar(*args)
    assert rc == 0, err
    rows = list(csv.DictReader(csv_path.open()))
    assert [float(r["bytes_fused"]) for r in rows] == [3_670_016.0, 27_262_976.0]
    fused_us = [float(r["sol_fused_ms"]) * 1e3 for r in rows]
    assert fused_us == pytest.approx([m256_us, m4096_us], rel=1e-4)
    assert all(r["precision"].startswith(precision) for r in rows), rows
    assert all(r["precision"] == rows[0]["precision"] for r in rows)


# ---------------------------------------------------------------------------------------------
# A folder of definitions: solar analyze SUITE (one process)


def test_a_folder_of_definitions_gives_each_definitions_rows_in_one_process(tmp_path, torch):
    suite = tmp_path / "suite"
    gemm = write(suite / "a_gemm", GEMM, GEMM_WORKLOADS)
    failing = {
        **GEMM,
        "name": "test_failing",
        "reference": "def run(A, B):\n    raise ValueError('boom')\n",
    }
    write(suite / "b_failing", failing, GEMM_WORKLOADS)
    rmsnorm = write(suite / "c_rmsnorm", RMSNORM, RMSNORM_WORKLOADS)
    (suite / "notes").mkdir()  # a folder without a definition: not one of the suite
    alone = []
    for folder, name in ((gemm, "a"), (rmsnorm, "c")):
        path = tmp_path / f"{name}.csv"
        assert solar("analyze", folder, "--suite-only", "--csv", str(path))[0] == 0
        alone.append(path.read_text())
    path, times = tmp_path / "suite.csv", tmp_path / "times.json"
    rc, out, err = solar(
        "analyze", str(suite), "--suite-only", "--csv", str(path), "--stage-times", str(times)
    )
    # the failing definition is its one line and exit code 1; the others are analysed
    assert rc == 1
    assert err.count("\n") == 1 and "b_failing" in err and "ValueError: boom" in err, err
    # the same rows as each definition alone, byte for byte, under one header
    header = alone[0].splitlines(keepends=True)[0]
    bodies = "".join(text.split("\n", 1)[1] for text in alone)
    assert path.read_text() == header + bodies
    assert "test_gemm_n64_k32: 2 workload(s)" in out and "test_rmsnorm_h64:" in out
    count = len(GEMM_WORKLOADS) + len(RMSNORM_WORKLOADS)
    assert f"3 definition(s), 2 analysed ({count} workload(s)), 1 failed: b_failing" in out
    per = json.loads(times.read_text())["definitions"]
    assert sorted(os.path.basename(p) for p in per) == ["a_gemm", "b_failing", "c_rmsnorm"]


def test_workload_options_are_refused_with_a_folder_of_definitions(tmp_path):
    write(tmp_path / "suite" / "a", GEMM, GEMM_WORKLOADS)
    rc, _, err = solar("analyze", str(tmp_path / "suite"), "--workload", "0")
    assert rc == 1 and "--workload names the workloads of one definition" in err, err


def test_per_op_check_draws_packed_fp4_as_bytes(torch):
    from solar.torch import _per_op

    # no cast to float4_e2m1fn_x2 exists in torch: the draw is uniform bytes viewed as it
    drawn = _per_op._random([3, 4], "f4e2m1x2", torch.Generator().manual_seed(0))
    assert drawn.dtype == torch.float4_e2m1fn_x2 and list(drawn.shape) == [3, 4]


# The magnitude spectrum of 4 real signals of 64 points (issue 28: an FFT in a definition's
# reference).
RFFT_MAGNITUDE = {
    "name": "test_rfft_magnitude_n64",
    "axes": axes("batch", N=64, H=33),
    "inputs": {"x": {"shape": ["batch", "N"], "dtype": "float32"}},
    "outputs": {"y": {"shape": ["batch", "H"], "dtype": "float32"}},
    "reference": "import torch\n\ndef run(x):\n    return torch.fft.rfft(x, dim=-1).abs()\n",
}
RFFT_MAGNITUDE_WORKLOADS = [
    {"uuid": "b4", "axes": {"batch": 4}, "inputs": {"x": {"type": "random"}}}
]


def test_rfft_reference_ops_and_bytes_by_hand(tmp_path, torch):
    entry = analysed(tmp_path, RFFT_MAGNITUDE, RFFT_MAGNITUDE_WORKLOADS)
    assert entry["row"]["verification"] == "passed"
    (rfft,) = [n for n in entry["report"]["nodes"] if n["op"] == "rfft"]
    # 4 transforms of N = 64 = 2^6 real points (m = 6, (-1)^m = 1), Johnson & Frigo's real count
    # times 27: 51 * 64 * 6 - 89 * 64 - 27 * 6 - 3 * 6 + 8 + 162 = 19584 - 5696 - 162 - 18 + 170
    # = 13878 = 27 * 514: 514 each (the real split radix's 2 * 64 * 6 - 4 * 64 + 6 = 518 less
    # 4), 4 * 514 = 2056 ops, no MACs
    assert rfft["other_ops"] == 2056
    assert rfft["macs"] == 0
    # bytes fused = x (4 * 64 * 4 B = 1024) + y (4 * 33 * 4 B = 528) = 1552; the spectrum
    # (4 * 33 * 8 B, c64) stays on chip
    assert entry["report"]["bytes"]["fused"] == 1552


def test_inputs_past_the_machines_memory_are_refused_before_any_allocation(tmp_path, torch):
    from solar.torch import definition as tdef

    # N = K = 2^20 bf16 (2 bytes): B is 2^40 x 2 = 2,199,023,255,552 B = 2.199 TB, A at M = 4 is
    # 4 x 2^20 x 2 = 8,388,608 B = 8.389 MB: 2,199,031,644,160 B = 2.199 TB in all
    huge = {**GEMM, "axes": axes("M", N=2**20, K=2**20)}
    folder = write(tmp_path / "h", huge, GEMM_WORKLOADS[:1])
    problem = fmt.load(folder)
    (workload,) = problem.workloads
    named = fmt.resolve_axes(problem.definition, workload)
    with pytest.raises(fmt.DefinitionError) as e:
        tdef.check_input_memory(problem.definition, workload, named, memory=4 * 10**12)
    assert str(e.value).endswith(
        "workload.jsonl:1: the inputs need 2.199 TB (B 2.199 TB, A 8.389 MB), more "
        "than half of this machine's 4 TB of memory; SOLAR runs the reference on them, so "
        "nothing was allocated (run a workload with smaller axes)"
    )
    # half of the memory or less is made: 2.2 TB of inputs fit in 4.4 TB
    tdef.check_input_memory(problem.definition, workload, named, memory=4_398_063_288_320)
    # through the command line the inputs are FakeTensors (issue 38: captured without running
    # at full size) and nothing is allocated: analysed, verified per op at reduced size (M = 4
    # has nothing to shrink), in a child whose peak memory is a fraction of one input
    entry, peak = analysed_in_a_child(folder)
    assert entry["row"]["verification"] == "passed"
    assert entry["report"]["verification"]["mode"] == "per_op"
    # MACs M x N x K = 4 x 2^20 x 2^20 = 2^42 = 4,398,046,511,104
    assert entry["report"]["totals"]["macs"] == 4 * 2**40
    assert peak < 2 * 10**9, peak  # B alone is 2.199 TB


# Attention written plainly (scores materialised), as attention-backward references are: small
# inputs, an intermediate of L x L per head (issue 38, family 8: killed at 24 GB).
PLAIN_ATTENTION = {
    "name": "test_plain_attention_h4_d64",
    "axes": axes("L", H=4, D=64),
    "inputs": {
        "q": {"shape": ["H", "L", "D"], "dtype": "bfloat16"},
        "k": {"shape": ["H", "L", "D"], "dtype": "bfloat16"},
        "v": {"shape": ["H", "L", "D"], "dtype": "bfloat16"},
    },
    "outputs": {"o": {"shape": ["H", "L", "D"], "dtype": "bfloat16"}},
    "reference": (
        "import torch\n\n"
        "def run(q, k, v):\n"
        "    scores = (q.float() @ k.float().transpose(1, 2)) * 0.125\n"
        "    return (scores.softmax(-1) @ v.float()).to(q.dtype)\n"
    ),
}


def test_a_reference_past_the_machines_memory_is_refused_from_fake_tensors(tmp_path, torch):
    from solar.torch import definition as tdef

    # L = 2^16: each input 4 x 2^16 x 64 x 2 B = 33,554,432 B (33.55 MB, 100.7 MB the three);
    # the scores are 4 x 2^16 x 2^16 x 4 B = 68,719,476,736 B (68.72 GB), made by the matmul
    # (bmm) at line 4 of the reference (line 1 the import). The peak is at the last product: the
    # scaled scores and their softmax (2 x 68,719,476,736 B), the bf16 inputs (100,663,296 B), v
    # as float32 and the product's float32 output (67,108,864 B each): 137,673,834,496 B
    wide = [
        {"uuid": "l65536", "axes": {"L": 2**16}, "inputs": {n: {"type": "random"} for n in "qkv"}}
    ]
    folder = write(tmp_path / "a", PLAIN_ATTENTION, wide)
    problem = fmt.load(folder)
    (workload,) = problem.workloads
    namespace = tdef.reference_namespace(problem.definition)
    with pytest.raises(fmt.DefinitionError) as e:
        tdef.check_reference_memory(problem.definition, workload, namespace, memory=10**11)
    message = str(e.value)
    assert "the reference's tensors need 137.7 GB at once" in message, message
    assert message.endswith(
        "more than half of this machine's 100 GB of memory: found on fake tensors, so nothing "
        "was allocated (run a workload with smaller axes)"
    ), message
    assert "(the largest it makes 68.72 GB, by bmm at line 4)" in message, message
    # the inputs alone (100.7 MB) pass their own check
    tdef.check_input_memory(
        problem.definition, workload, fmt.resolve_axes(problem.definition, workload), memory=10**11
    )
    # the command line captures it on FakeTensors (no value decides its sizes) and never runs it
    # at full size: analysed, verified on a reduced workload (L 65536 -> 16) and per op at
    # reduced size, in a child whose peak memory is a fraction of the 68.72 GB of scores
    entry, peak = analysed_in_a_child(folder)
    verification = entry["report"]["verification"]
    assert entry["row"]["verification"] == "passed" and verification["mode"] == "twin"
    assert "(L 65536 -> 16)" in verification["detail"], verification["detail"]
    # MACs: two products of H x L x L x D = 4 x 2^16 x 2^16 x 64 = 2^40 each: 2^41
    assert entry["report"]["totals"]["macs"] == 2**41
    assert peak < 2 * 10**9, peak
    # L = 64: 4 x 64 x 64 x 4 B = 65,536 B of scores: analysed
    small = [{"uuid": "l64", "axes": {"L": 64}, "inputs": {n: {"type": "random"} for n in "qkv"}}]
    entry = analysed(tmp_path, PLAIN_ATTENTION, small)
    assert entry["row"]["verification"] == "passed"


# A constant made inside run (torch.tensor), lifted by export into the capture: traced on
# FakeTensors its value is fake, so a workload verified whole is captured on real inputs.
SCALE_BY_CONSTANT = {
    "name": "test_scale_by_constant_d4",
    "axes": axes("B", D=4),
    "inputs": {"x": {"shape": ["B", "D"], "dtype": "float32"}},
    "outputs": {"y": {"shape": ["B", "D"], "dtype": "float32"}},
    "reference": (
        "import torch\n\ndef run(x):\n    return x * torch.tensor([1.0, 2.0, 3.0, 4.0])\n"
    ),
}


def test_a_lifted_constant_is_verified_on_real_inputs(tmp_path, torch):
    workloads = [
        {"uuid": f"b{b}", "axes": {"B": b}, "inputs": {"x": {"type": "random"}}} for b in (8, 32)
    ]
    folder = write(tmp_path / "c", SCALE_BY_CONSTANT, workloads)
    json_path = tmp_path / "c.json"
    rc, _, err = solar("analyze", folder, "--json", str(json_path))
    assert rc == 0, err
    document = json.loads(json_path.read_text())
    # captures: the group's symbolic trace on FakeTensors (its constant fake: dropped), then
    # the same on real inputs, which both workloads bind to: 2 captures, 1 shared
    assert document["capture"] == {"captures": 2, "shared": 1, "workloads": 2}
    for entry, b in zip(document["workloads"], (8, 32), strict=True):
        verification = entry["report"]["verification"]
        # compared whole with PyTorch's output: the constant's real values [1, 2, 3, 4]
        assert verification["mode"] == "whole_program" and entry["row"]["verification"] == "passed"
        # bytes fused = x (b x 4 x 4 B) + the constant (4 x 4 B) + y (b x 4 x 4 B):
        # b8: 128 + 16 + 128 = 272; b32: 512 + 16 + 512 = 1040
        assert entry["report"]["bytes"]["fused"] == 32 * b + 16


def test_a_custom_entry_point_that_reads_values_makes_the_inputs_for_real(tmp_path, torch):
    # int() of a tensor it drew (the least of a permutation of {0, 1}: 0): FakeTensors hold no
    # value, so the inputs are made for real and the note says why
    reading = json.loads(json.dumps(EMBEDDING))
    reading["reference"] = reading["reference"].replace(
        "    n = axes_and_scalars['tokens']\n",
        "    n = axes_and_scalars['tokens'] + int(torch.randperm(2).min())\n",
    )
    entry = analysed(tmp_path, reading, EMBEDDING_WORKLOADS)
    assert entry["row"]["verification"] == "passed"
    (note,) = [n for n in entry["notes"] if n.startswith("inputs made for real")]
    assert note == (
        "inputs made for real: on FakeTensors, custom_inputs_entrypoint 'make_ids' failed: "
        "DataDependentOutputException: aten._local_scalar_dense.default"
    ), note
    # bytes fused = ids (8 x 8 B) + the 8 rows read (8 x 16 x 4 B) + out (8 x 16 x 4 B)
    # = 64 + 512 + 512 = 1088
    assert entry["report"]["bytes"]["fused"] == 1088


def test_a_group_whose_first_trace_would_be_on_a_huge_workload_is_one_line(tmp_path, torch):
    # The definition fuzz's defect (seed 17): paged decode, its block table made by a custom
    # entry point (randperm, sliced, viewed). The group's symbolic trace is made on its first
    # workload whose symbolic sizes are all 2 or more: here the second, of batch_size 10^12
    # (q alone 10^12 x 8 x 64 x 2 B = 1.024 PB), whose block table cannot be viewed as
    # 10^12 x 4 on FakeTensors (8 pages), so the first workload's inputs were made for real,
    # and the second's then too, without their memory check: an internal error (the
    # allocator's). Now the second's inputs are checked; they cannot be made, so the first
    # workload is traced on itself, and the second is refused in one line.
    source = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "benchmarks")
    with open(os.path.join(source, "paged_decode", "definition.json")) as f:
        definition = json.load(f)
    given = {
        "q": {"type": "random"},
        "k_cache": {"type": "random"},
        "v_cache": {"type": "random"},
        "block_table": {"type": "custom"},
        "sm_scale": {"type": "scalar", "value": 0.125},
    }
    workloads = [
        {"uuid": "b1", "axes": {"batch_size": 1, "pages_per_seq": 4, "num_pages": 8}},
        {"uuid": "huge", "axes": {"batch_size": 10**12, "pages_per_seq": 4, "num_pages": 8}},
    ]
    folder = write(tmp_path / "p", definition, [{**w, "inputs": given} for w in workloads])
    rc, _, err = solar("analyze", folder, "--suite-only")
    assert rc == 1 and err.count("\n") == 1, err
    assert "workload.jsonl:2: the inputs need" in err and "internal error" not in err, err


def analysed_in_a_child(folder: str) -> tuple[dict, int]:
    """``solar analyze FOLDER --json`` in a child process: its one workload's JSON entry and
    the child's peak resident memory in bytes (ru_maxrss, measured by a parent of its own so
    that no other child of the test run counts)."""
    import subprocess
    import sys

    out = os.path.join(folder, "child.json")
    script = (
        "import resource, subprocess, sys\n"
        "run = subprocess.run([sys.executable, '-m', 'solar', 'analyze', sys.argv[1], "
        "'--suite-only', '--json', sys.argv[2]], capture_output=True, text=True)\n"
        "sys.stderr.write(run.stderr)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
        "sys.exit(run.returncode)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", script, folder, out], capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stderr
    with open(out) as f:
        (entry,) = json.load(f)["workloads"]
    return entry, int(run.stdout.split()[-1]) * 1024  # ru_maxrss is in KiB on Linux


def test_random_inputs_are_drawn_in_chunks_not_staged_whole(torch):
    from solar.torch import definition as tdef
    from solar.torch._peak import peak_of

    # the hour-long fuzz run's second defect: paged_decode with num_pages 10^6 (two bf16 caches
    # of 10^6 x 16 x 2 x 64 = 2.048 G elements, 4.096 GB each) was killed at 22.5 GB: each was
    # drawn whole in float32 (8.192 GB) and then converted. Drawn 2^22 elements at a time, a
    # bf16 tensor of 2^26 elements (134,217,728 B) peaks at itself + one chunk's float32 draw
    # (2^22 x 4 = 16,777,216 B) + its bf16 copy (8,388,608 B) = 159,383,552 B; staged whole it
    # was 2^26 x 4 + 2^26 x 2 = 402,653,184 B
    generator = torch.Generator().manual_seed(0)
    peak = peak_of(lambda: tdef._random((2**26,), torch.bfloat16, generator))
    assert peak.complete and peak.bytes == 159_383_552
    # a tensor of one chunk or less is one draw: the same values as before
    a = tdef._random((3, 5), torch.bfloat16, torch.Generator().manual_seed(1))
    b = torch.randn((3, 5), generator=torch.Generator().manual_seed(1)).to(torch.bfloat16)
    assert torch.equal(a, b)


def test_a_reference_whose_sizes_depend_on_values_is_checked_up_to_there(tmp_path, torch):
    from solar.torch import definition as tdef

    # a 2^34-element float32 buffer (2^36 B = 68.72 GB) made before the values decide a size
    # (nonzero): the fake run stops at nonzero, its peak so far is a lower bound, and refused
    definition = {
        **GEMM,
        "name": "test_nonzero_after_a_buffer",
        "reference": (
            "import torch\n\n"
            "def run(A, B):\n"
            "    buffer = torch.zeros(2**34)\n"
            "    keep = torch.nonzero(A[:, 0] > 0)\n"
            "    return (A[keep[:, 0]] @ B.t()).sum() + buffer[0]\n"
        ),
    }
    problem = fmt.load(write(tmp_path / "n", definition, GEMM_WORKLOADS[:1]))
    (workload,) = problem.workloads
    namespace = tdef.reference_namespace(problem.definition)
    with pytest.raises(fmt.DefinitionError) as e:
        tdef.check_reference_memory(problem.definition, workload, namespace, memory=10**11)
    assert (
        "at once up to where its sizes depend on its values (the largest it makes 68.72 GB, "
        "by zeros at line 4)" in str(e.value)
    ), e.value
    # with room for it (2 x 68.72 GB < 200 GB) it is not refused
    tdef.check_reference_memory(problem.definition, workload, namespace, memory=2 * 10**11)
    # the command line: the trace on FakeTensors stops at nonzero, so the inputs are made for
    # real and checked first, and refused in one line (68.72 GB is over half of any CI machine)
    rc, _, err = solar("analyze", str(tmp_path / "n"), "--suite-only")
    assert rc == 1 and err.count("\n") == 1, err
    assert "up to where its sizes depend on its values" in err, err


def test_a_reference_that_fails_on_fake_tensors_is_one_line_without_torchs_logged_traceback(
    tmp_path, torch
):
    # The hour fuzz run's defect (bench/README.md, "fuzz"): `A @ B.t()` mutated to
    # `torch.mul(A, B.t())`, [4, 32] * [32, 64]: the memory check's fake run fails at the mul and
    # torch's fake-tensor module logged that failure with a traceback on stderr before SOLAR's
    # one line. A child process: torch's log handler writes to the real stderr.
    import subprocess
    import sys

    definition = {
        **GEMM,
        "name": "test_gemm_mul_mismatch",
        "reference": "import torch\n\ndef run(A, B):\n    return torch.mul(A, B.t())\n",
    }
    folder = write(tmp_path / "mul", definition, GEMM_WORKLOADS[:1])
    run = subprocess.run(
        [sys.executable, "-m", "solar", "analyze", folder, "--suite-only"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 1, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert "Traceback" not in run.stderr
    assert lines[0].startswith("solar analyze: error: "), lines[0]
    assert "definition.json#reference:4 in run" in lines[0], lines[0]


# ---------------------------------------------------------------------------------------------
# Index inputs from safetensors files (issue 38, item 3): FlashInfer's paged decode (GQA,
# page_size 1), its kv_indptr and kv_indices given as files, as FlashInfer-Bench's workloads
# give them (the path relative to the dataset's root, above the definition's folder).

PAGED = {
    "name": "test_gqa_paged_decode_h4_kv2_d16_ps1",
    "axes": {
        **axes("batch_size", "num_pages", "len_indptr", "num_kv_indices"),
        **axes(num_qo_heads=4, num_kv_heads=2, head_dim=16, page_size=1),
    },
    "constraints": ["len_indptr == batch_size + 1", "num_kv_indices == kv_indptr[-1].item()"],
    "inputs": {
        "q": {"shape": ["batch_size", "num_qo_heads", "head_dim"], "dtype": "bfloat16"},
        "k_cache": {
            "shape": ["num_pages", "page_size", "num_kv_heads", "head_dim"],
            "dtype": "bfloat16",
        },
        "v_cache": {
            "shape": ["num_pages", "page_size", "num_kv_heads", "head_dim"],
            "dtype": "bfloat16",
        },
        "kv_indptr": {"shape": ["len_indptr"], "dtype": "int32"},
        "kv_indices": {"shape": ["num_kv_indices"], "dtype": "int32"},
        "sm_scale": {"shape": None, "dtype": "float32"},
    },
    "outputs": {
        "output": {"shape": ["batch_size", "num_qo_heads", "head_dim"], "dtype": "bfloat16"}
    },
    "reference": (
        "import torch\n\n"
        "@torch.no_grad()\n"
        "def run(q, k_cache, v_cache, kv_indptr, kv_indices, sm_scale):\n"
        "    batch_size, num_qo_heads, head_dim = q.shape\n"
        "    _, page_size, num_kv_heads, _ = k_cache.shape\n"
        "    assert kv_indptr.shape[0] == batch_size + 1\n"
        "    assert kv_indices.shape[0] == kv_indptr[-1].item()\n"
        "    gqa = num_qo_heads // num_kv_heads\n"
        "    outs = []\n"
        "    for b in range(batch_size):\n"
        "        start = int(kv_indptr[b].item())\n"
        "        end = int(kv_indptr[b + 1].item())\n"
        "        tok = kv_indices[start:end].long()\n"
        "        k = k_cache[tok].squeeze(1).float()  # [L, kv_heads, head_dim]\n"
        "        v = v_cache[tok].squeeze(1).float()\n"
        "        qb = q[b].float().view(num_kv_heads, gqa, head_dim)\n"
        "        s = torch.einsum('hgd,lhd->hgl', qb, k) * sm_scale\n"
        "        p = torch.softmax(s, dim=-1)\n"
        "        outs.append(torch.einsum('hgl,lhd->hgd', p, v).reshape(num_qo_heads, head_dim))\n"
        "    return torch.stack(outs).to(torch.bfloat16)\n"
    ),
}


def paged_workload(uuid: str, path: str) -> dict:
    # 3 sequences over 8 KV tokens (pages of one token) in a cache of 16 pages
    return {
        "uuid": uuid,
        "axes": {"batch_size": 3, "num_pages": 16, "len_indptr": 4, "num_kv_indices": 8},
        "inputs": {
            "q": {"type": "random"},
            "k_cache": {"type": "random"},
            "v_cache": {"type": "random"},
            "kv_indptr": {"type": "safetensors", "path": path, "tensor_key": "kv_indptr"},
            "kv_indices": {"type": "safetensors", "path": path, "tensor_key": "kv_indices"},
            "sm_scale": {"type": "scalar", "value": 0.25},
        },
    }


def test_paged_decode_reads_kv_indptr_from_its_safetensors_file(tmp_path, torch):
    from safetensors.torch import save_file

    # the dataset's root (tmp_path) holds the blob; the definition sits in tmp_path/def
    os.makedirs(tmp_path / "blob")
    save_file(
        {
            "kv_indptr": torch.tensor([0, 2, 5, 8], dtype=torch.int32),  # lengths 2, 3, 3
            "kv_indices": torch.tensor([3, 9, 0, 15, 4, 7, 12, 2], dtype=torch.int32),
        },
        str(tmp_path / "blob" / "decode_b3.safetensors"),
    )
    entry = analysed(tmp_path, PAGED, [paged_workload("b3", "blob/decode_b3.safetensors")])
    assert entry["row"]["verification"] == "passed"
    assert entry["row"]["inputs"] == ""  # read, not built
    notes = entry["notes"]
    assert "input 'kv_indptr' read from blob/decode_b3.safetensors (key 'kv_indptr')" in notes
    # the bounds read are the file's: item = 2 and item = 5 (a workload built from the axes would
    # read 3 and 6)
    (note,) = entry["report"]["verification"]["notes"]
    for value in (2, 5, 8):
        assert f"item = {value} at " in note, note
    # MACs: per sequence of L tokens q k^T and p v are 4 heads x L x 16 each:
    # 2 x 4 x 16 x (2 + 3 + 3) = 1024 (a sequence of one token would make p v a product with
    # nothing to sum, counted as other ops)
    assert entry["report"]["totals"]["macs"] == 2 * 4 * 16 * (2 + 3 + 3)


def test_paged_decode_without_its_file_builds_equal_lengths_from_the_axes(tmp_path, torch):
    entry = analysed(tmp_path, PAGED, [paged_workload("b3", "blob/missing.safetensors")])
    assert entry["row"]["verification"] == "passed"
    # kv_indptr ends at num_kv_indices = 8 (the constraint kv_indptr[-1] == num_kv_indices) over
    # len_indptr - 1 = 3 sequences: 8 // 3 = 2, remainder 2, so lengths 3, 3, 2:
    # kv_indptr [0, 3, 6, 8]
    assert entry["row"]["inputs"] == "built: kv_indptr (blob/missing.safetensors not found)"
    assert any(
        "input 'kv_indptr': its file blob/missing.safetensors is not there; built from the "
        "definition's axes: 3 lengths as equal as integers allow summing to 8 "
        "(kv_indptr = [0, 3, 6, 8])" in n
        for n in entry["notes"]
    ), entry["notes"]
    # kv_indices: a stand-in (values in {0, 1}, valid pages), its values decide no shape
    assert any("input 'kv_indices': its file" in n for n in entry["notes"]), entry["notes"]
    (note,) = entry["report"]["verification"]["notes"]
    for value in (3, 6, 8):
        assert f"item = {value} at " in note, note
    # MACs: 2 x 4 x 16 x (3 + 3 + 2) = 1024
    assert entry["report"]["totals"]["macs"] == 2 * 4 * 16 * (3 + 3 + 2)


def test_an_indptr_without_its_file_or_a_stated_total_is_refused_naming_the_file(tmp_path, torch):
    paged = json.loads(json.dumps(PAGED))
    del paged["constraints"]  # and kv_indices beside it still gives the total: rename it
    paged["inputs"]["kv_pages"] = paged["inputs"].pop("kv_indices")
    paged["inputs"]["sm_scale"] = paged["inputs"].pop("sm_scale")
    paged["reference"] = paged["reference"].replace("kv_indices", "kv_pages")
    workload = paged_workload("b3", "blob/missing.safetensors")
    workload["inputs"]["kv_pages"] = workload["inputs"].pop("kv_indices")
    folder = write(tmp_path / "def", paged, [workload])
    rc, _, err = solar("analyze", folder)
    assert rc == 1 and err.count("\n") == 1, err
    assert "inputs.kv_indptr: its values decide a shape (item in run)" in err, err
    assert "its file blob/missing.safetensors is not there" in err, err


def test_a_safetensors_file_without_the_key_is_one_line(tmp_path, torch):
    from safetensors.torch import save_file

    os.makedirs(tmp_path / "def")
    save_file({"other": torch.zeros(4, dtype=torch.int32)}, str(tmp_path / "def" / "t.safetensors"))
    folder = write(tmp_path / "def", PAGED, [paged_workload("b3", "t.safetensors")])
    rc, _, err = solar("analyze", folder)
    assert rc == 1 and err.count("\n") == 1, err
    assert "inputs.kv_indptr: t.safetensors has no tensor 'kv_indptr' (it has: other)" in err, err


# ---------------------------------------------------------------------------------------------
# The format's flags and optional inputs (issue 38, item 7)

# A flag axis, as SOL-ExecBench's joint-attention blocks give one: the workload's axes name
# is_joint_block, a scalar input of run (the custom entry point reads it with the axes).
JOINT = {
    "name": "test_joint_block_flag_n8_k16",
    "axes": axes("tokens", "text", N=8, K=16),
    "custom_inputs_entrypoint": "get_inputs",
    "inputs": {
        "x": {"shape": ["tokens", "K"], "dtype": "float32"},
        "ctx": {"shape": ["text", "K"], "dtype": "float32"},
        "w": {"shape": ["N", "K"], "dtype": "float32"},
        "is_joint_block": {"shape": None, "dtype": "int32"},
    },
    "outputs": {"y": {"shape": ["tokens", "N"], "dtype": "float32"}},
    "reference": (
        "import torch\n\n"
        "def get_inputs(axes_and_scalars, device):\n"
        "    return {'is_joint_block': axes_and_scalars['is_joint_block']}\n\n"
        "def run(x, ctx, w, is_joint_block: int):\n"
        "    y = x @ w.t()\n"
        "    if is_joint_block == 1:\n"
        "        y = y + (ctx @ w.t()).sum(0)\n"
        "    return y\n"
    ),
}
JOINT_WORKLOADS = [
    {
        "uuid": "joint",
        "axes": {"tokens": 4, "text": 2, "is_joint_block": 1},
        "inputs": {
            "x": {"type": "random"},
            "ctx": {"type": "random"},
            "w": {"type": "random"},
            "is_joint_block": {"type": "custom"},
        },
    },
    {  # the flag alone: no input entry, its value from the axes
        "uuid": "single",
        "axes": {"tokens": 4, "text": 2, "is_joint_block": 0},
        "inputs": {"x": {"type": "random"}, "ctx": {"type": "random"}, "w": {"type": "random"}},
    },
]


def test_a_flag_axis_gives_a_scalar_input_its_value(tmp_path, torch):
    folder = write(tmp_path / "def", JOINT, JOINT_WORKLOADS)
    json_path = tmp_path / "j.json"
    rc, _, err = solar("analyze", folder, "--json", str(json_path))
    assert rc == 0, err
    joint, single = json.loads(json_path.read_text())["workloads"]
    # MACs: x @ w^T is 4 x 8 x 16 = 512; the joint block adds ctx @ w^T, 2 x 8 x 16 = 256:
    # 768 and 512
    assert joint["report"]["totals"]["macs"] == 4 * 8 * 16 + 2 * 8 * 16
    assert single["report"]["totals"]["macs"] == 4 * 8 * 16
    assert all(e["row"]["verification"] == "passed" for e in (joint, single))
    assert "scalar(s) is_joint_block=0 fixed in the captured program" in single["notes"]
    assert "flag(s) is_joint_block given by the workload's axes" in single["notes"]
    assert joint["row"]["axes"] == "tokens=4;text=2"  # the flag is no axis of the definition


def test_a_workload_axis_that_names_nothing_is_still_refused(tmp_path):
    bad = [{**JOINT_WORKLOADS[1], "axes": {"tokens": 4, "text": 2, "is_joint": 1}}]
    folder = write(tmp_path / "def", JOINT, bad)
    rc, _, err = solar("analyze", folder)
    assert rc == 1, err
    assert (
        "axes.is_joint: not an axis of 'test_joint_block_flag_n8_k16' (nor a scalar input: a flag)"
        in err
    ), err


# An optional input the reference takes as a keyword with a default (bias1=None), not declared
# by the definition: one workload gives it (from a file: the file gives its shape), one not.
OPTIONAL = {
    "name": "test_linear_optional_bias_n8_k16",
    "axes": axes("M", N=8, K=16),
    "inputs": {
        "x": {"shape": ["M", "K"], "dtype": "float32"},
        "w": {"shape": ["N", "K"], "dtype": "float32"},
    },
    "outputs": {"y": {"shape": ["M", "N"], "dtype": "float32"}},
    "reference": (
        "import torch\n\n"
        "def run(x, w, bias1=None):\n"
        "    y = x @ w.t()\n"
        "    return y if bias1 is None else y + bias1\n"
    ),
}


def test_an_optional_keyword_input_named_by_a_workload(tmp_path, torch):
    from safetensors.torch import save_file

    os.makedirs(tmp_path / "def")
    save_file({"b": torch.randn(8)}, str(tmp_path / "def" / "bias.safetensors"))
    xw = {"x": {"type": "random"}, "w": {"type": "random"}}
    bias = {"type": "safetensors", "path": "bias.safetensors", "tensor_key": "b"}
    workloads = [
        {"uuid": "bias", "axes": {"M": 4}, "inputs": {**xw, "bias1": bias}},
        {"uuid": "plain", "axes": {"M": 4}, "inputs": xw},
    ]
    folder = write(tmp_path / "def", OPTIONAL, workloads)
    json_path = tmp_path / "o.json"
    rc, _, err = solar("analyze", folder, "--json", str(json_path))
    assert rc == 0, err
    with_bias, plain = json.loads(json_path.read_text())["workloads"]
    assert all(e["row"]["verification"] == "passed" for e in (with_bias, plain))
    # fused bytes (f32): x 4 x 16, w 8 x 16, y 4 x 8, and bias1's 8 where given:
    # (64 + 128 + 32) x 4 = 896; (64 + 128 + 8 + 32) x 4 = 928
    assert plain["report"]["bytes"]["fused"] == 896
    assert with_bias["report"]["bytes"]["fused"] == 928
    # MACs: 4 x 8 x 16 = 512 both
    assert with_bias["report"]["totals"]["macs"] == plain["report"]["totals"]["macs"] == 512


def test_an_undeclared_random_input_has_no_shape(tmp_path, torch):
    xw = {"x": {"type": "random"}, "w": {"type": "random"}}
    workloads = [{"uuid": "r", "axes": {"M": 4}, "inputs": {**xw, "bias1": {"type": "random"}}}]
    folder = write(tmp_path / "def", OPTIONAL, workloads)
    rc, _, err = solar("analyze", folder)
    assert rc == 1 and "inputs.bias1: random, but the definition declares no shape" in err, err
    other = [{"uuid": "r", "axes": {"M": 4}, "inputs": {**xw, "bias2": {"type": "random"}}}]
    folder = write(tmp_path / "def2", OPTIONAL, other)
    rc, _, err = solar("analyze", folder)
    assert rc == 1 and "inputs.bias2: not an input of 'test_linear_optional_bias_n8_k16'" in err


# FlashInfer's ragged prefill: queries and keys packed, each sequence's bounds in qo_indptr and
# kv_indptr, whose ends the constraints state (total_q, total_kv); no file for either.
RAGGED = {
    "name": "test_ragged_prefill_h2_d8",
    "axes": {**axes("len_indptr", "total_q", "total_kv"), **axes(num_heads=2, head_dim=8)},
    "constraints": ["total_q == qo_indptr[-1].item()", "total_kv == kv_indptr[-1].item()"],
    "inputs": {
        "q": {"shape": ["total_q", "num_heads", "head_dim"], "dtype": "bfloat16"},
        "k": {"shape": ["total_kv", "num_heads", "head_dim"], "dtype": "bfloat16"},
        "v": {"shape": ["total_kv", "num_heads", "head_dim"], "dtype": "bfloat16"},
        "qo_indptr": {"shape": ["len_indptr"], "dtype": "int32"},
        "kv_indptr": {"shape": ["len_indptr"], "dtype": "int32"},
        "sm_scale": {"shape": None, "dtype": "float32"},
    },
    "outputs": {"output": {"shape": ["total_q", "num_heads", "head_dim"], "dtype": "bfloat16"}},
    "reference": (
        "import torch\n\n"
        "def run(q, k, v, qo_indptr, kv_indptr, sm_scale):\n"
        "    outs = []\n"
        "    for b in range(qo_indptr.shape[0] - 1):\n"
        "        qs, qe = int(qo_indptr[b]), int(qo_indptr[b + 1])\n"
        "        ks, ke = int(kv_indptr[b]), int(kv_indptr[b + 1])\n"
        "        s = torch.einsum('qhd,khd->hqk', q[qs:qe].float(), k[ks:ke].float()) * sm_scale\n"
        "        p = torch.softmax(s, dim=-1)\n"
        "        outs.append(torch.einsum('hqk,khd->qhd', p, v[ks:ke].float()))\n"
        "    return torch.cat(outs).to(torch.bfloat16)\n"
    ),
}


def test_ragged_prefill_without_files_builds_both_indptrs_from_the_constraints(tmp_path, torch):
    missing = {"type": "safetensors", "path": "blob/prefill.safetensors"}
    workload = {
        "uuid": "b2",
        "axes": {"len_indptr": 3, "total_q": 6, "total_kv": 9},
        "inputs": {
            "q": {"type": "random"},
            "k": {"type": "random"},
            "v": {"type": "random"},
            "qo_indptr": {**missing, "tensor_key": "qo_indptr"},
            "kv_indptr": {**missing, "tensor_key": "kv_indptr"},
            "sm_scale": {"type": "scalar", "value": 0.35},
        },
    }
    entry = analysed(tmp_path, RAGGED, [workload])
    assert entry["row"]["verification"] == "passed"
    # 2 sequences (len_indptr - 1): qo_indptr ends at total_q = 6, lengths 3, 3: [0, 3, 6];
    # kv_indptr at total_kv = 9: 9 // 2 = 4 remainder 1, lengths 5, 4: [0, 5, 9]
    assert entry["row"]["inputs"] == (
        "built: qo_indptr (blob/prefill.safetensors not found); "
        "built: kv_indptr (blob/prefill.safetensors not found)"
    )
    notes = " | ".join(entry["notes"])
    assert "2 equal lengths summing to 6 (qo_indptr = [0, 3, 6])" in notes, notes
    assert "2 lengths as equal as integers allow summing to 9 (kv_indptr = [0, 5, 9])" in notes
    # MACs: per sequence q k^T and p v are 2 heads x Lq x Lk x 8 each:
    # 2 x 2 x 8 x (3 x 5 + 3 x 4) = 32 x 27 = 864
    assert entry["report"]["totals"]["macs"] == 2 * 2 * 8 * (3 * 5 + 3 * 4)


# An NVFP4 GEMM as FlashInfer-Bench-style definitions write one (issue 38, family 2): packed e2m1
# operands, e4m3 scales per 16 values along K in the swizzled layout (their count an expr axis),
# torch._scaled_mm, which the CPU cannot run, then a global scale.
NVFP4_GEMM = {
    "name": "test_gemm_nvfp4_n64_k128",
    "axes": {
        **axes("M", N=64, K=128),
        "K_half": {"type": "expr", "expression": "K // 2"},
        "a_scales": {
            "type": "expr",
            "expression": "(M + 127) // 128 * 128 * ((K // 16 + 3) // 4 * 4)",
        },
        "b_scales": {
            "type": "expr",
            "expression": "(N + 127) // 128 * 128 * ((K // 16 + 3) // 4 * 4)",
        },
    },
    "inputs": {
        "A": {"shape": ["M", "K_half"], "dtype": "float4_e2m1fn_x2"},
        "B": {"shape": ["N", "K_half"], "dtype": "float4_e2m1fn_x2"},
        "a_scale": {"shape": ["a_scales"], "dtype": "float8_e4m3fn"},
        "b_scale": {"shape": ["b_scales"], "dtype": "float8_e4m3fn"},
        "alpha": {"shape": None, "dtype": "float32"},
    },
    "outputs": {"C": {"shape": ["M", "N"], "dtype": "bfloat16"}},
    "reference": (
        "import torch\n\n\n@torch.no_grad()\ndef run(A, B, a_scale, b_scale, alpha):\n"
        "    out = torch._scaled_mm(A, B.T, a_scale, b_scale, out_dtype=torch.bfloat16)\n"
        "    return out * alpha\n"
    ),
}
NVFP4_INPUTS = {
    "A": {"type": "random"},
    "B": {"type": "random"},
    "a_scale": {"type": "random"},
    "b_scale": {"type": "random"},
    "alpha": {"type": "scalar", "value": 0.5},
}
NVFP4_WORKLOADS = [
    {"uuid": "m8", "axes": {"M": 8}, "inputs": NVFP4_INPUTS},
    {"uuid": "m300", "axes": {"M": 300}, "inputs": NVFP4_INPUTS},
]


def test_nvfp4_gemm_definition_by_hand(tmp_path, torch):
    folder = write(tmp_path / "def", NVFP4_GEMM, NVFP4_WORKLOADS)
    json_path = tmp_path / "report.json"
    rc, _, err = solar("analyze", folder, "--hw", "B200", "--json", str(json_path))
    assert rc == 0, err
    m8, m300 = json.loads(json_path.read_text())["workloads"]
    for entry in (m8, m300):
        assert entry["row"]["verification"] == "passed"
        assert entry["report"]["verification"]["mode"] == "whole_program"
    # MACs M x N x K: 8 x 64 x 128 = 65,536 and 300 x 64 x 128 = 2,457,600.
    assert m8["report"]["totals"]["macs"] == 65_536
    assert m300["report"]["totals"]["macs"] == 2_457_600
    # Fused bytes (alpha is a Python scalar, no tensor): A M x 64 pairs, B 64 x 64 = 4,096, the
    # scales read (M x 8 blocks of a_scale, 64 x 8 of b_scale: the padding is never read), C
    # M x 64 x 2. M = 8: 512 + 4,096 + 64 + 512 + 1,024 = 6,208; M = 300 (rows in a whole tile
    # of 128, one more, and 44 of a third): 19,200 + 4,096 + 2,400 + 512 + 38,400 = 64,608.
    assert m8["report"]["bytes"]["fused"] == 512 + 4_096 + 64 + 512 + 1_024
    assert m300["report"]["bytes"]["fused"] == 19_200 + 4_096 + 2_400 + 512 + 38_400


def test_nvfp4_gemm_verified_op_by_op(tmp_path, torch):
    # A budget the whole program does not fit, but each op does: the permute of B, the packed fp4
    # product (run alone by its definition on the CPU) and the multiply by alpha.
    folder = write(tmp_path / "def", NVFP4_GEMM, NVFP4_WORKLOADS[1:])
    json_path = tmp_path / "report.json"
    rc, _, err = solar(
        "analyze", folder, "--hw", "B200", "--verify-budget-mb", "0.1", "--json", str(json_path)
    )
    assert rc == 0, err
    (entry,) = json.loads(json_path.read_text())["workloads"]
    verification = entry["report"]["verification"]
    # Over the budget: the definition at a reduced workload whole (M 300 -> 16: a partial tile
    # of 128 rows too), and the full-size program op by op.
    assert verification["mode"] == "twin"
    assert verification["detail"].startswith(
        "verified on a reduced workload of the same definition (M 300 -> 16): passed ("
    )
    assert (
        "per op at full size: passed (3 of 3 distinct op configuration(s)"
        in (verification["detail"])
    )
    assert entry["row"]["verification"] == "passed"
