#!/usr/bin/env python3
"""Writes a synthetic N-rank job by copying the ranks of a real one.

Usage: python3 scripts/replicate_ranks.py SRC_DIR N OUT_DIR

Copy k of source rank r becomes rank k*len(src)+r, with
distributedInfo.rank and world_size rewritten, so `lumos replay OUT_DIR`
sees one job of N ranks whose collectives all match (every copy issues the
same ones). Used for the scaling measurements in docs/PERFORMANCE.md.
"""
import gzip
import json
import sys
from pathlib import Path

src, n, out = Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
files = sorted(src.glob("*.json.gz"))
docs = []
for f in files:
    with gzip.open(f, "rt") as fh:
        docs.append(json.load(fh))
docs.sort(key=lambda d: d["distributedInfo"]["rank"])
out.mkdir(parents=True, exist_ok=True)
for rank in range(n):
    d = docs[rank % len(docs)]
    d["distributedInfo"]["rank"] = rank
    d["distributedInfo"]["world_size"] = n
    with gzip.open(out / f"rank{rank}.json.gz", "wt", compresslevel=1) as fh:
        json.dump(d, fh)
