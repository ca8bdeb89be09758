"""scripts/first_touch.py: the rate it prints, and its refusals."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "first_touch.py"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60
    )


def test_prints_a_rate_for_each_size() -> None:
    done = run("0.001", "0.002")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split(" GiB:")[0] for line in lines] == ["0.001", "0.002"]
    assert all(line.endswith("GiB/s") for line in lines)


def test_refuses_sizes_that_are_not_a_page_or_a_number() -> None:
    for bad in ("0", "-1", "nan", "lots"):
        done = run(bad)
        assert done.returncode == 2, bad
        assert "usage: python3 scripts/first_touch.py" in done.stderr
        assert done.stdout == ""


def test_a_size_it_cannot_map_is_an_error_not_a_traceback() -> None:
    done = run("1e30")
    assert done.returncode == 1
    assert done.stderr.startswith("first_touch: cannot map 1e+30 GiB")
    assert "Traceback" not in done.stderr
