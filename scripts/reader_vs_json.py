#!/usr/bin/env python3
"""Set the trace reader's speed against general JSON parsers, file by file.

    python3 scripts/reader_vs_json.py READ_TRACE [--rounds N] FILE.json...

READ_TRACE is the `read_trace` example of lumos-trace
(`cargo build --release -p lumos-trace --example read_trace`, then
`target/release/examples/read_trace`). Each FILE must be plain JSON
(`read_trace --decompress IN.json.gz OUT.json` writes one).

For every file, N rounds (default 5) of, in turn: the reader on one rayon
thread (`RAYON_NUM_THREADS=1 read_trace FILE`, the read of the file
included) and each reference parser (`read_trace --reference PARSER 1
FILE`: serde_json and sonic-rs deserializing the members the model reads,
and sonic-rs building the whole document, on the bytes already in memory),
and the two bounds of a structural-index design (`structural-index`:
simdjson's two stages finding the members the model reads and checking
nothing; `structural-index-stage1`: its first stage alone). Runs alternate
so that a change of the machine's speed touches all alike. Prints each
one's best and median MB/s (of uncompressed JSON), the ratio of the
reader's best to the fastest reference parser's best, and the reader's
best as a share of the bound's.

docs/PERFORMANCE.md ("Against general JSON parsers") keeps the results:
what a JSON parser reaches on the machine bounds what 1 GB/s per core asks
of the reader there.
"""

import os
import re
import statistics
import subprocess
import sys

PARSERS = ["serde_json-typed", "sonic-rs-typed", "sonic-rs-dom"]
BOUNDS = ["structural-index", "structural-index-stage1"]
SECONDS = re.compile(r", ([0-9.]+) s, [0-9]+ MB/s$")
EVENTS = re.compile(r": (?:[a-z0-9_-]+: )?([0-9]+) events")


def seconds(command: list[str], env: dict[str, str]) -> tuple[float, int]:
    """The time `read_trace` printed for its one read or parse, and the
    events (for `structural-index-stage1`, index positions) it counted."""
    out = subprocess.run(command, env=env, check=True, capture_output=True, text=True)
    last = out.stdout.strip().splitlines()[-1]
    found, events = SECONDS.search(last), EVENTS.search(last)
    if found is None or events is None:
        raise SystemExit(f"unexpected output of {' '.join(command)}: {out.stdout!r}")
    return float(found.group(1)), int(events.group(1))


def compare(binary: str, path: str, rounds: int) -> None:
    """Runs the reader and the references alternately on `path`; prints a table."""
    env = dict(os.environ, RAYON_NUM_THREADS="1")
    commands = {"lumos reader": [binary, path]}
    commands.update({p: [binary, "--reference", p, "1", path] for p in PARSERS + BOUNDS})
    times: dict[str, list[float]] = {name: [] for name in commands}
    counts: dict[str, int] = {}
    for _ in range(rounds):
        for name, command in commands.items():
            t, counts[name] = seconds(command, env)
            times[name].append(t)
    # Every parser and the walking bound must have seen the reader's
    # events, or their times are not of the same work.
    for name in ["lumos reader", *PARSERS, "structural-index"]:
        if counts[name] != counts["lumos reader"]:
            raise SystemExit(f"{path}: {name} counted {counts[name]} events, the reader {counts['lumos reader']}")
    mb = os.path.getsize(path) / 1e6
    print(f"{os.path.basename(path)} ({mb:.1f} MB, {rounds} rounds)")
    for name, t in times.items():
        print(f"  {name:23} best {mb / min(t):6.0f} MB/s  median {mb / statistics.median(t):6.0f} MB/s")
    fastest = min(min(times[p]) for p in PARSERS)
    reader = min(times["lumos reader"])
    print(f"  reader / fastest reference (best): {fastest / reader:.2f}x")
    print(f"  reader / structural-index bound (best): {min(times['structural-index']) / reader:.2f}x")


def main() -> int:
    args = sys.argv[1:]
    rounds = 5
    if "--rounds" in args:
        at = args.index("--rounds")
        rounds = int(args[at + 1])
        del args[at : at + 2]
    if len(args) < 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    for path in args[1:]:
        compare(args[0], path, rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
