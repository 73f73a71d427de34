"""The studies' docs never drift (examples/studies/): every ```console block of a study's
README.md (and of the repository's README.md) that starts with ``$ solar ...`` is that
command's real output, and this test runs the
command (from the repository root, in-process) and compares the output byte for byte.

``python3 tests/python/test_studies.py --update`` rewrites the blocks with the commands' output
(then read the diff: a changed number must be explained)."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STUDIES = ROOT / "examples" / "studies"
BLOCK = re.compile(r"```console\n\$ (solar [^\n]*)\n(.*?)```", re.DOTALL)


def docs() -> list[Path]:
    """The study docs, the repository's README (its quick start's output), docs/parallel.md,
    docs/benchmarks.md and docs/serving.md (its ```console blocks)."""
    extra = [ROOT / "docs" / d for d in ("parallel.md", "benchmarks.md", "serving.md")]
    return [ROOT / "README.md", *sorted(STUDIES.rglob("README.md")), *extra]


def blocks() -> list[tuple[Path, str, str]]:
    """(doc, command, shown output) of every command block of every study doc."""
    found = []
    for doc in docs():
        for m in BLOCK.finditer(doc.read_text()):
            found.append((doc, m.group(1), m.group(2)))
    return found


def run(command: str) -> tuple[int, str]:
    """``command`` (``solar ARGS...``) run in-process from the repository root: exit code and
    stdout."""
    from solar import cli

    args = shlex.split(command)[1:]
    out = io.StringIO()
    with contextlib.chdir(ROOT), contextlib.redirect_stdout(out):
        rc = cli.main(args)
    return rc, out.getvalue()


def test_every_study_has_commands():
    names = {doc.parent.name for doc, _, _ in blocks()}
    assert {"algorithm", "cross_platform", "provisioning", "headroom"} <= names, names
    assert any(doc == ROOT / "README.md" for doc, _, _ in blocks())


@pytest.mark.parametrize(
    ("doc", "command", "shown"),
    blocks(),
    ids=[f"{d.parent.name}:{i}" for i, (d, _, _) in enumerate(blocks())],
)
def test_shown_output_is_the_real_output(doc, command, shown):
    pytest.importorskip("torch")
    rc, out = run(command)
    assert rc == 0, f"{doc}: '{command}' exited {rc}"
    assert out == shown, f"{doc}: the output of '{command}' differs from the one shown"


def _rerun(m: re.Match) -> str:
    rc, out = run(m.group(1))
    if rc != 0:
        raise SystemExit(f"'{m.group(1)}' exited {rc}")
    return f"```console\n$ {m.group(1)}\n{out}```"


def update() -> None:
    for doc in docs():
        text = doc.read_text()
        new = BLOCK.sub(_rerun, text)
        if new != text:
            doc.write_text(new)
            print(f"updated {doc.relative_to(ROOT)}")


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        raise SystemExit("usage: python3 tests/python/test_studies.py --update")
    update()
