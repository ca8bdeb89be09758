"""Calls a data scientist makes that the other tests did not: numbers
straight from a DataFrame (numpy scalars), arguments of the wrong kind,
a path given where a list of paths goes."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

import lumos
from lumos import ConfigError


def test_numpy_integers_are_whole_numbers_and_ranks(corpus, tmp_path):
    # A rank taken from a frame is an np.int64, not an int: it was
    # refused as "`np.int64(7)` is not a rank number".
    job = lumos.load_job(corpus / "multi-rank" / "dlrm-8xv100", progress=False)
    slowest = job.replay().stragglers()["rank"].iloc[0]
    assert isinstance(slowest, np.integer)
    by_np = job.replay(scale_rank={slowest: 1.5}).job_steps
    by_int = job.replay(scale_rank={int(slowest): 1.5}).job_steps
    assert by_np["replayed_us"].tolist() == by_int["replayed_us"].tolist()
    # Degrees and counts likewise (was "dp: must be a whole number from 1
    # to 65536, got np.int64(2)"); out of range or not whole still refused.
    by_np = lumos.synth("gpt-tiny", tmp_path / "np", dp=np.int64(2), steps=np.uint8(3),
                        progress=False)
    by_int = lumos.synth("gpt-tiny", tmp_path / "int", dp=2, steps=3, progress=False)
    assert [gzip.decompress(open(f, "rb").read()) for f in by_np] == [
        gzip.decompress(open(f, "rb").read()) for f in by_int
    ]
    with pytest.raises(ConfigError, match=r"dp: must be a whole number from 1 to 65536, got np.int64\(0\)"):
        lumos.synth("gpt-tiny", tmp_path / "bad", dp=np.int64(0), progress=False)
    for not_whole in (np.float64(2.0), np.True_):
        with pytest.raises(ConfigError, match="must be a whole number"):
            lumos.synth("gpt-tiny", tmp_path / "bad", dp=not_whole, progress=False)
        with pytest.raises(ConfigError, match="is not a rank number"):
            job.replay(scale_rank={not_whole: 1.5})


def test_distributed_takes_one_path_as_one_path(corpus, tmp_path, cli_json):
    # A str was iterated as a list of one-letter paths: load("lg") said
    # "/ is given twice", replay_representatives("lg") walked the whole
    # file system from "/" until a folder could not be listed.
    from lumos import distributed

    lg = tmp_path / "lg"
    job = corpus / "multi-rank" / "dlrm-8xv100"
    files = [distributed.ingest_rank(p, lg) for p in sorted(job.iterdir())]
    assert distributed.load(str(lg), progress=False).ranks == list(range(8))
    assert distributed.load(lg, progress=False).ranks == list(range(8))
    r = distributed.replay_representatives(str(lg), progress=False)
    assert r.report["summary"] == cli_json(["replay", "--representatives", *files])["summary"]
    # Arguments that are no path are ConfigErrors, not os.fspath's TypeError.
    with pytest.raises(ConfigError, match="paths: expected a path or a list of paths, got 3"):
        distributed.load(3)
    with pytest.raises(ConfigError, match="out_dir: expected a path"):
        distributed.ingest_rank(files[0], None)
    with pytest.raises(ConfigError, match="path: expected a path"):
        distributed.ingest_rank(3, lg)
