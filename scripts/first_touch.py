#!/usr/bin/env python3
"""Time how fast this machine hands a process fresh memory.

    python3 scripts/first_touch.py [GIB...]

For each size (GiB, default 1 and 4), in this process: maps that much
anonymous memory and writes one byte to each 4 KiB page, so that the
kernel faults every page in and zeroes it, and prints the rate. Nothing
else runs in the loop, so the rate is the kernel's (and, on a virtual
machine, the host's) cost of a fresh page: the floor under any program
that builds large new structures, such as a graph build on a 4 GB trace.

docs/PERFORMANCE.md uses it to tell the machine's share of a build's
time from the program's: on bare metal pages are zeroed at several GiB/s;
a virtual machine whose host backs guest memory lazily can be ten times
slower, and its rate can change from one run to the next.
"""

import mmap
import sys
import time

PAGE = 4096


def touch(gib: float) -> float:
    """Seconds to fault in `gib` GiB of fresh anonymous memory."""
    size = int(gib * (1 << 30))
    area = mmap.mmap(-1, size)
    start = time.perf_counter()
    for offset in range(0, size, PAGE):
        area[offset] = 1
    seconds = time.perf_counter() - start
    area.close()
    return seconds


def main() -> int:
    usage = __doc__.strip().splitlines()[2].strip()
    try:
        sizes = [float(a) for a in sys.argv[1:]] or [1.0, 4.0]
    except ValueError:
        print(f"usage: {usage}", file=sys.stderr)
        return 2
    if any(not gib * (1 << 30) >= PAGE for gib in sizes):
        print("first_touch: each size must be at least one page (4 KiB)", file=sys.stderr)
        print(f"usage: {usage}", file=sys.stderr)
        return 2
    for gib in sizes:
        try:
            seconds = touch(gib)
        except (OSError, OverflowError, MemoryError) as e:
            print(f"first_touch: cannot map {gib:g} GiB: {e}", file=sys.stderr)
            return 1
        print(f"{gib:g} GiB: {seconds:.2f} s, {gib / max(seconds, 1e-9):.2f} GiB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
