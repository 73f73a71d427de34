"""Every entry point honours every option group (solar.options.Options, docs/architecture.md):
``solar analyze`` (a forward, ``--train``, ``--serve``, a JAX file, ``--llm`` against the
loopback server, a kernel-benchmark definition), ``solar sol MODEL.py``, and the children of
``solar bench`` and ``solar sweep``, each run with a non-default value of each group (the
analysis: ``--cache-state warm``, ``--routing concentrated``, ``--fidelity fused``, ``--policy
bf16``, ``--kernel-floor on``; the verification: ``--verify-mode``; the program:
``--train``/``--serve``), and each report checked to state every one. Before the one
pipeline, ``--llm`` dropped the analysis options and the JAX default policy, and ``solar sol
jax_model.py`` dropped the JAX default policy."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")

from test_llm_server import ScriptedServer, answer, isolate  # noqa: E402
from test_llm_translate import GOOD, MODEL  # noqa: E402

from solar import cli, options  # noqa: E402

# A model with a data-dependent read (the embedding's gather), so that the report states the
# routing it assumed (docs/einsum.md, "Routing").
EMBEDDING_MODEL = """\
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(16, 8)
        self.fc = nn.Linear(8, 4)

    def forward(self, ids):
        return self.fc(self.emb(ids))


def get_inputs():
    return [torch.tensor([[1, 2, 3], [4, 5, 6]])]


def get_init_inputs():
    return []
"""

JAX_MODEL = """\
import jax.numpy as jnp
import numpy as np


def forward(table, ids, w):
    return jnp.take(table, ids, axis=0) @ w


def get_inputs():
    rng = np.random.default_rng(0)
    table = jnp.asarray(rng.standard_normal((16, 8)), dtype=jnp.float32)
    w = jnp.asarray(rng.standard_normal((8, 4)), dtype=jnp.float32)
    return [table, jnp.asarray([[1, 2, 3], [4, 5, 6]], dtype=jnp.int32), w]
"""

ANALYSIS = [
    "--hw",
    "L40S",  # a device whose file has the L2 bandwidth a warm cache needs
    "--cache-state",
    "warm",
    "--routing",
    "concentrated",
    "--fidelity",
    "fused",
    "--kernel-floor",
    "on",
]


def states_every_option(report: dict, policy: str = "bf16", routing: bool = True) -> None:
    """The report states the policy, the cache state, the kernel floor, the fidelity asked for
    (the only one it reports) and, for a program with a data-dependent read, the routing."""
    assert report["hardware"]["name"] == "L40S"
    assert report["precision_policy"] == policy
    assert report["cache_state"] == "warm"
    assert "kernel_floor" in report
    assert "fused_s" in report["sol"] and "unfused_s" not in report["sol"], report["sol"]
    if routing:
        assert report["routing"] == "concentrated"


@pytest.fixture
def files(tmp_path, monkeypatch):
    isolate(tmp_path, monkeypatch)
    (tmp_path / "emb.py").write_text(EMBEDDING_MODEL)
    (tmp_path / "jmodel.py").write_text(JAX_MODEL)
    (tmp_path / "model.py").write_text(MODEL)
    return tmp_path


def analyze(path, out, *extra) -> dict:
    rc = cli.main(["analyze", str(path), "--json", str(out), *extra])
    assert rc == 0
    return json.loads(out.read_text())


def test_analyze_forward_states_every_option(files):
    report = analyze(
        files / "emb.py", files / "r.json", "--policy", "bf16", "--verify-mode", "per_op", *ANALYSIS
    )
    states_every_option(report)
    assert report["verification"]["mode"] == "per_op"


def test_analyze_train_states_every_option(files):
    report = analyze(
        files / "emb.py",
        files / "r.json",
        "--train",
        "--optimizer",
        "sgd",
        "--policy",
        "bf16",
        *ANALYSIS,
    )
    states_every_option(report)
    assert "training" in report


def test_analyze_jax_states_every_option(files):
    pytest.importorskip("jax")
    report = analyze(files / "jmodel.py", files / "r.json", "--policy", "bf16", *ANALYSIS)
    states_every_option(report)
    # without --policy: JAX's default policy
    report = analyze(files / "jmodel.py", files / "r.json", *ANALYSIS)
    states_every_option(report, policy="jax-default")


def test_analyze_serve_states_every_option(files, tmp_path):
    pytest.importorskip("transformers")
    from pathlib import Path

    model = Path(__file__).parent / "models" / "serve" / "llama_gqa.py"
    html = tmp_path / "step.html"
    rc = cli.main(
        [
            "analyze",
            str(model),
            "--serve",
            "decode",
            "--context",
            "16",
            "--policy",
            "bf16",
            "--json",
            str(tmp_path / "s.json"),
            "--csv",
            str(tmp_path / "step.csv"),
            "--html",
            str(html),
            *ANALYSIS,
        ]
    )
    assert rc == 0
    (step,) = [r.data for r in _last_serving_steps]
    states_every_option(step)


_last_serving_steps: list = []


@pytest.fixture(autouse=True)
def _keep_serving_steps(monkeypatch):
    """Keeps the steps of the serving runs (their reports) for the checks above."""
    from solar.torch import serve

    original = serve.serve_file

    def keeping(*args, **kwargs):
        served = original(*args, **kwargs)
        _last_serving_steps[:] = served.steps
        return served

    monkeypatch.setattr(serve, "serve_file", keeping)


def test_analyze_llm_states_every_option(files):
    with ScriptedServer([answer(f"```ir\n{GOOD}```")]) as s:
        report = analyze(
            files / "model.py",
            files / "r.json",
            "--llm",
            "--llm-base-url",
            s.url,
            "--llm-model",
            "test-model",
            "--policy",
            "bf16",
            "--html",
            str(files / "r.html"),
            *ANALYSIS,
        )
    states_every_option(report, routing=False)  # no data-dependent read
    assert report["capture"]["method"] == "llm"
    # The agent's section is the engine's: it reaches the HTML page too.
    (entry,) = report["agent"]
    assert (entry["scope"], entry["name"]) == ("program", "model.py")
    html = (files / "r.html").read_text()
    assert '<h2 id="agent">Written by the LLM agent</h2>' in html


def test_analyze_definition_states_every_option(files):
    from test_definition import EMBEDDING, EMBEDDING_WORKLOADS, write

    folder = write(files / "emb_def", EMBEDDING, EMBEDDING_WORKLOADS)
    document = analyze(
        folder, files / "d.json", "--policy", "bf16", "--verify-mode", "per_op", *ANALYSIS
    )
    (workload,) = document["workloads"]
    states_every_option(workload["report"])
    assert workload["report"]["verification"]["mode"] == "per_op"


def test_sol_on_a_model_file_states_every_option(files, capsys):
    out = files / "sol.json"
    rc = cli.main(["sol", str(files / "emb.py"), "--policy", "bf16", "--json", str(out), *ANALYSIS])
    assert rc == 0, capsys.readouterr().err
    states_every_option(json.loads(out.read_text()))


def test_sol_on_a_jax_model_file_keeps_the_jax_default_policy(files, capsys):
    pytest.importorskip("jax")
    out = files / "sol.json"
    rc = cli.main(["sol", str(files / "jmodel.py"), "--json", str(out), *ANALYSIS])
    assert rc == 0, capsys.readouterr().err
    states_every_option(json.loads(out.read_text()), policy="jax-default")


def test_options_are_checked_once():
    # The rules between options live in solar.options alone.
    with pytest.raises(ValueError, match="--optimizer needs --train"):
        options.Options.of(optimizer="adam")
    with pytest.raises(ValueError, match="unknown optimizer 'lion'"):
        options.Options.of(train=True, optimizer="lion")
    with pytest.raises(ValueError, match="--serve takes tensor parallelism only"):
        options.Options.of(serve="decode", parallel="tp=2,dp=2")
    assert options.Options.of(serve="decode", parallel="tp=2").analysis.parallel == "tp=2"
    with pytest.raises(TypeError, match="unknown option"):
        options.Options.of(verfy=False)
    opts = options.Options.of("B200", cache_state="warm", routing="concentrated", fidelity="fused")
    assert opts.analysis.keywords() == {
        "cache_state": "warm",
        "routing": "concentrated",
        "fidelity": "fused",
    }
    assert opts.analysis.hw == "B200"


def test_bench_children_state_every_option(files):
    from solar.suites import bench as suite

    (files / "suite" / "level1").mkdir(parents=True)
    (files / "suite" / "level1" / "emb.py").write_text(EMBEDDING_MODEL)
    out = files / "bench"
    flags = ["--policy", "bf16", *ANALYSIS]
    rc = suite.main([str(files / "suite"), "--out", str(out), *flags])
    assert rc == 0
    (record,) = json.loads((out / "problems.json").read_text())
    assert record["status"] == "ok", record
    assert (record["precision_policy"], record["cache_state"]) == ("bf16", "warm")
    assert record["routing"] == "concentrated"
    assert sorted(record["sol_s"]) == ["fused"]  # --fidelity fused: the one fidelity analysed


def test_sweep_children_state_every_option(files):
    from solar.suites import sweep

    out = files / "sweep"
    rc = sweep.main(
        ["--models", str(files / "emb.py"), "--policy", "bf16", "--out", str(out), *ANALYSIS]
    )
    assert rc == 0
    (result,) = sorted((out / "results").glob("*.json"))
    record = json.loads(result.read_text())
    assert record["status"] == "analysed", record.get("error")
    states_every_option(record["report"])


def _counts() -> tuple[int, int, int]:
    from solar import _core

    return _core.parse_count(), _core.check_count(), _core.lift_count()


@pytest.mark.parametrize("verify_mode", ["whole_program", "auto"])
def test_the_program_is_parsed_checked_and_lifted_once_per_analysis(files, verify_mode):
    # The lowering parses and checks the program once and hands its LoweringResult on, which
    # lifts it once, when first asked for: the mode's estimate ("auto"), the verification's run
    # (whole program here) and the analysis read them.
    import solar

    before = _counts()
    report = solar.analyze_file(files / "emb.py", verify_mode=verify_mode)
    assert report.verification["status"] == "passed"
    assert report.verification["mode"] == "whole_program"
    parses, checks, lifts = (after - b for after, b in zip(_counts(), before, strict=True))
    assert (parses, checks, lifts) == (1, 1, 1)


def test_each_one_op_program_is_parsed_checked_and_lifted_once(files):
    # Per op, each one-op program's LoweringResult is run and estimated, not its text: one
    # parse and one check (its lowering's) and one lift (the estimate), as the whole program's
    # (one of each, its lift the analysis's).
    import solar

    before = _counts()
    report = solar.analyze_file(files / "emb.py", verify_mode="per_op")
    assert report.verification["mode"] == "per_op"
    ops = report.verification["ops"]
    assert ops and all(op["result"] == "passed" for op in ops)
    parses, checks, lifts = (after - b for after, b in zip(_counts(), before, strict=True))
    assert parses == 1 + len(ops)
    assert (checks, lifts) == (parses, parses)


@pytest.mark.parametrize("command", ["sol", "compare", "provision", "curve"])
def test_a_model_file_command_parses_checks_and_lifts_the_program_once(files, capsys, command):
    # `solar sol|compare|provision|curve MODEL.py`: the C++ command runs on the lowering
    # result's program and graph (_core.run_on_program), neither parsed, checked nor lifted
    # again.
    from solar import cli

    args = {"compare": ["--hw", "H100-SXM"], "provision": ["--latency", "1ms", "--hw", "B200"]}
    before = _counts()
    rc = cli.main([command, str(files / "emb.py"), *args.get(command, ["--hw", "H100-SXM"])])
    assert rc == 0, capsys.readouterr().err
    parses, checks, lifts = (after - b for after, b in zip(_counts(), before, strict=True))
    assert (parses, checks, lifts) == (1, 1, 1)


def _document(*ops: str) -> dict:
    # one f32[4] tensor per node: 4 * 4 B = 16 B each
    return {
        "source": "m.py",
        "tensors": [{"name": f"t{i}", "shape": [4], "dtype": "f32"} for i in range(len(ops))],
        "nodes": [{"name": f"n{i}", "op": op} for i, op in enumerate(ops)],
        "outputs": [],
    }


class _Capture:
    """A stand-in for solar.torch.capture.Capture: its document, and fake values in it."""

    def __init__(self, document: dict) -> None:
        self.document = document
        self.golden_notes: list[str] = []

    def to_json(self) -> str:
        return json.dumps(self.document, sort_keys=True)

    def holds_fake_values(self) -> bool:
        return True


def test_a_model_that_captures_differently_names_the_nodes_and_the_real_capture_wins(capsys):
    # issue 29, item 9: the FakeTensor capture (mul by a tensor) and the real one (mul by a
    # scalar) differ in their second node; the real capture fits the verification budget
    # (2 tensors * 16 B = 32 B <= 2048 MB), so it is the one analysed, and stderr says which
    # node differs.
    import torch

    from solar.torch import prefer_real
    from solar.torch.capture import TorchCaptured, differing_nodes

    fake = _document("aten.add.Tensor", "aten.mul.Tensor")
    real = _document("aten.add.Tensor", "aten.mul.Scalar")
    assert differing_nodes(fake, real) == (
        "2 node(s) built with FakeTensors, 2 built for real; 1 differ: "
        "n1 (aten.mul.Tensor) / n1 (aten.mul.Scalar) (FakeTensors / real)"
    )
    model = torch.nn.Identity()
    captured = TorchCaptured(
        _Capture(fake),
        lambda m, xs: _Capture(real),
        model,
        (torch.empty(4, device="meta"),),  # no values: a fake capture
        build=lambda: (model, (torch.ones(4),)),
    )
    chosen = prefer_real(captured, options.Options(), "solar")
    assert chosen.document is real and chosen.has_data
    err = capsys.readouterr().err
    assert "m.py captures differently when built for real" in err
    assert "n1 (aten.mul.Tensor) / n1 (aten.mul.Scalar)" in err
    # per-op verification never builds the model: the FakeTensor capture stays
    per_op = options.Options.of(verify_mode="per_op")
    assert prefer_real(captured, per_op, "solar") is captured


def test_serve_on_a_jax_file_is_one_line_without_torch(files):
    # --serve builds the steps of a PyTorch decoder: a JAX file is a user error (exit 1), told
    # before anything imports torch (before the one pipeline: torch was imported, and without
    # it installed the command ended in an internal error).
    import subprocess
    import sys

    code = (
        "import sys\nfrom solar import cli\n"
        f"rc = cli.main(['analyze', {str(files / 'jmodel.py')!r}, '--serve', 'decode'])\n"
        "print(rc, 'torch' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.split() == ["1", "False"], done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("solar analyze: error: jmodel.py is a JAX model file: --serve builds")
