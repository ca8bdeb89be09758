"""Shared fixtures: where the corpus and the `lumos` binary are, and the
CLI's JSON for a command.

The corpus is `$LUMOS_CORPUS`, else `../shared/traces` beside the
repository; without it the corpus tests skip with one line saying so,
unless `LUMOS_REQUIRE_CORPUS=1` (as in `.ci/run`), where that fails. The
binary is `$LUMOS_BIN`, else `$CARGO_TARGET_DIR/release/lumos`, else
`target/release/lumos` (`cargo build --release -p lumos`).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any, List

import pytest

REPO = Path(__file__).resolve().parents[2]


def _corpus() -> Path:
    return Path(os.environ.get("LUMOS_CORPUS") or REPO.parent / "shared" / "traces")


@pytest.fixture(scope="session")
def corpus() -> Path:
    """The corpus folder; skips (or fails, under LUMOS_REQUIRE_CORPUS=1)
    when it is absent."""
    path = _corpus()
    if not path.is_dir():
        msg = f"corpus not found at {path} (set LUMOS_CORPUS); corpus tests skipped"
        if os.environ.get("LUMOS_REQUIRE_CORPUS") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    return path


@pytest.fixture(scope="session")
def lumos_bin() -> Path:
    """The CLI binary built by cargo."""
    if os.environ.get("LUMOS_BIN"):
        path = Path(os.environ["LUMOS_BIN"])
    else:
        target = Path(os.environ.get("CARGO_TARGET_DIR") or REPO / "target")
        path = target / "release" / "lumos"
    if not path.is_file():
        pytest.fail(f"{path}: no lumos binary; run `cargo build --release -p lumos` first")
    return path


def run_cli(binary: Path, args: List[str]) -> subprocess.CompletedProcess:
    """Runs the CLI, capturing its output."""
    return subprocess.run([str(binary), *args], capture_output=True, text=True, check=False)


@pytest.fixture(scope="session")
def cli_json(lumos_bin: Path):
    """`cli_json(args)`: the CLI's `--json` output for `args`, parsed."""

    def run(args: List[str]) -> Any:
        p = run_cli(lumos_bin, [*args, "--json"])
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)

    return run


@pytest.fixture(scope="session")
def cli_error(lumos_bin: Path):
    """`cli_error(args)`: the CLI's exit code and its last `error: ` line,
    without the prefix."""

    def run(args: List[str]):
        p = run_cli(lumos_bin, args)
        lines = [l for l in p.stderr.splitlines() if l.startswith("error: ")]
        return p.returncode, (lines[-1][len("error: "):] if lines else "")

    return run
