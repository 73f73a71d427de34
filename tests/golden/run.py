#!/usr/bin/env python3
"""Golden-file tests for the `solar` executable: IR formatting, diagnostics, and command output.

Three kinds of case, one file each:

  fmt/NAME.ir      `solar ir fmt fmt/NAME.ir` must exit 0 and print exactly fmt/NAME.expected
                   (the canonical form), and formatting NAME.expected must print it unchanged.
                   `--update` rewrites the .expected files from the actual output and prints a
                   unified diff of every change.
  errors/NAME.ir   one or more error cases. A line `# ----- CASE` starts the case CASE (a name
                   of letters, digits and `_`), which runs to the next such line; the comments
                   before the first one describe the file. A file without such lines is one case.
                   Each case holds one line `# expected-error: LINE:COL: MESSAGE` (MLIR style),
                   LINE counted from the case's first line (the one after its `# -----` line), so
                   a case reads and runs alone and editing one case moves no other's anchors;
                   blank lines that end a case separate it from the next, and are not its text.
                   The case's text, alone in a file, given to `solar ir check` must exit
                   non-zero and print exactly one line on stderr, `NAME.ir#CASE:LINE:COL: error:
                   MESSAGE` (its path shown as `errors/NAME.ir#CASE`, or the path as passed for
                   a file of one case).
  DIR/NAME.ir      in any other folder DIR that holds a file `DIR/command`: that file's one line is
                   a solar command line with `{case}` standing for the case's path (e.g.
                   `lift {case}`); a case may add arguments with one line `# golden-args: ARGS`.
                   The command must exit 0 and print exactly DIR/NAME.expected; `--update`
                   rewrites it as for fmt/.

Usage: run.py [--solar PATH] [--update] [CASE ...]   (CASE: .ir files, or errors/NAME.ir#CASE for
one case of an error file; default: all cases)
Prints one line per failure with the details, then `golden: N passed, M failed`; exits 1 if
any case failed (or none was found), else 0. Python 3 standard library only.
"""

from __future__ import annotations

import argparse
import difflib
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent
TIMEOUT_S = 60
EXPECTED_ERROR = re.compile(r"^\s*#\s*expected-error:\s*(\d+):(\d+):\s*(.*?)\s*$")
GOLDEN_ARGS = re.compile(r"^\s*#\s*golden-args:(.*)$")
CASE_START = re.compile(r"^#\s*-{3,}\s*(.*?)\s*$")
CASE_NAME = re.compile(r"^[A-Za-z0-9_]+$")


@dataclass
class Result:
    case: Path | str  # a case file, or `errors/NAME.ir#CASE`
    ok: bool
    detail: str = ""


@dataclass
class ErrorCase:
    """One case of an error file: its label, its text and where it starts in the file."""

    label: str  # the path as passed, with `#CASE` when the file has `# -----` lines
    text: str
    first_line: int  # the file's line number of the case's line 1
    problem: str = ""  # why the file's cases could not be read, or ""


def run_solar(solar: str, args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [solar, *args], capture_output=True, text=True, errors="replace", timeout=TIMEOUT_S
    )


def unified_diff(expected: str, actual: str, name: str) -> str:
    lines = difflib.unified_diff(
        expected.splitlines(keepends=True),
        actual.splitlines(keepends=True),
        fromfile=f"{name} (expected)",
        tofile=f"{name} (actual)",
    )
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )


def compare_output(
    case: Path, proc: subprocess.CompletedProcess, update: bool
) -> tuple[Result, bool]:
    """The case's result, and whether its output equals its .expected file (as it was)."""
    expected_path = case.with_suffix(".expected")
    if proc.returncode != 0:
        detail = f"exit code {proc.returncode}, stderr: {proc.stderr.strip()}"
        return Result(case, False, detail), False
    expected = expected_path.read_text() if expected_path.exists() else None
    if expected == proc.stdout:
        return Result(case, True), True
    if update:
        sys.stdout.write(unified_diff(expected or "", proc.stdout, str(expected_path)))
        expected_path.write_text(proc.stdout)
        return Result(case, True, "updated"), False
    if expected is None:
        return Result(case, False, f"missing {expected_path.name} (run with --update)"), False
    diff = unified_diff(expected, proc.stdout, str(case))
    return Result(case, False, "output differs:\n" + diff), False


def run_fmt_case(solar: str, case: Path, update: bool) -> Result:
    result, matched = compare_output(case, run_solar(solar, ["ir", "fmt", str(case)]), update)
    if matched:
        return check_fixed_point(solar, case, case.with_suffix(".expected"))
    return result


def command_line(case: Path) -> list[str] | None:
    """The folder's command with `{case}` replaced, plus the case's `# golden-args:`; None if
    the case has more than one such line."""
    words = shlex.split((case.parent / "command").read_text())
    extra = [m.group(1) for m in map(GOLDEN_ARGS.match, case.read_text().splitlines()) if m]
    if len(extra) > 1:
        return None
    args = [str(case) if w == "{case}" else w for w in words]
    return args + (shlex.split(extra[0]) if extra else [])


def run_command_case(solar: str, case: Path, update: bool) -> Result:
    args = command_line(case)
    if args is None:
        return Result(case, False, "more than one '# golden-args:' line")
    return compare_output(case, run_solar(solar, args), update)[0]


def check_fixed_point(solar: str, case: Path, expected_path: Path) -> Result:
    """The canonical form formats to itself (print is idempotent)."""
    proc = run_solar(solar, ["ir", "fmt", str(expected_path)])
    expected = expected_path.read_text()
    if proc.returncode != 0 or proc.stdout != expected:
        return Result(
            case,
            False,
            f"{expected_path.name} does not format to itself:\n"
            + unified_diff(expected, proc.stdout, str(expected_path))
            + proc.stderr,
        )
    return Result(case, True)


def error_cases(path: Path) -> list[ErrorCase]:
    """The cases of an error file, in order (one case when it has no `# -----` line)."""
    lines = path.read_text().splitlines(keepends=True)
    starts = [(i, m.group(1)) for i, m in enumerate(map(CASE_START.match, lines)) if m]
    if not starts:
        return [ErrorCase(str(path), "".join(lines), 1)]
    cases: list[ErrorCase] = []
    header = lines[: starts[0][0]]
    if any(line.strip() and not line.lstrip().startswith("#") for line in header):
        return [ErrorCase(str(path), "", 1, "text before the first '# ----- CASE' line")]
    seen: set[str] = set()
    for n, (at, name) in enumerate(starts):
        end = starts[n + 1][0] if n + 1 < len(starts) else len(lines)
        label = f"{path}#{name}"
        problem = ""
        if not CASE_NAME.match(name):
            problem = f"line {at + 1}: '# -----' needs a case name of letters, digits and '_'"
        elif name in seen:
            problem = f"line {at + 1}: a second case named '{name}'"
        seen.add(name)
        body = lines[at + 1 : end]
        while body and not body[-1].strip():  # the blank lines that separate cases
            body.pop()
        cases.append(ErrorCase(label, "".join(body), at + 2, problem))
    return cases


def expected_error(case: ErrorCase) -> str | None:
    """`LABEL:LINE:COL: error: MESSAGE` from the case's `# expected-error:` line, or None."""
    matches = [EXPECTED_ERROR.match(line) for line in case.text.splitlines()]
    found = [m for m in matches if m]
    if len(found) != 1:
        return None
    line, col, message = found[0].groups()
    return f"{case.label}:{line}:{col}: error: {message}"


def run_error_case(solar: str, case: ErrorCase) -> Result:
    if case.problem:
        return Result(case.label, False, case.problem)
    want = expected_error(case)
    if want is None:
        return Result(
            case.label, False, "needs exactly one '# expected-error: LINE:COL: MESSAGE' line"
        )
    with tempfile.TemporaryDirectory() as tmp:
        # The case alone in a file: its diagnostics count lines from the case's first line.
        path = Path(tmp) / Path(case.label.split("#")[0]).name
        path.write_text(case.text)
        proc = run_solar(solar, ["ir", "check", str(path)])
    got = proc.stderr.rstrip("\n").replace(str(path), case.label)
    where = ""
    if "#" in case.label:
        where = f" (line 1 of the case is line {case.first_line} of the file)"
    if proc.returncode == 0:
        return Result(case.label, False, f"expected failure, got exit 0; wanted: {want}{where}")
    if got != want:
        detail = f"stderr differs{where}:\n  expected: {want}\n  actual:   {got}"
        return Result(case.label, False, detail)
    return Result(case.label, True)


def collect(paths: list[str]) -> list[Path | ErrorCase]:
    """The cases to run: each error file gives its cases, other files are one case each."""
    if paths:
        files = [Path(p) for p in paths]
    else:
        files = sorted((ROOT / "fmt").glob("*.ir")) + sorted((ROOT / "errors").glob("*.ir"))
        for command in sorted(ROOT.glob("*/command")):
            files += sorted(command.parent.glob("*.ir"))
    cases: list[Path | ErrorCase] = []
    for f in files:
        name = str(f)
        file, _, only = name.partition("#")
        if Path(file).parent.name != "errors":
            cases.append(f)
            continue
        try:
            found = error_cases(Path(file))
        except OSError as e:
            cases.append(ErrorCase(name, "", 1, f"could not read: {e}"))
            continue
        if only:
            found = [c for c in found if c.label == name] or [
                ErrorCase(name, "", 1, f"no case '{only}' in {file}")
            ]
        cases += found
    return cases


def run_case(solar: str, case: Path | ErrorCase, update: bool) -> Result:
    if isinstance(case, ErrorCase):
        try:
            return run_error_case(solar, case)
        except (OSError, subprocess.SubprocessError) as e:
            return Result(case.label, False, f"could not run: {e}")
    try:
        if case.parent.name == "fmt":
            return run_fmt_case(solar, case, update)
        if (case.parent / "command").is_file():
            return run_command_case(solar, case, update)
        return Result(case, False, "not under fmt/, errors/ or a folder with a 'command' file")
    except (OSError, subprocess.SubprocessError) as e:
        return Result(case, False, f"could not run: {e}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--solar", default="solar", help="the solar executable (default: on PATH)")
    parser.add_argument(
        "--update",
        action="store_true",
        help="rewrite the .expected files from the actual output and show the diff",
    )
    parser.add_argument("cases", nargs="*", help="case files to run (default: all)")
    args = parser.parse_args(argv)

    results = [run_case(args.solar, case, args.update) for case in collect(args.cases)]
    for r in results:
        if not r.ok:
            print(f"FAIL {r.case}: {r.detail}")
        elif r.detail:
            print(f"{r.detail.upper()} {r.case}")
    if not results:
        print("no golden cases found")
    failed = sum(not r.ok for r in results)
    print(f"golden: {len(results) - failed} passed, {failed} failed")
    return 1 if failed or not results else 0


if __name__ == "__main__":
    sys.exit(main())
