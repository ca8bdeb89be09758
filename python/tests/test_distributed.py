"""lumos.distributed: the per-rank ingest as a plain function, and on a
local Ray cluster (started here, two worker processes), with the same
answers as the local path."""

from __future__ import annotations

import os
import multiprocessing
from concurrent.futures import ProcessPoolExecutor

import pytest

import lumos
from lumos import distributed

DLRM = "multi-rank/dlrm-8xv100"


def _numbers(report):
    """A report without the paths of the files (the per-rank files have
    their own)."""
    out = dict(report)
    out["traces"] = [{k: v for k, v in t.items() if k != "path"} for t in report["traces"]]
    return out


def test_the_plain_function_round_trips_a_rank(corpus, tmp_path):
    src = sorted((corpus / DLRM).iterdir())
    done = [distributed.ingest_rank(str(p), str(tmp_path)) for p in src]
    assert all(os.path.isfile(p) for p in done)
    job = distributed.load(done, progress=False)
    assert job.ranks == list(range(8))
    local = lumos.replay(str(corpus / DLRM), progress=False)
    assert _numbers(job.replay().report) == _numbers(local.report)


def test_the_plain_function_runs_in_other_processes(corpus, tmp_path):
    src = [str(p) for p in sorted((corpus / DLRM).iterdir())][:2]
    # Spawned, not forked: a fork of a process whose Rust thread pool has
    # started copies the pool's locks but not its threads.
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        done = list(pool.map(distributed.ingest_rank, src, [str(tmp_path)] * len(src)))
    assert [os.path.basename(p) for p in done] == [
        os.path.basename(p).replace(".json.gz", "") + ".lgraph" for p in src
    ]


def test_ingest_errors_are_lumos_errors(tmp_path):
    with pytest.raises(lumos.LumosIOError, match="missing.json"):
        distributed.ingest_rank(str(tmp_path / "missing.json"), str(tmp_path))


@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray", reason="ray is not installed (pip install ray)")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False, ignore_reinit_error=True)
    yield ray
    ray.shutdown()


def test_dlrm_on_ray_answers_as_the_local_path(corpus, tmp_path, ray_cluster):
    local = lumos.replay(str(corpus / DLRM), progress=False)
    r = distributed.replay_job(str(corpus / DLRM), str(tmp_path / "shared"), progress=False)
    assert _numbers(r.report) == _numbers(local.report)
    # Without a shared file system: the files travel through the object store.
    r = distributed.replay_job(str(corpus / DLRM), str(tmp_path / "driver"), shared_fs=False,
                               progress=False, scale_rank={3: 1.5})
    what_if = lumos.replay(str(corpus / DLRM), scale_rank={3: 1.5}, progress=False)
    assert _numbers(r.report) == _numbers(what_if.report)


def test_a_synthesized_64_rank_job_on_ray_answers_as_the_local_path(tmp_path, ray_cluster):
    traces = tmp_path / "traces"
    files = lumos.synth("gpt-tiny", traces, tp=2, pp=4, dp=8, ranks="all", steps=2, seed=5)
    assert len(files) == 64
    local = lumos.replay(str(traces), progress=False)
    assert local.is_job
    r = distributed.replay_job(str(traces), str(tmp_path / "ingested"), progress=False)
    assert _numbers(r.report) == _numbers(local.report)
    assert list(r.job_steps["replayed_us"]) == list(local.job_steps["replayed_us"])
    assert r.waiting.equals(local.waiting)
