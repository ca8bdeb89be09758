#!/usr/bin/env python3
"""Checks lumos's predictions against a recorded sweep: every ordered pair
of the configurations that `../shared/tools/record_gpt_traces.py` recorded.

Usage: cargo build --release && python3 scripts/recorded_pairs.py DIR [--lumos BIN] [--json]

DIR holds the recording's `manifest.json` and its `.json.gz` traces. For
each ordered pair (A, B) of recorded configurations that differ only in
what `lumos predict` edits (layers, hidden size with heads, micro-batch
size, micro-batches), it runs `lumos predict A` with the edits that make
B and compares the predicted mean step with:
- B's traced step (the mean `ProfilerStep` span, as `lumos replay`
  measures it): the error that judges the prediction;
- B's step measured without the profiler (`wall_step_ms` in the
  manifest): what the job runs at untraced. The gap between B's traced
  step and it is the profiler's overhead, printed per configuration.

Prints a table, worst error first, and the mean and largest absolute
error; `--json` prints the rows instead. Exits 1 when a configuration's
trace cannot be replayed. A refusal is a row, not a failure.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

# The configuration keys lumos can edit, and the flag each one takes.
EDITS = {"layers": "--layers", "hidden": "--hidden", "heads": "--heads", "batch": "--micro-batch",
         "microbatches": "--microbatches"}


def edit_args(src: dict, dst: dict) -> list[str] | None:
    """The `lumos predict` flags that turn configuration `src` into `dst`;
    None when they differ in something lumos does not edit (sequence,
    vocabulary, bucket size)."""
    for k in set(src) | set(dst):
        if k in EDITS or k in ("name", "file", "wall_step_ms", "traced_ms", "error"):
            continue
        if src.get(k) != dst.get(k):
            return None
    args: list[str] = []
    for k, flag in EDITS.items():
        if src.get(k) != dst.get(k):
            if k == "heads" and src.get("hidden") == dst.get("hidden"):
                return None  # heads alone: not an edit lumos makes
            args += [flag, str(dst[k])]
    return args or None


def run_json(lumos: str, args: list[str]) -> tuple[dict | None, str]:
    p = subprocess.run([lumos, *args, "--json"], capture_output=True, text=True, check=False)
    if p.returncode != 0:
        return None, (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[0]
    return json.loads(p.stdout), ""


def traced_ms(lumos: str, path: Path) -> float:
    out, err = run_json(lumos, ["replay", str(path)])
    if out is None:
        raise SystemExit(f"error: lumos replay {path}: {err}")
    steps = out["traces"][0]["steps"]
    if not steps:
        raise SystemExit(f"error: {path}: no ProfilerStep to measure")
    return sum(s["measured_us"] for s in steps) / len(steps) / 1000.0


def read_runs(root: Path) -> list[dict]:
    """The manifest's runs that recorded a trace; SystemExit naming the
    file and what is wrong when the manifest is not the recorder's."""
    path = root / "manifest.json"
    try:
        runs = json.loads(path.read_text())["runs"]
        return [r for r in runs if "error" not in r and (root / r["file"]).is_file() and r["name"]]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as e:
        raise SystemExit(f"error: {path}: not a manifest of record_gpt_traces.py ({type(e).__name__}: {e})")


def pairs(root: Path, lumos: str) -> tuple[list[dict], dict[str, dict]]:
    runs = read_runs(root)
    configs = {}
    for r in runs:
        configs[r["name"]] = dict(r, traced_ms=traced_ms(lumos, root / r["file"]))
    rows = []
    for a in configs.values():
        for b in configs.values():
            if a is b:
                continue
            args = edit_args(a, b)
            if args is None:
                continue
            out, refusal = run_json(lumos, ["predict", str(root / a["file"]), *args])
            row = {"from": a["name"], "to": b["name"], "args": args, "target_traced_ms": b["traced_ms"],
                   "target_untraced_ms": b.get("wall_step_ms")}
            if out is None:
                row["refused"] = refusal
            else:
                p = out["mean_predicted_ms"]
                row["predicted_ms"] = p
                row["error_pct"] = 100.0 * (p - b["traced_ms"]) / b["traced_ms"]
                if b.get("wall_step_ms"):
                    row["error_untraced_pct"] = 100.0 * (p - b["wall_step_ms"]) / b["wall_step_ms"]
                row["confidence"] = (out.get("confidence") or {}).get("verdict")
            rows.append(row)
    rows.sort(key=lambda r: -abs(r.get("error_pct", float("inf"))))
    return rows, configs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--lumos", default=str(Path(__file__).resolve().parent.parent / "target/release/lumos"))
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if not (a.dir / "manifest.json").is_file():
        print(f"error: {a.dir}: no manifest.json (record_gpt_traces.py writes one)", file=sys.stderr)
        return 1
    rows, configs = pairs(a.dir, a.lumos)
    if a.json:
        print(json.dumps({"configs": configs, "pairs": rows}, indent=1))
        return 0
    print("configuration              traced ms  untraced ms  profiler overhead")
    for c in configs.values():
        wall = c.get("wall_step_ms")
        over = f"{100.0 * (c['traced_ms'] - wall) / wall:+.1f}%" if wall else "-"
        print(f"{c['name']:26} {c['traced_ms']:9.3f}  {wall if wall else float('nan'):11.3f}  {over}")
    print()
    print(f"{'from':22} {'edits':44} {'to':22} {'predicted':>9} {'traced':>9} {'error':>8} {'vs untraced':>11}"
          "  confidence")
    for r in rows:
        edits = " ".join(r["args"])
        if "refused" in r:
            print(f"{r['from']:22} {edits:44} {r['to']:22} refused: {r['refused']}")
            continue
        untraced = f"{r['error_untraced_pct']:+.2f}%" if "error_untraced_pct" in r else "-"
        print(f"{r['from']:22} {edits:44} {r['to']:22} {r['predicted_ms']:9.3f} {r['target_traced_ms']:9.3f} "
              f"{r['error_pct']:+7.2f}% {untraced:>11}  {r['confidence']}")
    errs = [abs(r["error_pct"]) for r in rows if "error_pct" in r]
    refused = sum(1 for r in rows if "refused" in r)
    if errs:
        print(f"\n{len(errs)} pairs predicted, {refused} refused: mean |error| {sum(errs) / len(errs):.2f}%, "
              f"largest {max(errs):.2f}% (against the target's traced step)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
