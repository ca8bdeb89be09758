#!/usr/bin/env python3
"""How the element-wise kernels of real traces grow with their bytes: the
evidence behind `lumos predict`'s memory-bound kernel model.

Usage: python3 scripts/memory_kernel_sizes.py TRACE.json[.gz]... [--json]

A size edit (`--hidden`, `--tp`, `--micro-batch`) scales each memory-bound
kernel by its bytes' ratio. Two models of that scaling:
- whole: the kernel's whole time times the ratio;
- fixed cost: the trace's floor (its shortest element-wise kernel) kept,
  only the time above it times the ratio (what lumos does).

A trace holds the same kernel at several sizes (the same operator, input
type and kernel name, e.g. a ResNet's `relu_` at every resolution). For
each pair of sizes of one such kernel, within 16x of each other, each
model predicts the larger's median duration from the smaller's (and the
smaller's from the larger's); the error is against the measured median.
The pairs are split by regime: "above" where both kernels take at least
1.5x the floor, "at floor" otherwise. Both models keep the time only of
a kernel at or under 1.1x the floor; in the "at floor" regime they differ
where the kernel predicted from is above that, and the whole time scaled
can win there (a kernel shrinking to the floor, where its bound stops it).

The sizes come from the launching operator's first input (`Input Dims`
and `Input type`, so traces recorded with `record_shapes=True`); a
broadcast or a second input larger than the first makes a pair noisy, so
only the medians over many pairs say something.

This is a research probe, not part of lumos: it reads the Kineto JSON
with Python's `json` module (lumos's reader is the Rust trace crate), and
a trace it cannot read is reported and skipped.
"""

from __future__ import annotations

import argparse
import bisect
import gzip
import json
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Dict, List, Tuple

ELEMENTWISE_OPS = {
    "aten::add", "aten::add_", "aten::mul", "aten::mul_", "aten::div", "aten::div_",
    "aten::sub", "aten::copy_", "aten::_to_copy", "aten::clone", "aten::fill_", "aten::zero_",
    "aten::relu", "aten::relu_", "aten::gelu", "aten::silu", "aten::sigmoid", "aten::tanh",
    "aten::neg", "aten::threshold_backward", "aten::gelu_backward", "aten::silu_backward",
    "aten::addcmul_", "aten::addcdiv_", "aten::where", "aten::masked_fill", "aten::native_dropout",
}
ELEMENT_BYTES = {
    "float": 4, "double": 8, "c10::Half": 2, "c10::BFloat16": 2, "long int": 8, "int": 4,
    "bool": 1, "unsigned char": 1, "signed char": 1, "short int": 2,
}
MAX_RATIO = 16.0


def events(path: Path) -> List[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        doc = json.load(f)
    evs = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
    return [e for e in evs if isinstance(e, dict) and e.get("ph") == "X"]


def kernel_sizes(evs: List[dict]) -> Dict[Tuple[str, str, str], Dict[int, List[float]]]:
    """(operator, input type, kernel name) -> bytes of the first input -> durations (us),
    for operators that launched exactly one kernel."""
    launches = defaultdict(list)
    for e in evs:
        if e.get("cat") == "cuda_runtime" and "Launch" in str(e.get("name", "")):
            launches[e.get("tid")].append(e)
    for ls in launches.values():
        ls.sort(key=lambda e: e["ts"])
    starts = {tid: [e["ts"] for e in ls] for tid, ls in launches.items()}
    kernels = {}
    for e in evs:
        if e.get("cat") == "kernel" and isinstance(e.get("args"), dict):
            kernels[e["args"].get("correlation")] = e
    out: Dict[Tuple[str, str, str], Dict[int, List[float]]] = defaultdict(lambda: defaultdict(list))
    for op in evs:
        args = op.get("args")
        if op.get("cat") != "cpu_op" or op.get("name") not in ELEMENTWISE_OPS or not isinstance(args, dict):
            continue
        dims, types = args.get("Input Dims"), args.get("Input type") or []
        if not dims or not isinstance(dims[0], list) or not dims[0] or not types:
            continue
        size = ELEMENT_BYTES.get(types[0])
        if size is None or not all(isinstance(d, int) for d in dims[0]):
            continue
        ls, ts = launches.get(op.get("tid"), []), starts.get(op.get("tid"), [])
        i = bisect.bisect_left(ts, op["ts"])
        inside = []
        while i < len(ls) and ls[i]["ts"] <= op["ts"] + op.get("dur", 0):
            inside.append(ls[i])
            i += 1
        if len(inside) != 1:
            continue
        k = kernels.get((inside[0].get("args") or {}).get("correlation"))
        nbytes = math.prod(dims[0]) * size
        if k is None or nbytes <= 0:
            continue
        out[(op["name"], types[0], str(k.get("name")))][nbytes].append(float(k.get("dur", 0)))
    return out


def floor_us(evs: List[dict]) -> float:
    durs = [float(e.get("dur", 0)) for e in evs
            if e.get("cat") == "kernel" and "elementwise" in str(e.get("name", ""))]
    return min(durs) if durs else 0.0


def compare(path: Path) -> dict:
    evs = events(path)
    floor = floor_us(evs)
    errors: Dict[str, Dict[str, List[float]]] = {
        r: {"whole": [], "fixed_cost": []} for r in ("above", "at_floor")}
    for by_size in kernel_sizes(evs).values():
        med = {b: statistics.median(d) for b, d in by_size.items()}
        for b1, t1 in med.items():
            for b2, t2 in med.items():
                ratio = b2 / b1
                if b1 == b2 or not 1 / MAX_RATIO <= ratio <= MAX_RATIO or t2 <= 0:
                    continue
                at_floor = t1 <= 1.1 * floor
                whole = t1 if at_floor else max(t1 * ratio, floor)
                fixed = t1 if at_floor else floor + (t1 - floor) * ratio
                regime = "above" if min(t1, t2) >= 1.5 * floor else "at_floor"
                errors[regime]["whole"].append(abs(whole / t2 - 1))
                errors[regime]["fixed_cost"].append(abs(fixed / t2 - 1))
    return {
        "trace": path.name,
        "floor_us": floor,
        "regimes": {
            r: {"pairs": len(m["whole"]),
                **{f"median_abs_error_pct_{k}": (100 * statistics.median(v) if v else None)
                   for k, v in m.items()}}
            for r, m in errors.items()},
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("traces", nargs="+", type=Path)
    ap.add_argument("--json", action="store_true", help="one JSON object per trace, a list")
    a = ap.parse_args()
    rows, failed = [], 0
    for p in a.traces:
        try:
            rows.append(compare(p))
        except (OSError, ValueError, EOFError) as e:  # json and gzip errors are ValueError/EOFError/OSError
            print(f"{p}: cannot read: {e}", file=sys.stderr)
            failed += 1
    if a.json:
        print(json.dumps(rows, indent=1))
    else:
        print(f"{'trace':44} {'floor':>7} {'regime':9} {'pairs':>6} {'whole':>8} {'fixed cost':>10}")
        for r in rows:
            for reg, m in r["regimes"].items():
                if not m["pairs"]:
                    continue
                print(f"{r['trace'][:44]:44} {r['floor_us']:6.2f}u {reg:9} {m['pairs']:6d} "
                      f"{m['median_abs_error_pct_whole']:7.1f}% {m['median_abs_error_pct_fixed_cost']:9.1f}%")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
