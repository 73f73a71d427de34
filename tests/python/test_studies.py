"""The docs never drift: every ```console block of README.md and of the .md files under docs/
and examples/ (recursively) is one command and its real output, and this test runs the command
and compares (docs/testing.md, "The docs' outputs").

A block is ```console, a line ``$ COMMAND``, then the output exactly. ``$ solar ARGS`` runs
``solar.cli.main(ARGS)`` in-process in a scratch directory that mirrors the repository root
(every top-level entry linked, so paths read as from the root, and what the command writes
lands there, not in the repository). The output is its stdout, then its stderr when it exits 1
(an error the doc shows); exit 0 or 1, nothing else. Other commands prepare files for the later
blocks of the same doc, which run with them: ``$ cat NAME`` shows a file the doc has the reader
write (NAME is written with the shown text), ``$ python ...`` runs with this interpreter in the
scratch directory (its output compared too).

The comparison is byte for byte, except the numbers the framework's own arithmetic decides on
this CPU (``same_output``): the measured errors of a verification line (``max_abs_err=``,
``max_rel_err=``) must still pass the check the line states (its tolerances and verdict compared
byte for byte), and the float64 recheck's error figures are numbers; SOLAR's own numbers, and
every other byte of the line, must match exactly.

Runs over about 30 s (full-size models) are marked slow (``SLOW``; ``bash scripts/test.sh
--slow`` runs them). ``python3 tests/python/test_studies.py --update [--fast] [DOC ...]``
rewrites the blocks with the real output (every doc, or the ones named; ``--fast``: not the
slow blocks); then read the diff: a changed number must be explained."""

from __future__ import annotations

import contextlib
import io
import math
import re
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONSOLE = re.compile(r"^```console\n\$ ([^\n]*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
FENCE = re.compile(r"^```(\S*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)

# Blocks too slow for the default suite, by command: the seconds one run took (--update, 2 cores
# shared with other work).
SLOW = {
    "solar analyze bench/models/llama3_70b.py --serve decode --batch-sweep 1,8 --context 8192 "
    "--hw H200-SXM": 126,
    "solar analyze tests/python/models/serve/llama3_8b.py --serve decode --batch-sweep 1,8 "
    "--context 4096 --policy nvfp4-weights --hw Jetson-AGX-Thor --no-verify": 52,
    "solar analyze bench/models/deepseek_v3.py --serve decode --batch-sweep 1,256 --context 4096 "
    "--hw H200-SXM --no-verify": 158,
    "solar analyze bench/models/deepseek_v3.py --serve decode --batch-sweep 1,256 --context 4096 "
    "--hw H200-SXM --no-verify --routing balanced": 120,
}


def docs() -> list[Path]:
    """README.md and every .md under docs/ and examples/."""
    return [
        ROOT / "README.md",
        *sorted((ROOT / "docs").rglob("*.md")),
        *sorted((ROOT / "examples").rglob("*.md")),
    ]


@dataclass(frozen=True)
class Block:
    """One ```console block: its doc, the line of its fence, the command and the shown output."""

    doc: Path
    line: int
    command: str
    shown: str

    @property
    def is_solar(self) -> bool:
        return self.command.startswith("solar ")

    @property
    def name(self) -> str:
        return f"{self.doc.relative_to(ROOT)}:{self.line}"


def _block(doc: Path, text: str, m: re.Match) -> Block:
    return Block(doc, text.count("\n", 0, m.start()) + 1, m.group(1), m.group(2))


def doc_blocks(doc: Path) -> list[Block]:
    text = doc.read_text()
    return [_block(doc, text, m) for m in CONSOLE.finditer(text)]


def blocks() -> list[Block]:
    return [b for doc in docs() for b in doc_blocks(doc)]


def setup_of(block: Block) -> list[Block]:
    """The blocks before ``block`` in its doc that prepare files (not ``$ solar``)."""
    return [b for b in doc_blocks(block.doc) if b.line < block.line and not b.is_solar]


@contextlib.contextmanager
def scratch(setup: list[Block]) -> Iterator[Path]:
    """A temporary directory that mirrors the repository root, with ``setup`` run in it."""
    with tempfile.TemporaryDirectory(prefix="solar-docs-") as tmp:
        where = Path(tmp)
        for entry in ROOT.iterdir():
            if entry.name != ".git":
                (where / entry.name).symlink_to(entry)
        for b in setup:
            prepare(b, where)
        yield where


def prepare(block: Block, where: Path) -> None:
    """Runs a setup block in ``where``: ``cat NAME`` writes NAME, ``python ...`` runs."""
    args = shlex.split(block.command)
    if args[0] == "cat" and len(args) == 2 and "/" not in args[1]:
        (where / args[1]).write_text(block.shown)
    elif args[0] == "python":
        done = subprocess.run(
            [sys.executable, *args[1:]], cwd=where, capture_output=True, text=True, check=False
        )
        if done.returncode != 0 or done.stdout != block.shown:
            raise AssertionError(
                f"{block.name}: '{block.command}' gave {done.stdout + done.stderr}"
            )
    else:
        raise AssertionError(
            f"{block.name}: a console block runs 'solar ...', 'cat NAME' or 'python ...', "
            f"not '{block.command}'"
        )


def run(block: Block) -> str:
    """The output of ``block``'s ``solar`` command, as the doc shows it: stdout, then stderr
    when it exits 1; stdout when ``solar ir verify`` exits 3 (an output differs: what its
    example shows). Any other exit code is an error."""
    from solar import cli

    with scratch(setup_of(block)) as where:
        out, err = io.StringIO(), io.StringIO()
        with (
            contextlib.chdir(where),
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
        ):
            rc = cli.main(shlex.split(block.command)[1:])
    if rc == 0:
        return out.getvalue()
    if rc == 1:
        return out.getvalue() + err.getvalue()
    if rc == 3 and shlex.split(block.command)[1:3] == ["ir", "verify"]:
        return out.getvalue()
    raise AssertionError(f"{block.name}: '{block.command}' exited {rc}: {err.getvalue()}")


# --- comparison ----------------------------------------------------------------------------

_NUMBER = r"(?:[0-9.]+(?:e[-+][0-9]+)?|inf|nan)"
# A verification line's measured errors, and the check it states after them (src/report/
# provenance.cpp, output_line; the LLM agent's lines end in `) MISMATCH; ...`).
_MEASURED = re.compile(rf"\b(max_abs_err|max_rel_err)=({_NUMBER})(?=[ ;,)]|$)")
_CHECK = re.compile(r" rtol=(\S+) atol=(\S+?)\)? (ok|MISMATCH)\b")
# The float64 recheck's verdict (python/solar/verify/float64.py, recheck_in_float64): the errors of
# both frameworks' runs.
_RECHECK = re.compile(
    rf"(max rel err )({_NUMBER})( in float32, )({_NUMBER})( in float64)"
    rf"|(is up to )({_NUMBER})( off its float64 run)"
)


def _blank(line: str) -> str:
    """``line`` with the framework's measured numbers left out."""
    line = _MEASURED.sub(r"\1=#", line)
    numbers = (2, 4, 7)  # the groups of _RECHECK that hold a number
    return _RECHECK.sub(
        lambda m: "".join(
            "#" if i in numbers else g for i, g in enumerate(m.groups(), start=1) if g
        ),
        line,
    )


def _check_errors(line: str) -> str | None:
    """Why the errors on verification line ``line`` do not pass the check it states, or None.
    An element passes when |got - expected| <= atol * scale + rtol * |expected|, and its
    relative error divides by max(|expected|, atol / rtol * scale) (src/exec/verify.cpp): so a
    passing output's max_rel_err is at most 2 rtol (atol when rtol is 0), a failing one's above
    rtol (atol); max_abs_err is 0 exactly when max_rel_err is."""
    errors = {m.group(1): float(m.group(2)) for m in _MEASURED.finditer(line)}
    check = _CHECK.search(line)
    if not errors or check is None:
        return None
    rtol, atol, verdict = float(check.group(1)), float(check.group(2)), check.group(3)
    if any(math.isnan(v) or v < 0 for v in errors.values()):
        return "an error is not a number >= 0"
    rel, abs_ = errors.get("max_rel_err"), errors.get("max_abs_err")
    if rel is not None and abs_ is not None and (rel == 0) != (abs_ == 0):
        return f"max_abs_err={abs_:g} and max_rel_err={rel:g} (one is 0, the other not)"
    if rel is None:
        return None
    if verdict == "ok" and not rel <= (2 * rtol if rtol > 0 else atol):
        return f"max_rel_err={rel:g} is above what a passing output's can be (rtol={rtol:g})"
    if verdict == "MISMATCH" and not rel > (rtol if rtol > 0 else atol):
        return f"max_rel_err={rel:g} is within what a failing output's cannot be (rtol={rtol:g})"
    return None


def same_output(shown: str, real: str) -> str | None:
    """None when ``real`` is the output ``shown``: byte for byte, except the framework's
    measured errors on a verification line, which may differ if the line is otherwise the
    same and both errors pass its check; else why not (the first line that differs)."""
    if shown == real:
        return None
    shown_lines, real_lines = shown.split("\n"), real.split("\n")
    for i, (a, b) in enumerate(zip(shown_lines, real_lines, strict=False), start=1):
        if a == b:
            continue
        if _blank(a) != _blank(b):
            return f"line {i} differs:\n  shown: {a}\n  real:  {b}"
        for which, line in (("shown", a), ("real", b)):
            why = _check_errors(line)
            if why is not None:
                return f"line {i}: the {which} errors do not pass the line's check: {why}\n  {line}"
    if len(shown_lines) != len(real_lines):
        return f"{len(shown_lines) - 1} lines shown, {len(real_lines) - 1} printed"
    return None


# --- tests ---------------------------------------------------------------------------------


def test_every_study_and_the_readme_have_commands():
    names = {b.doc.parent.name for b in blocks() if b.is_solar}
    assert {"algorithm", "cross_platform", "provisioning", "headroom", "docs"} <= names, names
    assert any(b.doc == ROOT / "README.md" for b in blocks())


def test_a_console_block_shows_one_command():
    several = [b.name for b in blocks() if re.search(r"^\$ ", b.shown, re.MULTILINE)]
    assert not several, f"split these into one ```console block per command: {several}"


_PLAIN_OUTPUT_ALLOWED: set[str] = set()  # docs whose plain fences may show output: none


def test_no_plain_fence_shows_the_output_of_a_solar_command():
    """A `$ solar ...` with its output is a ```console block (run above); a plain fence shows
    commands only."""
    found = []
    for doc in docs():
        if str(doc.relative_to(ROOT)) in _PLAIN_OUTPUT_ALLOWED:
            continue
        text = doc.read_text()
        for m in FENCE.finditer(text):
            if m.group(1) == "console":
                continue
            lines = m.group(2).splitlines()
            for i, line in enumerate(lines):
                if line.startswith("$ solar") and i + 1 < len(lines) and lines[i + 1].strip():
                    if not lines[i + 1].startswith("$ "):
                        found.append(
                            f"{doc.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}"
                        )
    assert not found, f"make these ```console blocks (or show no output): {found}"


def test_every_slow_command_is_shown():
    shown = {b.command for b in blocks()}
    assert set(SLOW) <= shown, set(SLOW) - shown


@pytest.mark.parametrize(
    "block",
    [
        pytest.param(b, id=b.name, marks=[pytest.mark.slow] if b.command in SLOW else [])
        for b in blocks()
        if b.is_solar
    ],
)
def test_shown_output_is_the_real_output(block):
    pytest.importorskip("torch")
    if "jax" in block.command:
        pytest.importorskip("jax")
    why = same_output(block.shown, run(block))
    assert why is None, f"{block.name}: the output of '{block.command}' differs: {why}"


_BF16 = "  mm: bf16[256, 1024] max_abs_err=0.0312 max_rel_err=0.000595 rtol=0.02 atol=0.01 ok\n"
_SOL = "unfused   1.767 ns    96 ps  1.767 ns     5.92 kB  memory\n"


def test_the_frameworks_errors_may_differ_within_the_lines_check():
    # A CPU with native BF16 instructions (AVX-512 BF16) rounds this GEMM otherwise.
    other_cpu = _BF16.replace("0.0312", "0.125").replace("0.000595", "0.00238")
    assert same_output(_BF16 + _SOL, other_cpu + _SOL) is None
    exact = _BF16.replace("0.0312", "0").replace("0.000595", "0")
    assert same_output(_BF16, exact) is None


def test_solars_numbers_and_the_rest_of_a_verification_line_are_exact():
    assert same_output(_BF16 + _SOL, _BF16 + _SOL.replace("1.767 ns", "1.768 ns", 1))
    assert same_output(_BF16 + _SOL, _BF16)  # a line less
    for old, new in (
        ("[256, 1024]", "[256, 512]"),
        ("rtol=0.02", "rtol=0.05"),
        ("atol=0.01", "atol=0.1"),
        (" ok", " MISMATCH"),
        ("mm:", "mm_1:"),
        ("0.0312", "undefined"),
    ):
        assert same_output(_BF16, _BF16.replace(old, new)), new


def test_an_error_outside_the_lines_check_fails():
    # ok with rtol 0.02: every element's relative error is at most 2 x 0.02
    assert same_output(_BF16, _BF16.replace("0.000595", "0.05"))
    assert same_output(_BF16, _BF16.replace("0.000595", "0"))  # max_abs_err is not 0
    mismatch = _BF16.replace(" ok", " MISMATCH").replace("0.000595", "0.5")
    assert same_output(mismatch, mismatch.replace("0.5", "0.3")) is None
    assert same_output(mismatch, mismatch.replace("0.5", "0.01"))  # a failing one's is > rtol


def test_the_float64_recheck_figures_are_the_frameworks():
    line = (
        "  float64 recheck: ill-conditioned in float32: the float64 runs agree "
        "(max rel err 0.3 in float32, 1e-10 in float64)\n"
    )
    assert same_output(line, line.replace("0.3", "0.25").replace("1e-10", "2e-11")) is None
    assert same_output(line, line.replace("agree", "disagree"))


# --- update --------------------------------------------------------------------------------


def update(names: list[str], fast: bool) -> None:
    for doc in docs():
        if names and str(doc.relative_to(ROOT)) not in names:
            continue
        text = doc.read_text()

        def rerun(m: re.Match, doc: Path = doc, text: str = text) -> str:
            block = _block(doc, text, m)
            if not block.is_solar or (fast and block.command in SLOW):
                return m.group(0)
            began = time.monotonic()
            out = run(block)
            print(f"{block.name}: {time.monotonic() - began:.1f} s", file=sys.stderr)
            return f"```console\n$ {block.command}\n{out}```"

        new = CONSOLE.sub(rerun, text)
        if new != text:
            doc.write_text(new)
            print(f"updated {doc.relative_to(ROOT)}")


if __name__ == "__main__":
    flags = [a for a in sys.argv[1:] if a.startswith("--")]
    if "--update" not in flags or set(flags) - {"--update", "--fast"}:
        raise SystemExit("usage: python3 tests/python/test_studies.py --update [--fast] [DOC ...]")
    update([a for a in sys.argv[1:] if not a.startswith("--")], "--fast" in flags)
