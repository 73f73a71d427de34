"""``solar sweep`` on a local Ray cluster against the local pool (docs/sweeps.md, "Ray or the local
pool"): the same sweep of model/device pairs, run once with ``--ray local --jobs W`` (a one-node
cluster with W worker CPUs) and once on the thread pool (``--jobs W``), each into a fresh results
folder; prints the wall time of each, their ratio, and whether the two gave the same bytes.

    export PYTHONPATH=build/main/pkg
    python3 bench/sweep_ray.py [--pairs 100] [--workers 2]

The pairs: copies of tests/python/models/sweep's three model files, each at its own size ``N``
(so they are distinct files, ``--pairs / devices`` of them), times the first ten built-in devices
of ``solar hw list``. Not a test: a measurement (its output is quoted in docs/sweeps.md).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted((ROOT / "tests" / "python" / "models" / "sweep").glob("*.py"))
DEVICES = 10


def devices() -> list[str]:
    out = subprocess.run(
        [sys.executable, "-m", "solar", "hw", "list"], capture_output=True, text=True, check=True
    ).stdout
    names = [line.split()[0] for line in out.splitlines()[1:] if line.strip()]
    return names[:DEVICES]


def write_models(folder: Path, count: int) -> list[str]:
    """``count`` model files: the sources in turn, each with its own ``N``."""
    paths = []
    for i in range(count):
        source = SOURCES[i % len(SOURCES)]
        text = re.sub(r"^N = \d+", f"N = {8 + 8 * i}", source.read_text(), flags=re.MULTILINE)
        path = folder / f"{source.stem}_{i:02d}.py"
        path.write_text(text)
        paths.append(str(path))
    return paths


def timed(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "solar", "sweep", *args], check=True)
    return time.perf_counter() - start


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--pairs", type=int, default=100, help="model/device pairs (default 100)")
    p.add_argument("--workers", type=int, default=2, help="Ray worker CPUs and pool jobs")
    args = p.parse_args()
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    hw = devices()
    with tempfile.TemporaryDirectory(prefix="solar-sweep-bench-") as tmp:
        folder = Path(tmp)
        models = write_models(folder, max(1, args.pairs // len(hw)))
        axes = ["--models", *models, "--hw", *hw, "--jobs", str(args.workers)]
        pairs = len(models) * len(hw)
        ray_s = timed([*axes, "--out", str(folder / "ray"), "--ray", "local"])
        pool_s = timed([*axes, "--out", str(folder / "pool")])
        same = all(
            (folder / "ray" / name).read_bytes() == (folder / "pool" / name).read_bytes()
            for name in ("sweep.json", "sweep.csv")
        )
    print(f"{pairs} model/device pairs, {args.workers} workers, {os.cpu_count()} CPUs")
    print(f"ray local cluster: {ray_s:8.1f} s ({ray_s / pairs:.2f} s per pair)")
    print(f"local pool:        {pool_s:8.1f} s ({pool_s / pairs:.2f} s per pair)")
    print(f"ray / pool:        {ray_s / pool_s:8.3f}")
    print(f"same sweep.json and sweep.csv: {'yes' if same else 'NO'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
