"""scripts/recorded_pairs.py, which checks lumos against a sweep recorded
by `shared/tools/record_gpt_traces.py`, run here on a small generated
stand-in of such a recording (`record_gpt_like.py`) with its manifest."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_cli
from record_gpt_like import write_trace

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "recorded_pairs.py"
SMALL = dict(layers=2, hidden=512, heads=4, batch=2, microbatches=1, seq=256, vocab=8000)


@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("recording")
    configs = {"l2": SMALL, "l4": dict(SMALL, layers=4), "l2-seq512": dict(SMALL, seq=512)}
    runs = []
    for name, cfg in configs.items():
        times = write_trace(str(out / f"{name}.json.gz"), **cfg)
        # untraced steps 10% shorter than traced ones, as a profiler's overhead would make them
        runs.append(dict(cfg, name=name, file=f"{name}.json.gz", wall_step_ms=0.9 * times[0] / 1000.0))
    runs.append(dict(SMALL, name="l8", error="RuntimeError('CUDA out of memory')"))
    (out / "manifest.json").write_text(json.dumps({"gpu": "stand-in", "runs": runs}))
    return out


def _script(lumos_bin, *args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args), "--lumos", str(lumos_bin)],
                          capture_output=True, text=True, check=False)


def test_pairs_are_the_configurations_lumos_can_edit_between(recording, lumos_bin):
    p = _script(lumos_bin, recording, "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    # the failed run has no trace, and a sequence length is not an edit: only l2 <-> l4
    assert sorted(out["configs"]) == ["l2", "l2-seq512", "l4"]
    assert sorted((r["from"], r["to"], tuple(r["args"])) for r in out["pairs"]) == [
        ("l2", "l4", ("--layers", "4")), ("l4", "l2", ("--layers", "2"))]
    for r in out["pairs"]:
        # the same figure `lumos predict` gives, against the target's traced and untraced steps
        p = run_cli(lumos_bin, ["predict", str(recording / f"{r['from']}.json.gz"), *r["args"], "--json"])
        predicted = json.loads(p.stdout)["mean_predicted_ms"]
        assert r["predicted_ms"] == pytest.approx(predicted)
        traced = out["configs"][r["to"]]["traced_ms"]
        assert r["error_pct"] == pytest.approx(100 * (predicted - traced) / traced)
        untraced = out["configs"][r["to"]]["wall_step_ms"]
        assert r["error_untraced_pct"] == pytest.approx(100 * (predicted - untraced) / untraced)
        assert abs(r["error_pct"]) < 2.5, r


def test_the_table_shows_overhead_and_errors(recording, lumos_bin):
    p = _script(lumos_bin, recording)
    assert p.returncode == 0, p.stderr
    assert "+11.1%" in p.stdout, p.stdout  # traced / untraced = 1 / 0.9
    assert "2 pairs predicted, 0 refused" in p.stdout, p.stdout


def test_a_folder_without_a_manifest_is_refused(tmp_path, lumos_bin):
    p = _script(lumos_bin, tmp_path)
    assert p.returncode == 1 and "no manifest.json" in p.stderr, p.stderr


@pytest.mark.parametrize("text", ["{not json", '{"runs": [{"name": "x"}]}', '{"gpu": "H200"}', "[1, 2]"])
def test_a_damaged_manifest_is_named_with_what_is_wrong(tmp_path, lumos_bin, text):
    (tmp_path / "manifest.json").write_text(text)
    p = _script(lumos_bin, tmp_path)
    assert p.returncode == 1 and "manifest.json: not a manifest of record_gpt_traces.py" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr, p.stderr
