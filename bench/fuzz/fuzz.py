"""Fuzzing SOLAR's front doors (docs/testing.md, "Fuzzing the front doors"): model files,
benchmark definitions and IR files, mutated as a careless or unlucky user would, each run
through the ``solar`` command line in a child process with a time and a memory limit, and every
outcome classified:

- ``result``: exit 0;
- ``error``: exit 1 with exactly one ``solar CMD: error: ...`` line on stderr (or, for an IR
  file, one ``FILE:LINE:COL: error: ...`` line per error the checker found), other lines only
  notes and the framework's warnings, no traceback;
- a defect: ``traceback`` (a Python traceback on stderr), ``internal`` (an internal error, exit
  2), ``signal`` (killed by a signal: a crash or the kernel's memory killer), ``hang`` (past the
  time limit), ``memory`` (a peak resident size past the memory limit), ``unclear`` (any other
  exit: several error lines, an error without the ``solar CMD: error:`` prefix).

Each defect is saved as a reproducer: the mutated file(s), the command and what it printed,
under ``OUT/defects/NNN-KIND/``. Same seed, same mutants, in the same order.

    python3 bench/fuzz/fuzz.py --seconds 60 --seed 1 --out build/fuzz         # about a minute
    python3 bench/fuzz/fuzz.py --seconds 3600 --seed 7 --out build/fuzz-hour  # an hour

The short run is part of the test command (tests/python/test_fuzz.py); the long run is
documented in bench/README.md. Exit code: 0 with no defect, 1 with one or more.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tokenize
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Small seeds (each analyses in seconds): the project's own examples and test models.
MODEL_SEEDS = [
    "tests/python/models/mlp.py",
    "tests/python/models/cnn.py",
    "tests/python/models/mha.py",
    "tests/python/models/norm_pool.py",
    "tests/python/models/matmul_broadcast.py",
    "tests/python/models/embedding_scan.py",
    "tests/python/models/einsum_ellipsis.py",
    "tests/python/models/conv_transpose.py",
    "tests/python/models/rnn_relu.py",
]
DEFINITION_SEEDS = ["examples/benchmarks/gemm_fp32", "examples/benchmarks/paged_decode"]
IR_SEEDS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "examples").glob("*.ir"))

# What a careless edit puts in place of a number.
NUMBERS = ["0", "1", "-1", "1000000", "2147483648", "1000000000000"]
# Stray characters typed into a file.
STRAY = list("@#$(){}[],:;.=+-*/\\'\"\t\n") + ["  ", "0"]
# Ops swapped for others a user might have meant (model files and reference code).
PY_SWAPS = [
    ("torch.relu", "torch.sigmoid"),
    ("torch.matmul", "torch.mul"),
    ("F.relu", "F.gelu"),
    ("softmax", "log_softmax"),
    ("dim=-1", "dim=0"),
    ("dim=1", "dim=3"),
    (".sum(", ".mean("),
    (".mean(", ".amax("),
    ("transpose(1, 2)", "transpose(0, 1)"),
    (".view(", ".reshape("),
    (" + ", " * "),
    (" * ", " @ "),
    (" @ ", " - "),
    ("torch.cat", "torch.stack"),
    ("float32", "float16"),
    ("torch.randn", "torch.zeros"),
    ("nn.Linear", "nn.LazyLinear"),
    ("nn.Conv2d", "nn.Conv1d"),
]
# Statements inserted at the top of forward (X: its first argument).
FORWARD_STATEMENTS = [
    "X = X.unsqueeze(0)",
    "X = X[::2]",
    "X = X.t()",
    "X = torch.cat([X, X])",
    "X = X.float().double()",
    "X = X.to(torch.int64)",
    "X = X.reshape(-1)",
    "return None",
    "return X.sum().item()",
    "raise ValueError('mutated')",
    "X = X.nonzero()",
    "X = X[X > 0]",
    "X = torch.fft.fft(X)",
    "X = X.expand(2, *X.shape)",
]
IR_SWAPS = [("+=", "*="), ("+=", "="), ("*", "/"), ("..", "..."), ("f32", "bf16"), ("f32", "i9")]
IR_STATEMENTS = [
    "size Z = 0",
    "input Q : f32[Z, 3]",
    "output R : f32[4]",
    "kernel k { for i in 0..4: R[i] = R[i] }",
    "for i in 0..0:",
]


@dataclass
class Mutant:
    """One mutated input: ``files`` (relative path -> text) written into a fresh folder, and
    the ``solar`` commands run on it (each a list of arguments; ``{}`` is the folder)."""

    family: str  # "model", "definition" or "ir"
    seed: str  # the file it was made from
    mutation: str  # what was done, in words
    files: dict[str, str]
    commands: list[list[str]]


@dataclass
class Outcome:
    kind: str  # result, error, or a defect kind
    rc: int
    seconds: float
    peak_mb: float
    stderr: str


DEFECTS = ("traceback", "internal", "signal", "hang", "memory", "unclear")


# --- mutators --------------------------------------------------------------------------------


def _numbers(text: str) -> list[tuple[int, int]]:
    """Spans (start, end) of the integer and float literals of Python ``text`` (tokenize), or of
    every run of digits when it does not tokenize."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return [m.span() for m in re.finditer(r"\d+", text)]
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    return [
        (offsets[t.start[0] - 1] + t.start[1], offsets[t.end[0] - 1] + t.end[1])
        for t in tokens
        if t.type == tokenize.NUMBER
    ]


def replace_number(text: str, rng: random.Random) -> tuple[str, str]:
    spans = _numbers(text)
    if not spans:
        return delete_line(text, rng)
    start, end = rng.choice(spans)
    new = rng.choice(NUMBERS)
    return text[:start] + new + text[end:], f"number {text[start:end]!r} -> {new}"


def delete_line(text: str, rng: random.Random) -> tuple[str, str]:
    lines = text.splitlines(keepends=True)
    candidates = [i for i, line in enumerate(lines) if line.strip()]
    i = rng.choice(candidates)
    return "".join(lines[:i] + lines[i + 1 :]), f"line {i + 1} deleted"


def stray_character(text: str, rng: random.Random) -> tuple[str, str]:
    at = rng.randrange(len(text) + 1)
    c = rng.choice(STRAY)
    line = text.count("\n", 0, at) + 1
    return text[:at] + c + text[at:], f"{c!r} inserted on line {line}"


def swap(text: str, rng: random.Random, table: list[tuple[str, str]]) -> tuple[str, str]:
    found = [(a, b) for a, b in table if a in text]
    if not found:
        return stray_character(text, rng)
    a, b = rng.choice(found)
    starts = [m.start() for m in re.finditer(re.escape(a), text)]
    at = rng.choice(starts)
    return text[:at] + b + text[at + len(a) :], f"{a!r} -> {b!r} at offset {at}"


def rename_function(text: str, rng: random.Random) -> tuple[str, str]:
    names = re.findall(r"^\s*def (\w+)", text, re.MULTILINE)
    if not names:
        return stray_character(text, rng)
    name = rng.choice(names)
    return re.sub(rf"\bdef {name}\b", f"def {name}_", text, count=1), f"def {name} renamed"


def insert_into_forward(text: str, rng: random.Random) -> tuple[str, str]:
    m = re.search(r"^(\s*)def forward\(self,\s*\*?(\w+)[^\n]*\n", text, re.MULTILINE)
    if m is None:
        return stray_character(text, rng)
    body = re.match(r"[ \t]*", text[m.end() :]).group(0)
    statement = rng.choice(FORWARD_STATEMENTS).replace("X", m.group(2))
    at = m.end()
    return text[:at] + body + statement + "\n" + text[at:], f"'{statement}' inserted in forward"


PY_MUTATORS = [
    replace_number,
    replace_number,
    delete_line,
    stray_character,
    lambda t, r: swap(t, r, PY_SWAPS),
    lambda t, r: swap(t, r, PY_SWAPS),
    rename_function,
    insert_into_forward,
    insert_into_forward,
]


def insert_ir_statement(text: str, rng: random.Random) -> tuple[str, str]:
    lines = text.splitlines(keepends=True)
    i = rng.randrange(len(lines) + 1)
    statement = rng.choice(IR_STATEMENTS)
    return "".join(lines[:i] + [statement + "\n"] + lines[i:]), f"'{statement}' at line {i + 1}"


def duplicate_line(text: str, rng: random.Random) -> tuple[str, str]:
    lines = text.splitlines(keepends=True)
    i = rng.randrange(len(lines))
    return "".join(lines[: i + 1] + lines[i:]), f"line {i + 1} duplicated"


IR_MUTATORS = [
    replace_number,
    replace_number,
    delete_line,
    stray_character,
    lambda t, r: swap(t, r, IR_SWAPS),
    insert_ir_statement,
    duplicate_line,
]


def mutate(text: str, mutators: list, rng: random.Random, rounds: int) -> tuple[str, str]:
    """``rounds`` mutations of ``text`` in a row, and what they were."""
    done = []
    for _ in range(rounds):
        text, what = rng.choice(mutators)(text, rng)
        done.append(what)
    return text, "; ".join(done)


def model_mutant(rng: random.Random) -> Mutant:
    seed = rng.choice(MODEL_SEEDS)
    text, what = mutate((ROOT / seed).read_text(), PY_MUTATORS, rng, rng.choice([1, 1, 2]))
    name = Path(seed).name
    # --verify-budget-s: the verification's own time is bounded (a mutated size may be large);
    # --build-budget-s: so is the file's own code (nn.RNN(num_layers=10**12) builds for hours)
    return Mutant(
        "model",
        seed,
        what,
        {name: text},
        [["analyze", f"{{}}/{name}", "--verify-budget-s", "20", "--build-budget-s", "30"]],
    )


def definition_mutant(rng: random.Random) -> Mutant:
    seed = rng.choice(DEFINITION_SEEDS)
    folder = ROOT / seed
    files = {p.name: p.read_text() for p in sorted(folder.iterdir()) if p.is_file()}
    which = rng.choice(["json", "json", "reference", "workload"])
    if which == "reference":
        definition = json.loads(files["definition.json"])
        code, what = mutate(definition["reference"], PY_MUTATORS, rng, 1)
        definition["reference"] = code
        files["definition.json"] = json.dumps(definition, indent=2) + "\n"
        what = f"reference: {what}"
    else:
        name = "definition.json" if which == "json" else "workload.jsonl"
        files[name], what = mutate(files[name], IR_MUTATORS[:5], rng, 1)
        what = f"{name}: {what}"
    command = ["analyze", "{}", "--suite-only", "--verify-budget-s", "20"]
    return Mutant("definition", seed, what, files, [command])


def ir_mutant(rng: random.Random) -> Mutant:
    seed = rng.choice(IR_SEEDS)
    text, what = mutate((ROOT / seed).read_text(), IR_MUTATORS, rng, rng.choice([1, 1, 2]))
    name = Path(seed).name
    path = f"{{}}/{name}"
    # --budget-s: the executor's estimated time is bounded as a verification's is (a mutated
    # size makes a triangular cumsum 2.5 x 10^12 adds: hours)
    commands = [
        ["ir", "check", path],
        ["ir", "run", path, "--random-inputs", "--budget-s", "20"],
        ["sol", path, "--hw", "H100-SXM"],
    ]
    return Mutant("ir", seed, what, {name: text}, commands)


# --- running ---------------------------------------------------------------------------------


def default_memory_mb() -> float:
    """Three quarters of this machine's memory, in MB: a run that peaks past it is one the
    kernel's memory killer could take (a large but legal workload below it is not a defect)."""
    from solar.timing.calibrate import memory_bytes

    return 0.75 * memory_bytes("cpu") / 2**20


def run_one(args: list[str], cwd: Path, timeout_s: float, memory_mb: float) -> Outcome:
    """``python -m solar ARGS`` in ``cwd``: its exit, its peak resident size (wait4), and what
    it printed on stderr, classified. The child's address space is capped at twice
    ``memory_mb`` (torch reserves address space it never touches; an allocation past the cap
    fails in the child rather than taking the machine)."""
    out_path, err_path = cwd / "stdout.txt", cwd / "stderr.txt"
    cap = int(memory_mb * 2 * 2**20)

    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        os.setsid()  # its own process group: a hang is killed with its children

    env = dict(os.environ, PYTHONHASHSEED="0", OMP_NUM_THREADS="1")
    started = time.monotonic()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        child = subprocess.Popen(
            [sys.executable, "-m", "solar", *args],
            cwd=cwd,
            stdout=out,
            stderr=err,
            stdin=subprocess.DEVNULL,
            env=env,
            preexec_fn=limits,
        )
        status, usage, hung = 0, None, False
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - started > timeout_s:
                hung = True
                os.killpg(child.pid, signal.SIGKILL)
                _, status, usage = os.wait4(child.pid, 0)
                break
            time.sleep(0.05)
    rc = os.waitstatus_to_exitcode(status)
    seconds = time.monotonic() - started
    peak_mb = usage.ru_maxrss / 1024 if usage else 0.0  # Linux: kilobytes
    stderr = err_path.read_text(errors="replace")
    command = " ".join(args[:2]) if args[0] == "ir" else args[0]  # "ir run", "analyze"
    over = peak_mb > memory_mb
    return Outcome(classify(command, rc, stderr, hung, over), rc, seconds, peak_mb, stderr)


def classify(command: str, rc: int, stderr: str, hung: bool, over_memory: bool) -> str:
    if hung:
        return "hang"
    if rc < 0:
        return "signal"
    if "Traceback (most recent call last)" in stderr:
        return "traceback"
    if rc == 2 or "internal error" in stderr:
        return "internal"
    if over_memory:
        return "memory"
    if rc == 0:
        return "result"
    errors = [line for line in stderr.splitlines() if ": error: " in line or "error:" in line[:40]]
    # the command's own prefix; or an IR file's position (docs/ir.md: FILE:LINE:COL: error:
    # ...), one line per error the IR checker found
    one_line = re.compile(rf"solar {re.escape(command)}: error: \S")
    positioned = re.compile(r"\S+:\d+:\d+: error: \S")
    if rc == 1 and len(errors) == 1 and one_line.match(errors[0]):
        return "error"
    if rc == 1 and errors and all(positioned.match(line) for line in errors):
        return "error"
    return "unclear"


@dataclass
class Summary:
    mutants: int = 0
    by_family: dict = field(default_factory=dict)  # family -> Counter of outcome kinds
    defects: list = field(default_factory=list)

    @property
    def kinds(self) -> Counter:
        """The outcome kinds of every run, all families together."""
        return sum(self.by_family.values(), Counter())

    @property
    def runs(self) -> int:
        return sum(self.kinds.values())


def fuzz(
    seconds: float,
    seed: int,
    out: Path,
    timeout_s: float = 120.0,
    memory_mb: float | None = None,
    families: tuple[str, ...] = ("model", "definition", "ir"),
    max_mutants: int | None = None,
    log=print,
) -> Summary:
    """Mutants of ``families`` in turn (each family's own stream, from ``seed``) until
    ``seconds`` have passed or ``max_mutants`` were run; every defect saved under
    ``out/defects``."""
    if memory_mb is None:
        memory_mb = default_memory_mb()
    makers = {"model": model_mutant, "definition": definition_mutant, "ir": ir_mutant}
    rngs = {f: random.Random(f"{seed}:{f}") for f in families}
    summary = Summary()
    if out.exists():
        shutil.rmtree(out)
    (out / "defects").mkdir(parents=True)
    deadline = time.monotonic() + seconds
    n = 0
    while time.monotonic() < deadline and (max_mutants is None or n < max_mutants):
        family = families[n % len(families)]
        n += 1
        mutant = makers[family](rngs[family])
        summary.mutants += 1
        with tempfile.TemporaryDirectory(prefix="solar-fuzz-") as tmp:
            folder = Path(tmp) / "in"
            folder.mkdir()
            for name, text in mutant.files.items():
                (folder / name).write_text(text)
            for command in mutant.commands:
                args = [a.replace("{}", str(folder)) for a in command]
                outcome = run_one(args, Path(tmp), timeout_s, memory_mb)
                summary.by_family.setdefault(family, Counter())[outcome.kind] += 1
                if outcome.kind in DEFECTS:
                    saved = _save(out, len(summary.defects) + 1, mutant, command, outcome)
                    summary.defects.append(saved)
                    log(f"DEFECT {outcome.kind}: {mutant.seed}: {mutant.mutation} -> {saved}")
    (out / "summary.json").write_text(
        json.dumps(
            {
                "seed": seed,
                "mutants": summary.mutants,
                "runs": summary.runs,
                "outcomes": dict(sorted(summary.kinds.items())),
                "by_family": {f: dict(sorted(c.items())) for f, c in summary.by_family.items()},
                "defects": [str(p) for p in summary.defects],
            },
            indent=2,
        )
        + "\n"
    )
    return summary


def _save(out: Path, index: int, mutant: Mutant, command: list[str], outcome: Outcome) -> Path:
    folder = out / "defects" / f"{index:03d}-{outcome.kind}"
    (folder / "in").mkdir(parents=True)
    for name, text in mutant.files.items():
        (folder / "in" / name).write_text(text)
    args = " ".join(a.replace("{}", "in") for a in command)
    (folder / "README.txt").write_text(
        f"family: {mutant.family}\nseed: {mutant.seed}\nmutation: {mutant.mutation}\n"
        f"command (from this folder): solar {args}\nexit: {outcome.rc}\n"
        f"seconds: {outcome.seconds:.1f}\npeak: {outcome.peak_mb:.0f} MB\n\nstderr:\n"
        f"{outcome.stderr}"
    )
    return folder


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=60, help="how long to run (default 60)")
    p.add_argument("--seed", type=int, default=1, help="the random seed (default 1)")
    p.add_argument("--out", default="build/fuzz", help="where summary.json and defects go")
    p.add_argument("--timeout-s", type=float, default=120, help="a run past this is a hang")
    p.add_argument(
        "--memory-mb",
        type=float,
        help="a peak past this is a defect (default: three quarters of the machine's memory, "
        "where the kernel's memory killer comes near)",
    )
    p.add_argument(
        "--family",
        action="append",
        choices=["model", "definition", "ir"],
        help="only these input families (repeatable; default all three)",
    )
    p.add_argument("--max-mutants", type=int, help="stop after this many mutants")
    a = p.parse_args(argv)
    families = tuple(a.family) if a.family else ("model", "definition", "ir")
    summary = fuzz(
        a.seconds, a.seed, Path(a.out), a.timeout_s, a.memory_mb, families, a.max_mutants
    )
    kinds = ", ".join(f"{k} {v}" for k, v in sorted(summary.kinds.items()))
    print(f"{summary.mutants} mutants, {summary.runs} runs: {kinds}")
    print(f"{len(summary.defects)} defect(s); summary in {Path(a.out) / 'summary.json'}")
    return 1 if summary.defects else 0


if __name__ == "__main__":
    sys.exit(main())
