#!/usr/bin/env python3
"""Regenerates the table in docs/ACCURACY.md from `lumos replay --json`.

Usage: cargo build --release && python3 scripts/accuracy.py [TRACES_DIR]
TRACES_DIR defaults to ../shared/traces. Prints a Markdown table.
"""
import json
import subprocess
import sys
from pathlib import Path

root = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/traces")
lumos = Path(__file__).resolve().parent.parent / "target/release/lumos"
files = sorted(str(p) for p in root.rglob("*.json.gz"))


def replay(*extra):
    out = subprocess.run([str(lumos), "replay", "--json", "--per-trace", *extra, *files],
                         capture_output=True, text=True)
    return {t["path"]: t for t in json.loads(out.stdout)["traces"]}


base = replay()
no_inter = replay("--deps", "no-inter-stream")
half = replay("--scale-kernels", "0.5")


def mean(v):
    return sum(v) / len(v) if v else float("nan")


print("| trace | steps | measured ms | replayed ms | error % | error % without inter-stream edges | step time change with all GPU x0.5 | flagged |")
print("|---|---|---|---|---|---|---|---|")
rows = []
for path, t in base.items():
    if not t["steps"]:
        continue
    m = mean([s["measured_us"] for s in t["steps"]]) / 1e3
    r = mean([s["replayed_us"] for s in t["steps"]]) / 1e3
    err = mean([abs(s["error_pct"]) for s in t["steps"]])
    ni_t = no_inter.get(path)
    ni = f'{mean([abs(s["error_pct"]) for s in ni_t["steps"]]):.2f}' if ni_t else "replay failed"
    h_t = half.get(path)
    h = mean([s["replayed_us"] for s in h_t["steps"]]) / 1e3 if h_t else float("nan")
    change = (h - r) / r * 100 if r else 0.0
    name = path.split("shared/traces/")[-1]
    print(f"| {name} | {len(t['steps'])} | {m:.3f} | {r:.3f} | {err:.2f} | {ni} | {change:+.1f}% | {'yes' if t['flagged'] else ''} |")
