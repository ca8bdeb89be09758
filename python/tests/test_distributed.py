"""lumos.distributed: the per-rank ingest as a plain function, and on a
local Ray cluster (started here, two worker processes), with the same
answers as the local path."""

from __future__ import annotations

import os
import multiprocessing
import sys
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


def test_traces_of_one_file_name_do_not_replace_each_others_rank(corpus, tmp_path, cli_error):
    """`n0/trace.json.gz` and `n1/trace.json.gz` would both be written as
    `out/trace.lgraph`: `ingest` refuses them up front as `lumos ingest`
    does (before Ray is needed); `ingest_rank` of one trace again
    replaces its own file."""
    import shutil

    src = sorted((corpus / DLRM).iterdir())
    traces = []
    for n, f in enumerate(src[:2]):
        (tmp_path / f"n{n}").mkdir()
        traces.append(str(tmp_path / f"n{n}" / "trace.json.gz"))
        shutil.copy(f, traces[-1])
    out = tmp_path / "out"
    code, message = cli_error(["ingest", *traces, "-o", str(out)])
    assert code == 2 and "would both be written as trace.lgraph" in message
    with pytest.raises(lumos.ConfigError) as e:
        distributed.ingest(traces, str(out))
    assert str(e.value) == message.replace("-o's directory", "out_dir")
    assert not out.exists()
    first = distributed.ingest_rank(traces[0], str(out))
    assert distributed.ingest_rank(traces[0], str(out)) == first
    with pytest.warns(UserWarning, match="7 of 8 ranks have no file"):
        assert distributed.load([first], progress=False).ranks == [0]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the guard reads /proc")
def test_loading_ingested_ranks_past_the_memory_limit_is_an_input_error(
    corpus, tmp_path, monkeypatch
):
    src = sorted((corpus / DLRM).iterdir())
    done = [distributed.ingest_rank(str(p), str(tmp_path)) for p in src]
    monkeypatch.setenv("LUMOS_MEMORY_LIMIT", "1M")
    with pytest.raises(lumos.InputError, match="of 8 inputs not read"):
        distributed.load(done, progress=False)


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
    calls = []
    r = distributed.replay_job(str(corpus / DLRM), str(tmp_path / "shared"),
                               progress=lambda *a: calls.append(a))
    assert _numbers(r.report) == _numbers(local.report)
    ingesting = [c for c in calls if c[0] == "ingesting"]
    assert ingesting[0] == ("ingesting", 0, 8) and ingesting[-1] == ("ingesting", 8, 8)
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


def _ingested(traces, out, ray_cluster):
    done = distributed.ingest(str(traces), str(out))
    assert all(p.endswith(".lgraph") for p in done)
    return done


def _check_representatives(r, cli, ranks):
    """`r` is the CLI's answer on the same files, and loaded one graph per
    group."""
    assert r.report == cli
    reps = r.representatives
    assert reps["ranks"] == ranks
    groups = len(reps["groups"])
    assert reps["replayed_ranks"] == groups
    assert r.graphs_loaded == groups
    assert len(r.traces) == groups


def test_dlrm_by_representatives_on_ray_answers_as_the_cli(corpus, tmp_path, ray_cluster,
                                                          cli_json):
    done = _ingested(corpus / DLRM, tmp_path / "ingested", ray_cluster)
    out = str(tmp_path / "ingested")
    cli = cli_json(["replay", "--representatives", out])
    r = distributed.replay_representatives(done, progress=False)
    _check_representatives(r, cli, 8)
    # The local path, on the same files (a folder of them), and a what-if.
    assert lumos.replay(out, representatives=True, progress=False).report == cli
    cli = cli_json(["replay", "--representatives", out, "--scale-kernels", "0.5",
                    "--scale-only", "compute"])
    r = distributed.replay_representatives(done, scale_kernels=0.5, scale_only="compute",
                                           progress=False)
    _check_representatives(r, cli, 8)


def test_replay_job_uses_representatives_for_big_jobs(corpus, tmp_path, ray_cluster,
                                                      monkeypatch, cli_json):
    monkeypatch.setattr(distributed, "REPRESENTATIVES_FROM", 8)
    r = distributed.replay_job(str(corpus / DLRM), str(tmp_path / "big"), progress=False)
    _check_representatives(r, cli_json(["replay", "--representatives", str(tmp_path / "big")]), 8)
    r = distributed.replay_job(str(corpus / DLRM), str(tmp_path / "small"),
                               representatives=False, progress=False)
    assert r.representatives is None and r.graphs_loaded is None
    with pytest.raises(lumos.ConfigError, match="scale_rank"):
        distributed.replay_representatives(
            [str(p) for p in sorted((tmp_path / "big").iterdir())], scale_rank={1: 2.0})


def test_a_64_rank_job_by_representatives_on_ray_answers_as_the_cli(tmp_path, ray_cluster,
                                                                    cli_json):
    traces = tmp_path / "traces"
    files = lumos.synth("gpt-tiny", traces, tp=2, pp=4, dp=8, ranks="all", steps=2, seed=5)
    assert len(files) == 64
    out = tmp_path / "ingested"
    r = distributed.replay_job(str(traces), str(out), representatives=True,
                               scale_kernels=0.7, progress=False)
    cli = cli_json(["replay", "--representatives", str(out), "--scale-kernels", "0.7"])
    _check_representatives(r, cli, 64)
    # One graph per group, far fewer than the ranks.
    assert r.graphs_loaded < 64 / 4
    # Traces give the same answers (their own paths aside).
    local = lumos.replay(str(traces), representatives=True, scale_kernels=0.7, progress=False)
    assert _numbers(local.report) == _numbers(r.report)
