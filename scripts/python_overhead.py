#!/usr/bin/env python3
"""The overhead of the Python API against the CLI on the same work
(docs/PYTHON.md, "Overhead").

For each input: `lumos replay INPUT --json > /dev/null` (a process: start,
read, build, replay, write the JSON), then in this process
`lumos.replay(INPUT)` alone, and with its report parsed and every table
made into a DataFrame. Runs alternate, RUNS times each; medians are
printed. Usage: python_overhead.py [LUMOS_BIN] (default target/release/lumos).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import lumos

RUNS = 5
REPO = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("LUMOS_CORPUS") or REPO.parent / "shared" / "traces")
INPUTS = [
    CORPUS / "single-rank" / "v100-ddp-rank1of2-allreduce.json.gz",
    CORPUS / "multi-rank" / "dlrm-8xv100",
]


def cli(binary: str, path: Path) -> float:
    t = time.perf_counter()
    subprocess.run([binary, "replay", str(path), "--json"], stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t


def api(path: Path, frames: bool) -> float:
    t = time.perf_counter()
    r = lumos.replay(str(path), progress=False)
    if frames:
        r.report
        for name in r.table_names():
            r.frame(name)
    return time.perf_counter() - t


def main() -> None:
    binary = sys.argv[1] if len(sys.argv) > 1 else str(REPO / "target" / "release" / "lumos")
    print(f"{'input':<40} {'CLI s':>8} {'API s':>8} {'+frames s':>10} {'API/CLI':>8} {'+frames/CLI':>12}")
    for path in INPUTS:
        c, a, f = [], [], []
        for _ in range(RUNS):
            c.append(cli(binary, path))
            a.append(api(path, False))
            f.append(api(path, True))
        mc, ma, mf = (statistics.median(x) for x in (c, a, f))
        print(f"{path.name:<40} {mc:8.3f} {ma:8.3f} {mf:10.3f} {ma / mc:8.2f} {mf / mc:12.2f}")


if __name__ == "__main__":
    main()
