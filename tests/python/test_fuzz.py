"""The fuzz harness of the front doors (bench/fuzz/fuzz.py, docs/testing.md "Fuzzing the front
doors"): its classifier, its determinism, and a short fixed-seed run of every input family with
no defect (mutated model files, benchmark definitions and IR files, each ending in a result or a
one-line error)."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "fuzz"))

import fuzz  # noqa: E402


@pytest.mark.parametrize(
    ("command", "rc", "stderr", "hung", "over", "kind"),
    [
        ("analyze", 0, "", False, False, "result"),
        (
            "analyze",
            1,
            "solar analyze: error: m.py:3: Model(...) failed: KeyError: 'w'\n",
            False,
            False,
            "error",
        ),
        # notes beside the one error line are fine
        (
            "analyze",
            1,
            "solar: note: building m.py ...\nsolar analyze: error: m.py:3: x\n",
            False,
            False,
            "error",
        ),
        # an IR file: one positioned line per error the checker found
        (
            "ir check",
            1,
            "a.ir:3:5: error: unknown name 'C'\na.ir:7:1: error: bad\n",
            False,
            False,
            "error",
        ),
        (
            "analyze",
            1,
            "solar analyze: error: a\nsolar analyze: error: b\n",
            False,
            False,
            "unclear",
        ),
        ("analyze", 1, "RuntimeError: boom\n", False, False, "unclear"),
        (
            "analyze",
            1,
            "Traceback (most recent call last):\n  File ...\n",
            False,
            False,
            "traceback",
        ),
        (
            "analyze",
            2,
            "solar analyze: internal error: KeyError: 'x' (a bug in SOLAR ...)\n",
            False,
            False,
            "internal",
        ),
        ("sol", -11, "", False, False, "signal"),
        ("sol", -9, "", True, False, "hang"),
        ("analyze", 0, "", False, True, "memory"),
    ],
)
def test_every_outcome_is_classified(command, rc, stderr, hung, over, kind):
    assert fuzz.classify(command, rc, stderr, hung, over) == kind


def test_the_same_seed_makes_the_same_mutants():
    def mutants(seed: int) -> list[tuple[str, str, dict]]:
        made = []
        for family, maker in (
            ("model", fuzz.model_mutant),
            ("definition", fuzz.definition_mutant),
            ("ir", fuzz.ir_mutant),
        ):
            rng = random.Random(f"{seed}:{family}")
            made += [(m.seed, m.mutation, m.files) for m in (maker(rng) for _ in range(20))]
        return made

    first = mutants(5)
    assert first == mutants(5)
    assert first != mutants(6)
    # every mutant changed its seed file(s)
    for seed, _, files in first:
        origin = ROOT / seed
        if origin.is_dir():
            assert files != {p.name: p.read_text() for p in origin.iterdir() if p.is_file()}
        else:
            assert files[origin.name] != origin.read_text()


def test_a_defect_is_saved_as_a_reproducer(tmp_path, monkeypatch):
    # a run made to end in an internal error (the classifier's input, not SOLAR's) is saved
    # with its mutated file, its command and what it printed
    def internal(args, cwd, timeout_s, memory_mb):
        return fuzz.Outcome("internal", 2, 0.1, 10.0, "solar sol: internal error: x\n")

    monkeypatch.setattr(fuzz, "run_one", internal)
    summary = fuzz.fuzz(60, 1, tmp_path / "out", families=("ir",), max_mutants=1, log=lambda s: 0)
    assert len(summary.defects) == 3  # ir check, ir run and sol of the one mutant
    first = summary.defects[0]
    assert first.name == "001-internal"
    readme = (first / "README.txt").read_text()
    assert "command (from this folder): solar ir check in/" in readme
    assert "solar sol: internal error: x" in readme
    assert [p.suffix for p in (first / "in").iterdir()] == [".ir"]


def test_a_short_fixed_seed_run_has_no_defect(tmp_path):
    pytest.importorskip("torch")
    # 18 mutants taken in turn from the three families (6 model files, 6 definitions, 6 IR
    # files), then 45 more IR files (each IR file: ir check, ir run and sol, 3 runs): about
    # a minute and a half on 2 cores
    summary = fuzz.fuzz(3600, 1, tmp_path / "fuzz", timeout_s=180, max_mutants=18, log=print)
    ir = fuzz.fuzz(3600, 1, tmp_path / "fuzz-ir", families=("ir",), max_mutants=45, log=print)
    report = json.loads((tmp_path / "fuzz" / "summary.json").read_text())
    assert report["mutants"] == 18
    assert report["by_family"].keys() == {"model", "definition", "ir"}
    defects = [*summary.defects, *ir.defects]
    shown = "\n\n".join((d / "README.txt").read_text() for d in defects)
    assert not defects, shown
    # the run reached both ends: some mutants analysed, some refused in one line
    kinds = summary.kinds + ir.kinds
    assert kinds["result"] > 0 and kinds["error"] > 0, kinds
