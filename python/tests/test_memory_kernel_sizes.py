"""scripts/memory_kernel_sizes.py on real traces: the evidence that a
memory-bound kernel's time is a fixed cost plus its bytes' time, which
`lumos predict` and the synthesizer model (PREDICTION.md, "Memory-bound
kernels' fixed cost")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "memory_kernel_sizes.py"
TRACES = [
    "single-rank/a100-recsys-rank3of8.json.gz",
    "single-rank/mi300x-resnet-ddp-rank0of8.json.gz",
    "single-rank/recsys-rank0of128-sampled-no-flows.json.gz",
]


def _run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)],
                          capture_output=True, text=True, check=False)


def test_the_fixed_cost_model_errs_less_than_whole_scaling_on_real_traces(corpus):
    r = _run("--json", *(corpus / t for t in TRACES))
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert [row["trace"] for row in rows] == [Path(t).name for t in TRACES]
    for row in rows:
        above = row["regimes"]["above"]
        assert above["pairs"] >= 100, row
        assert 0 < row["floor_us"] < 5, row
        fixed, whole = above["median_abs_error_pct_fixed_cost"], above["median_abs_error_pct_whole"]
        assert fixed < 0.9 * whole, row


def test_a_damaged_trace_is_named_and_the_run_fails(tmp_path, corpus):
    bad = tmp_path / "cut.json.gz"
    bad.write_bytes((corpus / TRACES[0]).read_bytes()[:5000])
    r = _run(bad)
    assert r.returncode == 1
    assert "cut.json.gz: cannot read" in r.stderr
    assert "Traceback" not in r.stderr
