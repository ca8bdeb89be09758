#!/usr/bin/env python3
"""Helpers of scripts/scale_bench.sh.

    scale_report.py time LOG RC          -> "wall_s cpu_s rss_mb rc" from /usr/bin/time -v
    scale_report.py single OUT SIZE FMT  -> results line from `scale single` output
    scale_report.py job OUT TOOL NAME RANKS LABEL JSON_BYTES GZ_BYTES WALL CPU RSS RC
    scale_report.py report RESULTS.jsonl -> the tables of docs/PERFORMANCE.md "Scale"
"""

import json
import os
import re
import sys


def parse_time(log, rc):
    t = open(log).read()

    def f(k):
        m = re.search(re.escape(k) + r": (.*)", t)
        return m.group(1).strip() if m else "0"

    w = f("Elapsed (wall clock) time (h:mm:ss or m:ss)").split(":")
    wall = sum(float(x) * 60**i for i, x in enumerate(reversed(w)))
    cpu = float(f("User time (seconds)")) + float(f("System time (seconds)"))
    rss = int(f("Maximum resident set size (kbytes)")) * 1024 / 1e6  # MB, not MiB
    print(f"{wall:.3f} {cpu:.3f} {rss:.1f} {rc}")


def single(out, size, fmt):
    d = json.load(open(out))
    d.update(kind="single", size=size, format=fmt)
    print(json.dumps(d))


def job(out, tool, name, ranks, label, jb, gz, wall, cpu, rss, rc):
    r = {
        "kind": "job_cli" if tool == "cli" else "job_scale",
        "job": name,
        "ranks": int(ranks),
        "tool": label,
        "json_gb": int(float(jb)) / 1e9,
        "gz_gb": int(gz) / 1e9,
        "wall_s": float(wall),
        "cpu_s": float(cpu),
        "rss_mb": float(rss),
        "exit": int(rc),
        "stdout_mb": round(os.path.getsize(out) / 1e6, 1),
    }
    if rc == "0" and tool != "cli":
        s = json.load(open(out))
        st = s["job_steps_ms"]
        r.update(
            json_gb=s["json_bytes"] / 1e9,
            tasks=s["tasks_replayed"],
            scale=s,
            steps=" / ".join(f"{m:.0f} / {x:.0f}" for m, x in zip(st["measured"], st["replayed"])),
        )
    elif rc == "0":
        # The output can be hundreds of MB: scan its lines for the job's
        # steps (pretty-printed, keys sorted: measured_us and replayed_us
        # come before slowest_rank_measured, which only job steps have).
        steps, last = [], {}
        with open(out) as f:
            for line in f:
                m = re.match(r'\s*"(measured_us|replayed_us|slowest_rank_measured)": ([0-9.]+)', line)
                if not m:
                    continue
                if m.group(1) == "slowest_rank_measured":
                    steps.append(f"{last['measured_us'] / 1e3:.0f} / {last['replayed_us'] / 1e3:.0f}")
                else:
                    last[m.group(1)] = float(m.group(2))
        r["steps"] = " / ".join(steps)
    print(json.dumps(r))


def size_key(s):
    return float(s[:-1]) * (1000 if s.endswith("G") else 1)


def report(path):
    rows = [json.loads(l) for l in open(path) if l.strip()]

    def of(kind, **k):
        return [r for r in rows if r.get("kind") == kind and all(r.get(a) == b for a, b in k.items())]

    print("\n### Single rank: `lumos replay --json` (the whole command)\n")
    print("| input | JSON MB | runs | wall s best / median | CPU s | peak RSS MB | RSS / JSON | 1 GB target: < 10 s, RSS < JSON |")
    print("|---|---|---|---|---|---|---|---|")
    for size in sorted({r["size"] for r in of("replay")}, key=size_key):
        for fmt in ("json", "json.gz"):
            rs = of("replay", size=size, format=fmt)
            if not rs:
                continue
            walls = sorted(r["wall_s"] for r in rs)
            rss = max(r["rss_mb"] for r in rs)
            cpu = min(r["cpu_s"] for r in rs)
            jmb = rs[0]["json_mb"]
            misses = []
            if walls[0] >= 10:
                misses.append(f"time {walls[0] / 10:.2f}x")
            if rss >= jmb:
                misses.append(f"RSS {rss / jmb:.2f}x JSON")
            verdict = "met" if not misses else "missed: " + ", ".join(misses)
            bad = [r for r in rs if r.get("exit", 0) != 0]
            if bad:
                verdict += f" ({len(bad)} runs failed)"
            print(
                f"| {size} .{fmt} | {jmb:.0f} | {len(rs)} | {walls[0]:.2f} / {walls[len(walls) // 2]:.2f} "
                f"| {cpu:.2f} | {rss:.0f} | {rss / jmb:.2f} | {verdict} |"
            )

    print("\n### Single rank: stages (`scale single`, one run each)\n")
    print("| input | events | tasks | read s (MB/s) | build s (tasks/s) | simulate s (tasks/s) | RSS after read / build / graph alone / simulate, MB | counted: trace / graph + measured / schedule, MB |")
    print("|---|---|---|---|---|---|---|---|")
    for r in sorted(of("single"), key=lambda r: (size_key(r["size"]), r["format"])):
        p = r["peak_mb"]
        print(
            f"| {r['size']} .{r['format']} | {r['events']:,} | {r['tasks']:,} "
            f"| {r['read_s']:.2f} ({r['read_mb_per_s']:.0f}) | {r['build_s']:.2f} ({r['build_tasks_per_s'] / 1e3:.0f}k) "
            f"| {r['simulate_s']:.2f} ({r['simulate_tasks_per_s'] / 1e6:.1f}M) "
            f"| {p['read']:.0f} / {p['build']:.0f} / {p['graph_alone']:.0f} / {p['simulate']:.0f} "
            f"| {r['trace_mem']['total_mb']:.0f} / {r['graph_mem']['total_mb']:.0f} / {r['schedule_mb']:.0f} |"
        )
    for r in of("single", format="json"):
        t, g = r["trace_mem"], r["graph_mem"]
        print(
            f"\n{r['size']}: trace: events {t['events_mb']} MB ({t['event_size_b']} B each, capacity), "
            f"boxed extras {t['extras_mb']} MB ({t['events_with_extra']:,} x {t['event_extra_size_b']} B + strings), "
            f"flows {t['flows_mb']} MB; graph: tasks {g['tasks_mb']}, edges {g['edges_mb']}, scopes {g['scopes_mb']} "
            f"({g['scopes']:,}), measured {g['measured_mb']}, other {round(g['total_mb'] - g['tasks_mb'] - g['edges_mb'] - g['scopes_mb'] - g['measured_mb'], 1)} MB "
            f"= {g['bytes_per_task']:.0f} B/task"
        )

    print("\n### Jobs\n")
    print("| job | ranks | JSON GB (gzip GB) | command | wall s | CPU s | peak RSS MB | tasks replayed | job steps measured / replayed, ms |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in [r for r in rows if r.get("kind") in ("job_cli", "job_scale", "job_skip")]:
        if r["kind"] == "job_skip":
            print(f"| {r['job']} | {r['ranks']} | | {r['tool']} | skipped: {r['why']} | | | | |")
            continue
        failed = "" if r["exit"] == 0 else f" (exit {r['exit']})"
        print(
            f"| {r['job']} | {r['ranks']} | {r['json_gb']:.1f} ({r['gz_gb']:.2f}) | {r['tool']}{failed} "
            f"| {r['wall_s']:.1f} | {r['cpu_s']:.1f} | {r['rss_mb']:.0f} | {r.get('tasks', '')} | {r.get('steps', '')} |"
        )
    for r in of("job_scale"):
        s = r["scale"]
        print(
            f"\n{r['job']}, {r['tool']}: load (read + build, all ranks) {s['load_s']} s, match {s['match_s']} s, "
            f"clocks {s['clock_s']} s, merge {s['merge_s']} s, simulate {s['simulate_s']} s "
            f"({s['simulate_tasks_per_s'] / 1e6:.1f}M tasks/s); RSS after load / merge / simulate "
            f"{s['peak_mb']['load']} / {s['peak_mb']['merge']} / {s['peak_mb']['simulate']} MB; "
            f"{s['tasks_read']:,} tasks read, {s['groups']} groups, {s['replayed_ranks']} ranks replayed, "
            f"{s['rendezvous']} rendezvous, {s['match_problems']} match problems"
        )
        for g in s["group_table"]:
            print(
                f"  - group of {g['ranks']} ranks (representative {g['representative']}): measured steps "
                f"min / median / max {g['measured_steps_ms_min_median_max']} ms; representative replayed "
                f"{g['representative_replayed_steps_ms']} ms"
            )
    for r in of("skip"):
        print(f"\nskipped {r['what']}: {r['why']}")
    hta = of("hta")
    if hta:
        print("\n### HTA (traceinsight) `TraceAnalysis(...)` vs `lumos inspect --json`\n")
        print("| input | JSON MB | HTA s | lumos s | time ratio | HTA peak MB | lumos peak MB | memory ratio |")
        print("|---|---|---|---|---|---|---|---|")
        for r in hta:
            print(
                f"| {r['label']} | {r['json_mb']} | {r['hta_s']} | {r['lumos_inspect_s']} | {r['time_ratio']}x "
                f"| {r['hta_peak_mb']} | {r['lumos_peak_mb']} | {r['memory_ratio']}x |"
            )


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    {"time": parse_time, "single": single, "job": job, "report": report}[cmd](*args)
