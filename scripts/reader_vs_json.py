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
and sonic-rs building the whole document, on the bytes already in memory).
Runs alternate so that a change of the machine's speed touches all alike.
Prints each one's best and median MB/s (of uncompressed JSON) and the
ratio of the reader's best to the fastest reference's best.

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
SECONDS = re.compile(r", ([0-9.]+) s, [0-9]+ MB/s$")


def seconds(command: list[str], env: dict[str, str]) -> float:
    """The time `read_trace` printed for its one read or parse."""
    out = subprocess.run(command, env=env, check=True, capture_output=True, text=True)
    found = SECONDS.search(out.stdout.strip().splitlines()[-1])
    if found is None:
        raise SystemExit(f"unexpected output of {' '.join(command)}: {out.stdout!r}")
    return float(found.group(1))


def compare(binary: str, path: str, rounds: int) -> None:
    """Runs the reader and the references alternately on `path`; prints a table."""
    env = dict(os.environ, RAYON_NUM_THREADS="1")
    commands = {"lumos reader": [binary, path]}
    commands.update({p: [binary, "--reference", p, "1", path] for p in PARSERS})
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(rounds):
        for name, command in commands.items():
            times[name].append(seconds(command, env))
    mb = os.path.getsize(path) / 1e6
    print(f"{os.path.basename(path)} ({mb:.1f} MB, {rounds} rounds)")
    for name, t in times.items():
        print(f"  {name:18} best {mb / min(t):6.0f} MB/s  median {mb / statistics.median(t):6.0f} MB/s")
    fastest = min(min(times[p]) for p in PARSERS)
    print(f"  reader / fastest reference (best): {fastest / min(times['lumos reader']):.2f}x")


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
