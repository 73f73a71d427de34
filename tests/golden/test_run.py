"""Unit tests of the golden-file runner (run.py), against a fake `solar`.

Run: python3 -m unittest discover -s tests/golden -p 'test_run.py'
"""

from __future__ import annotations

import contextlib
import io
import stat
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run  # noqa: E402

# `ir fmt FILE` prints FILE with trailing spaces removed from each line, and "v1" changed to
# "v2" and "v2" to "v3" (so it is not idempotent on those). `ir check FILE` prints
# the text after `DIAG ` on each such line of FILE to stderr, prefixed with `FILE:`, and exits 1
# if there was one; otherwise prints `FILE: ok` and exits 0. `show FILE ARGS...` prints FILE in
# upper case, then `args: ARGS`, and exits 1 if FILE holds `FAIL`.
FAKE_SOLAR = textwrap.dedent("""\
    #!/usr/bin/env python3
    import sys
    if sys.argv[1] == "show":
        text = open(sys.argv[2]).read()
        if "FAIL" in text:
            sys.stderr.write("failed\\n")
            sys.exit(1)
        sys.stdout.write(text.upper() + "args: " + " ".join(sys.argv[3:]) + "\\n")
        sys.exit(0)
    _, _, cmd, path = sys.argv
    text = open(path).read()
    if cmd == "fmt":
        lines = (ln.rstrip().replace("v2", "v3").replace("v1", "v2") for ln in text.splitlines())
        sys.stdout.write("".join(line + "\\n" for line in lines))
        sys.exit(0)
    diags = [line[5:] for line in text.splitlines() if line.startswith("DIAG ")]
    for d in diags:
        sys.stderr.write(path + ":" + d + "\\n")
    if not diags:
        print(path + ": ok")
    sys.exit(1 if diags else 0)
    """)


class RunnerTest(unittest.TestCase):
    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self.root = Path(self._tmp.name)
        (self.root / "fmt").mkdir()
        (self.root / "errors").mkdir()
        self.solar = self.root / "fake_solar"
        self.solar.write_text(FAKE_SOLAR)
        self.solar.chmod(self.solar.stat().st_mode | stat.S_IXUSR)

    def tearDown(self) -> None:
        self._tmp.cleanup()

    def write(self, name: str, text: str) -> Path:
        path = self.root / name
        path.write_text(text)
        return path

    def main(self, *args: str) -> tuple[int, str]:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = run.main(["--solar", str(self.solar), *args])
        return rc, out.getvalue()

    def test_fmt_pass_and_mismatch(self) -> None:
        good = self.write("fmt/good.ir", "a  \nb\n")
        self.write("fmt/good.expected", "a\nb\n")
        bad = self.write("fmt/bad.ir", "a\nc\n")
        self.write("fmt/bad.expected", "a\nb\n")
        rc, out = self.main(str(good), str(bad))
        self.assertEqual(rc, 1)
        self.assertIn("FAIL " + str(bad) + ": output differs", out)
        self.assertIn("-b\n+c\n", out)
        self.assertTrue(out.endswith("golden: 1 passed, 1 failed\n"))

    def test_fmt_expected_must_be_a_fixed_point(self) -> None:
        case = self.write("fmt/x.ir", "v1\n")
        self.write("fmt/x.expected", "v2\n")  # matches, but formats to v3
        rc, out = self.main(str(case))
        self.assertEqual(rc, 1)
        self.assertIn("x.expected does not format to itself", out)
        self.assertIn("-v2\n+v3\n", out)

    def test_fmt_missing_expected_and_update(self) -> None:
        case = self.write("fmt/new.ir", "x  \ny\n")
        rc, out = self.main(str(case))
        self.assertEqual(rc, 1)
        self.assertIn("missing new.expected (run with --update)", out)
        rc, out = self.main("--update", str(case))
        self.assertEqual(rc, 0)
        self.assertIn("+x\n+y\n", out)
        self.assertIn("UPDATED " + str(case), out)
        self.assertEqual((self.root / "fmt/new.expected").read_text(), "x\ny\n")
        rc, out = self.main(str(case))
        self.assertEqual((rc, out), (0, "golden: 1 passed, 0 failed\n"))

    def test_update_shows_what_changed(self) -> None:
        case = self.write("fmt/c.ir", "one\ntwo\n")
        self.write("fmt/c.expected", "one\n2\n")
        rc, out = self.main("--update", str(case))
        self.assertEqual(rc, 0)
        self.assertIn("-2\n+two\n", out)
        self.assertEqual((self.root / "fmt/c.expected").read_text(), "one\ntwo\n")

    def test_error_cases(self) -> None:
        ok = self.write(
            "errors/ok.ir", "# expected-error: 2:3: bad thing\nDIAG 2:3: error: bad thing\n"
        )
        wrong = self.write(
            "errors/wrong.ir", "# expected-error: 2:3: bad thing\nDIAG 2:4: error: bad thing\n"
        )
        passes = self.write("errors/passes.ir", "# expected-error: 1:1: nothing\n")
        unmarked = self.write("errors/unmarked.ir", "DIAG 1:1: error: x\n")
        two = self.write(
            "errors/two.ir", "# expected-error: 1:1: x\nDIAG 1:1: error: x\nDIAG 1:2: error: y\n"
        )
        rc, out = self.main(*(str(p) for p in (ok, wrong, passes, unmarked, two)))
        self.assertEqual(rc, 1)
        self.assertIn(f"actual:   {wrong}:2:4: error: bad thing", out)
        self.assertIn(f"FAIL {passes}: expected failure, got exit 0", out)
        self.assertIn(f"FAIL {unmarked}: needs exactly one '# expected-error", out)
        self.assertIn(f"FAIL {two}: stderr differs", out)
        self.assertNotIn(f"FAIL {ok}", out)
        self.assertTrue(out.endswith("golden: 1 passed, 4 failed\n"))

    def test_error_file_of_several_cases(self) -> None:
        # Lines count from each case's first line: case `b` starts on line 6 of the file.
        text = (
            "# header comment\n"
            "# ----- a\n"
            "# expected-error: 2:3: bad thing\n"
            "DIAG 2:3: error: bad thing\n"
            "\n"
            "# ----- b\n"
            "# expected-error: 2:1: other\n"
            "DIAG 2:1: error: other\n"
            "# ----- c\n"
            "# expected-error: 1:1: wrong line\n"
            "DIAG 2:1: error: wrong line\n"
        )
        case = self.write("errors/many.ir", text)
        rc, out = self.main(str(case))
        self.assertEqual(rc, 1)
        self.assertNotIn(f"FAIL {case}#a", out)
        self.assertNotIn(f"FAIL {case}#b", out)
        self.assertIn(f"FAIL {case}#c: stderr differs (line 1 of the case is line 10", out)
        self.assertIn(f"expected: {case}#c:1:1: error: wrong line", out)
        self.assertIn(f"actual:   {case}#c:2:1: error: wrong line", out)
        self.assertTrue(out.endswith("golden: 2 passed, 1 failed\n"))
        # One case by name; an unknown name fails.
        self.assertEqual(self.main(f"{case}#b"), (0, "golden: 1 passed, 0 failed\n"))
        rc, out = self.main(f"{case}#nope")
        self.assertIn(f"FAIL {case}#nope: no case 'nope' in {case}", out)

    def test_error_file_problems(self) -> None:
        code = self.write("errors/code.ir", "DIAG 1:1: error: x\n# ----- a\n")
        twice = self.write(
            "errors/twice.ir",
            "# ----- a\n# expected-error: 1:1: x\n# ----- a\n# expected-error: 1:1: x\n",
        )
        unnamed = self.write("errors/unnamed.ir", "# ----- \n# expected-error: 1:1: x\n")
        rc, out = self.main(str(code), str(twice), str(unnamed))
        self.assertEqual(rc, 1)
        self.assertIn(f"FAIL {code}: text before the first '# ----- CASE' line", out)
        self.assertIn(f"FAIL {twice}#a: line 3: a second case named 'a'", out)
        self.assertIn(f"FAIL {unnamed}#: line 1: '# -----' needs a case name", out)

    def test_command_cases(self) -> None:
        (self.root / "show").mkdir()
        self.write("show/command", "show {case} --flag\n")
        good = self.write("show/good.ir", "a\n# golden-args: -n 'x y'\n")
        self.write("show/good.expected", "A\n# GOLDEN-ARGS: -N 'X Y'\nargs: --flag -n x y\n")
        bad = self.write("show/bad.ir", "b\n")
        self.write("show/bad.expected", "c\nargs: --flag\n")
        failing = self.write("show/failing.ir", "FAIL\n")
        two = self.write("show/two.ir", "# golden-args: -a\n# golden-args: -b\n")
        rc, out = self.main(*(str(p) for p in (good, bad, failing, two)))
        self.assertEqual(rc, 1)
        self.assertNotIn(f"FAIL {good}", out)
        self.assertIn(f"FAIL {bad}: output differs", out)
        self.assertIn("-c\n+B\n", out)
        self.assertIn(f"FAIL {failing}: exit code 1, stderr: failed", out)
        self.assertIn(f"FAIL {two}: more than one '# golden-args:' line", out)
        self.assertTrue(out.endswith("golden: 1 passed, 3 failed\n"))

    def test_command_case_update(self) -> None:
        (self.root / "show").mkdir()
        self.write("show/command", "show {case}\n")
        case = self.write("show/new.ir", "n\n")
        rc, out = self.main(str(case))
        self.assertEqual(rc, 1)
        self.assertIn("missing new.expected (run with --update)", out)
        rc, out = self.main("--update", str(case))
        self.assertEqual(rc, 0)
        self.assertIn(f"UPDATED {case}", out)
        self.assertEqual((self.root / "show/new.expected").read_text(), "N\nargs: \n")
        self.assertEqual(self.main(str(case)), (0, "golden: 1 passed, 0 failed\n"))

    def test_case_outside_a_known_folder(self) -> None:
        (self.root / "other").mkdir()
        case = self.write("other/x.ir", "x\n")
        rc, out = self.main(str(case))
        self.assertEqual(rc, 1)
        self.assertIn("not under fmt/, errors/ or a folder with a 'command' file", out)

    def test_missing_binary_fails_cleanly(self) -> None:
        case = self.write("errors/e.ir", "# expected-error: 1:1: x\n")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = run.main(["--solar", str(self.root / "no_such_solar"), str(case)])
        self.assertEqual(rc, 1)
        self.assertIn("could not run", out.getvalue())

    def test_default_discovery_and_no_cases(self) -> None:
        with mock.patch.object(run, "ROOT", self.root):
            rc, out = self.main()
            self.assertEqual((rc, out), (1, "no golden cases found\ngolden: 0 passed, 0 failed\n"))
            self.write("fmt/a.ir", "a\n")
            self.write("fmt/a.expected", "a\n")
            self.write("errors/b.ir", "# expected-error: 1:1: x\nDIAG 1:1: error: x\n")
            self.write("fmt/notes.txt", "not a case")
            (self.root / "show").mkdir()
            self.write("show/command", "show {case}\n")
            self.write("show/c.ir", "c\n")
            self.write("show/c.expected", "C\nargs: \n")
            (self.root / "other").mkdir()
            self.write("other/d.ir", "no command file here: not collected\n")
            rc, out = self.main()
            self.assertEqual((rc, out), (0, "golden: 3 passed, 0 failed\n"))


if __name__ == "__main__":
    unittest.main()
