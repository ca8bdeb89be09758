#!/usr/bin/env python3
"""Regenerates the `--durations-from` table in docs/ACCURACY.md.

Usage: cargo build --release -p lumos && python3 scripts/durations_from.py [TRACES_DIR]
TRACES_DIR defaults to ../shared/traces; the binary is $CARGO_TARGET_DIR/release/lumos
(default target/release/lumos). Synthesized pairs are written to a temporary
folder. Prints Markdown tables.
"""
import itertools
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

root = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/traces")
target = Path(os.environ.get("CARGO_TARGET_DIR", Path(__file__).resolve().parent.parent / "target"))
lumos = str(target / "release/lumos")


def run(*args):
    return subprocess.run([lumos, *args], capture_output=True, text=True)


def transfer(a, b):
    out = run("replay", "--json", str(a), "--durations-from", str(b))
    if out.returncode != 0:
        return None, out
    return json.loads(out.stdout), out


def row(label_a, label_b, a, b):
    r, out = transfer(a, b)
    if r is None:
        msg = out.stderr.strip().splitlines()[0]
        share = msg.split("only ")[1].split("%")[0] if "only " in msg else "?"
        return f"| {label_a} | {label_b} | refused (exit {out.returncode}) | {share} | | | | | | |"
    m, mean = r["matched"], r["mean"]
    return (f"| {label_a} | {label_b} | {mean['steps']} | {m['share'] * 100:.1f} | "
            f"{m['cpu_share'] * 100:.1f} | {m['gpu_share'] * 100:.1f} | "
            f"{mean['a_measured_us'] / 1e3:.3f} | {mean['b_measured_us'] / 1e3:.3f} | "
            f"{mean['predicted_us'] / 1e3:.3f} | {mean['error_pct']:+.2f} ({mean['a_error_pct']:+.2f}) |")


head = ("| A (graph) | B (durations) | steps | matched % | CPU % | GPU % | A measured ms | "
        "B measured ms | predicted ms | error % (A alone) |\n|---|---|---|---|---|---|---|---|---|---|")

print("### Real pairs\n")
print(head)
s = root / "single-rank"
a, b = s / "v100-resnet50-2021-capture-a.json.gz", s / "v100-resnet50-2021-capture-b.json.gz"
print(row("resnet50 capture-a", "capture-b", a, b))
print(row("resnet50 capture-b", "capture-a", b, a))
dlrm = root / "multi-rank/dlrm-8xv100"
for i in range(8):
    j = (i + 1) % 8
    print(row(f"dlrm rank{i}", f"rank{j}", dlrm / f"rank{i}.json.gz", dlrm / f"rank{j}.json.gz"))
print(row("resnet50-2021-legacy-autograd-api", "capture-a", s / "resnet50-2021-legacy-autograd-api.json.gz", a))
print(row("mi300x-resnet-ddp-rank0of8", "capture-a", s / "mi300x-resnet-ddp-rank0of8.json.gz", a))

errors = []
for i, j in itertools.permutations(range(8), 2):
    r, _ = transfer(dlrm / f"rank{i}.json.gz", dlrm / f"rank{j}.json.gz")
    errors.append(abs(r["mean"]["error_pct"]))
print(f"\nAll 56 ordered DLRM rank pairs: mean |error| {sum(errors) / len(errors):.2f}%, "
      f"max {max(errors):.2f}%.\n")

print("### Synthesized pairs (`lumos synth --model gpt-small`)\n")
print(head)
with tempfile.TemporaryDirectory() as tmp:
    tmp = Path(tmp)

    def synth(name, *args):
        out = tmp / name
        subprocess.run([lumos, "synth", "--model", "gpt-small", "--out", str(out), *args],
                       check=True, capture_output=True)
        return out

    runs = {
        "a100": synth("a100", "--gpu", "a100"),
        "h100": synth("h100", "--gpu", "h100"),
        "b200": synth("b200", "--gpu", "b200"),
        "h100 seed 7": synth("h100s7", "--gpu", "h100", "--seed", "7"),
        "h100 no cuda_sync, no event records": synth("h100ns", "--gpu", "h100", "--no-cuda-sync-events", "--no-event-records"),
        "tp2 pp2 dp2 a100": synth("j-a100", "--gpu", "a100", "--tp", "2", "--pp", "2", "--dp", "2"),
        "tp2 pp2 dp2 h100": synth("j-h100", "--gpu", "h100", "--tp", "2", "--pp", "2", "--dp", "2"),
    }
    r0 = "rank0.json.gz"
    for x, y in [("a100", "h100"), ("h100", "a100"), ("h100", "b200"), ("h100", "h100 seed 7"),
                 ("a100", "h100 no cuda_sync, no event records"),
                 ("h100 no cuda_sync, no event records", "a100")]:
        print(row(x, y, runs[x] / r0, runs[y] / r0))
    for rank in ["rank0", "rank4"]:
        print(row(f"tp2 pp2 dp2 a100 {rank}", f"h100 {rank}", runs["tp2 pp2 dp2 a100"] / f"{rank}.json.gz",
                  runs["tp2 pp2 dp2 h100"] / f"{rank}.json.gz"))
