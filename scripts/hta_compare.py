#!/usr/bin/env python3
"""Time Holistic Trace Analysis (HTA) loading traces against lumos.

    python3 scripts/hta_compare.py [--python PY] [--lumos BIN] [--repeat N]
                                   [--json OUT] TRACE_OR_DIR...

Each argument is one input: a trace file (.json or .json.gz), or a
directory holding the ranks of one job. For each input, in fresh
processes:

- HTA: ``TraceAnalysis(trace_dir=D)`` (HTA's loader: parses every file of
  the directory into pandas DataFrames, aligns the ranks and filters to the
  profiler steps). A single file is linked alone into a temporary directory.
  HTA finds a file's rank with the regex ``"rank":\\s+(\\d+)``, which
  compact JSON (``"rank":3``) does not match, so for directories the ranks
  are taken from ``rank<N>`` in the file names and passed as
  ``trace_files={rank: path}`` as well.
- lumos: ``lumos inspect --json PATH`` (reads every file, builds each
  rank's execution graph, and for a job matches collectives and aligns
  clocks), output discarded.

Wall time and peak memory are measured from this script: the wall clock
around the child process, and its memory as the largest sum, over samples
every 50 ms, of the resident sizes of the child and all its descendants
(HTA parses in forked worker processes, so the single-process maximum that
``/usr/bin/time`` reports would undercount it). The ratio is HTA / lumos.
The best (least disturbed) of ``--repeat`` runs is reported.

HTA is the PyPI package ``traceinsight`` (formerly ``HolisticTraceAnalysis``),
imported as ``hta``. Install it into a virtual environment and pass its
interpreter with ``--python``:

    python3 -m venv /tmp/hta-venv && /tmp/hta-venv/bin/pip install traceinsight
    python3 scripts/hta_compare.py --python /tmp/hta-venv/bin/python FILE

Without it the script says so and exits with status 0 (nothing to compare).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HTA_LOAD = r"""
import json, sys, logging
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
args = json.loads(sys.argv[1])
files = {int(k): v for k, v in args["files"].items()} or None
a = TraceAnalysis(trace_files=files, trace_dir=args["dir"])
print(json.dumps({"ranks": len(a.t.traces),
                  "rows": int(sum(len(df) for df in a.t.traces.values()))}))
"""


def tree_rss_bytes(root):
    """Resident bytes of `root` and all its descendants (from /proc)."""
    children = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # The command name may hold spaces; fields resume after ')'.
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(pid))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
                        break
        except OSError:
            pass
    return total


def run_measured(cmd):
    """Runs cmd; returns (wall seconds, peak tree RSS bytes, stdout)."""
    # Output goes to files, not pipes: HTA logs enough to fill a pipe and
    # block while nobody reads it.
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=err)
        peak = 0
        while p.poll() is None:
            peak = max(peak, tree_rss_bytes(p.pid))
            time.sleep(0.05)
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        if p.returncode != 0:
            tail = err.read().decode(errors="replace")[-2000:]
            raise RuntimeError(f"{cmd[0]} exited with {p.returncode}: {tail}")
        return wall, peak, out.read()


def rank_files(d):
    files = {}
    for name in sorted(os.listdir(d)):
        if not (name.endswith(".json") or name.endswith(".gz")):
            continue
        m = re.search(r"rank(\d+)", name)
        if m:
            files[int(m.group(1))] = os.path.join(d, name)
    return files


def json_bytes(path):
    """Uncompressed size of a trace file, or of all files in a directory."""
    import gzip

    paths = (
        [os.path.join(path, n) for n in os.listdir(path)]
        if os.path.isdir(path)
        else [path]
    )
    total = 0
    for p in paths:
        with open(p, "rb") as f:
            magic = f.read(2)
        if magic == b"\x1f\x8b":
            with gzip.open(p, "rb") as f:
                while True:
                    b = f.read(1 << 24)
                    if not b:
                        break
                    total += len(b)
        else:
            total += os.path.getsize(p)
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("inputs", nargs="+")
    ap.add_argument("--python", default=sys.executable, help="interpreter with hta")
    ap.add_argument("--lumos", default="target/release/lumos")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--json", help="write the results here as JSON")
    a = ap.parse_args()

    probe = subprocess.run(
        [a.python, "-c", "import hta, importlib.metadata as m; print(m.version('traceinsight'))"],
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:
        probe = subprocess.run(
            [a.python, "-c", "import hta; print('unknown version')"],
            capture_output=True,
            text=True,
        )
    if probe.returncode != 0:
        print(
            f"hta_compare: HTA is not importable by {a.python}; nothing compared.\n"
            "  Install it: python3 -m venv /tmp/hta-venv && "
            "/tmp/hta-venv/bin/pip install traceinsight\n"
            "  then rerun with --python /tmp/hta-venv/bin/python"
        )
        return 0
    hta_version = probe.stdout.strip()
    if not os.access(a.lumos, os.X_OK):
        print(f"hta_compare: {a.lumos} not found; build it with cargo build --release -p lumos")
        return 1

    results = []
    for inp in a.inputs:
        tmp = None
        if os.path.isdir(inp):
            hta_args = {"dir": inp, "files": rank_files(inp)}
        else:
            tmp = tempfile.mkdtemp(prefix="hta-one-")
            os.symlink(os.path.abspath(inp), os.path.join(tmp, os.path.basename(inp)))
            hta_args = {"dir": tmp, "files": {}}
        try:
            hta_runs, lumos_runs = [], []
            hta_out = None
            for _ in range(a.repeat):
                w, m, out = run_measured(
                    [a.python, "-c", HTA_LOAD, json.dumps(hta_args)]
                )
                hta_runs.append((w, m))
                hta_out = json.loads(out.decode().strip().splitlines()[-1])
                w, m, _ = run_measured([a.lumos, "inspect", "--json", inp])
                lumos_runs.append((w, m))
        finally:
            if tmp:
                shutil.rmtree(tmp, ignore_errors=True)
        hw = min(r[0] for r in hta_runs)
        lw = min(r[0] for r in lumos_runs)
        hm = max(r[1] for r in hta_runs)
        lm = max(r[1] for r in lumos_runs)
        r = {
            "input": inp,
            "json_mb": round(json_bytes(inp) / 1e6, 1),
            "hta_version": hta_version,
            "hta_ranks": hta_out["ranks"],
            "hta_rows": hta_out["rows"],
            "hta_s": round(hw, 2),
            "lumos_inspect_s": round(lw, 2),
            "time_ratio": round(hw / lw, 1),
            "hta_peak_mb": round(hm / 1e6),
            "lumos_peak_mb": round(lm / 1e6),
            "memory_ratio": round(hm / lm, 1) if lm else None,
            "runs": a.repeat,
        }
        results.append(r)
        print(json.dumps(r), flush=True)

    print()
    print(f"HTA (traceinsight {hta_version}) TraceAnalysis(...) vs lumos inspect --json, best of {a.repeat}:")
    print()
    print("| input | JSON MB | HTA s | lumos s | time ratio | HTA peak MB | lumos peak MB | memory ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {os.path.basename(r['input'].rstrip('/'))} | {r['json_mb']} | {r['hta_s']} | "
            f"{r['lumos_inspect_s']} | {r['time_ratio']}x | {r['hta_peak_mb']} | "
            f"{r['lumos_peak_mb']} | {r['memory_ratio']}x |"
        )
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
