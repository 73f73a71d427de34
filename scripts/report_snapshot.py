"""Writes the reports of ``solar analyze`` (and ``solar sol MODEL.py``) on the project's own
models into a folder outside the repository, so that a refactoring can be checked to leave
every report byte-identical:

    python3 scripts/report_snapshot.py /tmp/reports-before
    ... change the code, rebuild ...
    python3 scripts/report_snapshot.py /tmp/reports-after
    diff -r /tmp/reports-before /tmp/reports-after

Each case writes NAME.json (``--json``), NAME.html and NAME.csv (the report files), NAME.txt
(the terminal report on stdout), NAME.err (stderr) and NAME.rc (the exit code). The cases: every
model of tests/python/models/*.py and examples/studies/models/*.py, a training step, a serving
step, a JAX model and ``solar sol MODEL.py``. ``--only SUBSTRING`` runs the matching cases.
"""

from __future__ import annotations

import argparse
import glob
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cases(ROOT: str) -> list[tuple[str, list[str], bool]]:  # noqa: N803
    """``(name, solar arguments, writes report files)`` for every case."""
    found: list[tuple[str, list[str], bool]] = []
    models = sorted(glob.glob(os.path.join(ROOT, "tests/python/models/*.py")))
    models += sorted(glob.glob(os.path.join(ROOT, "examples/studies/models/*.py")))
    for path in models:
        name = os.path.relpath(path, ROOT).replace("/", "_").removesuffix(".py")
        found.append((name, ["analyze", path], True))
    train = os.path.join(ROOT, "tests/python/models/train/mlp.py")
    found.append(("train_mlp_adam", ["analyze", train, "--train", "--optimizer", "adam"], True))
    serve = os.path.join(ROOT, "tests/python/models/serve/llama_gqa.py")
    found.append(
        ("serve_llama_decode", ["analyze", serve, "--serve", "decode", "--context", "64"], True)
    )
    jax_model = os.path.join(ROOT, "tests/python/models/fidelity/jax_jit_softmax.py")
    found.append(("jax_softmax", ["analyze", jax_model], True))
    found.append(("jax_softmax_sol", ["sol", jax_model, "--hw", "H100-SXM"], False))
    mlp = os.path.join(ROOT, "tests/python/models/mlp.py")
    found.append(("mlp_sol", ["sol", mlp, "--hw", "H100-SXM", "--json", "-"], False))
    return found


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", help="the folder to write (outside the repository)")
    p.add_argument("--only", help="run only the cases whose name contains this")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per case")
    p.add_argument("--root", default=ROOT, help="the checkout whose models are analysed")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name, argv, files in cases(args.root):
        if args.only and args.only not in name:
            continue
        base = os.path.join(args.out, name)
        extra = ["--json", base + ".json", "--html", base + ".html", "--csv", base + ".csv"]
        command = [sys.executable, "-m", "solar", *argv, *(extra if files else [])]
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=args.timeout, cwd=args.root
            )
            out, err, rc = done.stdout, done.stderr, str(done.returncode)
        except subprocess.TimeoutExpired:
            out, err, rc = "", "", "timeout"
        # the paths in "wrote ..." lines name the output folder: made relative to it
        out = out.replace(args.out.rstrip("/") + "/", "")
        err = err.replace(args.out.rstrip("/") + "/", "")
        for suffix, text in ((".txt", out), (".err", err), (".rc", rc + "\n")):
            with open(base + suffix, "w", encoding="utf-8") as f:
                f.write(text)
        print(f"{name}: rc {rc}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
