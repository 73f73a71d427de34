"""Measures the walk of one analysis through python/solar (docs/architecture.md, "The walk of one
analysis"): every call and return of a Python function, traced with ``sys.setprofile``, as the
sequence of the package's files the control is in (a file's consecutive frames are one stay; a
return is a stay in a file already left). This is the strict count: every property read and
helper call is a stay; the walk in the docs counts the stops the data passes through.

    PYTHONPATH=... python3 scripts/walk.py tests/python/models/mlp.py            # the analysis
    PYTHONPATH=... python3 scripts/walk.py tests/python/models/mlp.py --verify   # stages.verify

Prints the stays, the files and the returns, then the sequence.
"""

from __future__ import annotations

import argparse
import os
import sys


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model", help="a model file (solar.analyze_file's)")
    p.add_argument("--verify", action="store_true", help="the verification step alone")
    args = p.parse_args()

    import solar
    from solar import adapters, stages
    from solar.options import Options

    root = os.path.dirname(os.path.realpath(solar.__file__)) + os.sep
    files: list[str] = []

    def where(filename: str) -> str | None:
        path = os.path.realpath(filename)
        return path[len(root) :] if path.startswith(root) else None

    def profile(frame, event, _arg):  # noqa: ANN001
        if event == "call":
            name = where(frame.f_code.co_filename)
        elif event == "return" and frame.f_back is not None:
            name = where(frame.f_back.f_code.co_filename)
        else:
            return
        if name is not None and (not files or files[-1] != name):
            files.append(name)

    if args.verify:
        lowered = adapters.run_file(args.model, Options(), until="lowered")
        sys.setprofile(profile)
        stages.verify(lowered)
    else:
        sys.setprofile(profile)
        solar.analyze_file(args.model)
    sys.setprofile(None)
    seen: set[str] = set()
    returns = 0
    for name in files:
        returns += name in seen
        seen.add(name)
    print(f"{len(files)} stays in {len(seen)} files, {returns} returns")
    print(" -> ".join(files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
