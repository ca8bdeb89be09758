"""The HTA-style example runs end to end on the corpus' DLRM job."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "hta_style.py"


def test_the_hta_style_example_runs(corpus, tmp_path):
    plot = tmp_path / "steps.png"
    p = subprocess.run(
        [sys.executable, str(EXAMPLE), str(corpus / "multi-rank" / "dlrm-8xv100"), str(plot)],
        capture_output=True, text=True, check=False,
    )
    assert p.returncode == 0, p.stderr
    for section in ("breakdown per step", "top kernels", "stragglers", "what-if"):
        assert f"== {section}" in p.stdout
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "no plot" in p.stdout
    else:
        assert plot.stat().st_size > 0
