"""Per-rank ingest on a cluster, job replay on the driver.

A job of thousands of ranks at a gigabyte of trace each does not fit on
one machine, but each rank's trace fits on one worker, and the job-level
work needs far less than the traces. So the work splits in two:

1. :func:`ingest_rank` reads one trace and writes its rank's graph into a
   per-rank file. It is a plain function of two paths, with no state and
   no engine: run it as Ray tasks (:func:`ingest`), Spark or Dask tasks, a
   job array, or a loop.
2. :func:`load` reads the per-rank files on the driver and assembles the
   job (identities, collective matching, clock alignment);
   ``Job.replay`` replays it with any what-if.

:func:`replay_job` does both, on Ray. The per-rank files are the compact
``.lgraph`` graphs of lumos-store, the files ``lumos ingest`` writes (the
CLI reads them too): the driver reads graphs, never traces.

For big jobs the driver does not even hold every rank's graph:
:func:`replay_representatives` (``lumos replay --representatives``) reads
each per-rank file's summary and program only, groups the ranks by
communication program and loads one graph per group, so that the
driver's memory follows the number of distinct rank programs, not the
number of ranks. :func:`replay_job` uses it from
:data:`REPRESENTATIVES_FROM` ranks on, or whenever
``representatives=True``.

Spark (``out`` must be a folder every executor and the driver can reach)::

    from lumos.distributed import ingest_rank, load
    done = sc.parallelize(paths, len(paths)).map(lambda p: ingest_rank(p, out)).collect()
    job = load(done)

Dask::

    import dask
    done = dask.compute(*[dask.delayed(ingest_rank)(p, out) for p in paths])
    job = load(done)
"""

from __future__ import annotations

import os
import tempfile
import warnings
from typing import Any, List, Optional, Sequence, Tuple

from . import ConfigError, Job, PathLike, Paths, Replay, _lumos, _path, _paths, _warn_missing
from . import replay as _replay
from ._progress import ProgressArg, callback

__all__ = [
    "REPRESENTATIVES_FROM",
    "ingest",
    "ingest_rank",
    "ingest_rank_bytes",
    "load",
    "replay_job",
    "replay_representatives",
]

#: From this many ranks on, :func:`replay_job` replays by representatives
#: unless told otherwise. Below it the joint replay of every rank fits a
#: driver easily (a 64-rank GPT job's graphs take a few hundred MB) and is
#: exact; above it, memory and time grow with the ranks while the
#: representatives' answers stay within half a percent of it on the jobs
#: tested (crates/cli/tests/representatives.rs).
REPRESENTATIVES_FROM = 256


def ingest_rank(path: PathLike, out_dir: PathLike) -> str:
    """Reads the trace at ``path``, builds its rank's graph and writes the
    per-rank file into ``out_dir`` (created if needed; the file appears
    whole or not at all). Returns the file's path. Raises the
    :mod:`lumos.errors` exceptions, with the CLI's messages; a trace with
    no CPU or GPU task is written with a ``UserWarning``, as ``lumos
    ingest`` writes it with a note.

    The file is named after the trace (``rank3.json.gz`` gives
    ``rank3.lgraph``) and replaces one already there, as ``lumos ingest
    -o`` does: traces of one file name in different folders
    (``n0/trace.json.gz``, ``n1/trace.json.gz``) need different
    ``out_dir`` s. :func:`ingest` refuses such traces up front, as
    ``lumos ingest`` does.

    Engine-agnostic: a pure function of its two arguments, picklable, safe
    to run in parallel in threads or processes."""
    path, out_dir = _path(path, "path"), _path(out_dir, "out_dir")
    out, _rank, tasks, _bytes = _lumos.ingest_rank(path, out_dir)
    if tasks == 0:
        # Written all the same, as `lumos ingest` writes it: a job then
        # names the rank and leaves it out.
        warnings.warn(
            f"{path}: no CPU or GPU task was read (lumos.inspect counts the "
            "events skipped); its graph is written, but replaying it alone is refused "
            "and a job leaves its rank out",
            stacklevel=2,
        )
    return out


def ingest_rank_bytes(path: PathLike) -> Tuple[str, bytes]:
    """:func:`ingest_rank` for workers that share no file system with the
    driver: returns the per-rank file's name and content, for the driver to
    write (the engine's object store carries them)."""
    with tempfile.TemporaryDirectory(prefix="lumos-ingest-") as tmp:
        out = ingest_rank(path, tmp)
        with open(out, "rb") as f:
            return os.path.basename(out), f.read()


def load(paths: Paths, *, progress: ProgressArg = None) -> Job:
    """Assembles per-rank files (of :func:`ingest_rank`) as the ranks of one
    job, read in parallel on this machine; missing ranks a ``UserWarning``,
    as :func:`lumos.load_job`. ``paths`` is a list of them, or one path
    (as every function of lumos takes it: a ``str`` is one path, not a
    sequence of one-letter paths); a directory expands to its files, as
    :func:`lumos.load_job`'s does."""
    files = _lumos.expand(_paths(paths), True)
    with callback(progress) as cb:
        job = Job(_lumos.load_ingested(files, cb))
    _warn_missing(job)
    return job


def replay_representatives(
    paths: Paths, *, progress: ProgressArg = None, **what_if: Any
) -> Replay:
    """Replays the job of per-rank files (of :func:`ingest_rank`) from one
    rank per group of ranks that run the same communication program, as
    ``lumos replay --representatives`` does on the same files: only each
    file's summary and program are read, then one graph per group.
    ``what_if`` takes :func:`lumos.replay`'s options but ``scale_rank``;
    ``Replay.graphs_loaded`` is the number of graphs read (one per
    group)."""
    return _replay(_paths(paths), representatives=True, progress=progress, **what_if)


def ingest(
    paths: Paths,
    out_dir: PathLike,
    *,
    shared_fs: bool = True,
    num_cpus: float = 1,
    ray_remote_args: Optional[dict] = None,
    progress: ProgressArg = None,
) -> List[str]:
    """Runs :func:`ingest_rank` on every trace as Ray tasks (Ray must be
    initialised, or is started locally) and returns the per-rank files, in
    the order of ``paths`` (directories expanded as :func:`lumos.replay`
    does). Traces whose per-rank files would take one name (``n0/trace.json.gz``
    and ``n1/trace.json.gz``) raise :class:`~lumos.ConfigError` before any
    task starts, as ``lumos ingest`` refuses them; so does an ``out_dir``
    that is a file, or lies under one.

    With ``shared_fs`` (the default), workers write into ``out_dir``
    themselves: it must be reachable from every node and the driver under
    the same path. Without it, workers return the files' contents through
    Ray's object store and the driver writes them into ``out_dir``.
    ``progress`` as :func:`lumos.replay`'s, in traces ingested (phase
    ``ingesting``)."""
    files = _lumos.expand(_paths(paths))
    out_dir = _path(out_dir, "out_dir")
    # A file there is refused before any task starts (or Ray is needed).
    _lumos.check_output_dir(out_dir, "out_dir")
    _distinct_names(files)
    import ray  # optional dependency: pip install ray

    args = {"num_cpus": num_cpus, **(ray_remote_args or {})}
    if shared_fs:
        task: Any = ray.remote(**args)(ingest_rank)
        refs = [task.remote(f, out_dir) for f in files]
        return list(_gather(refs, progress))
    task = ray.remote(**args)(ingest_rank_bytes)
    os.makedirs(out_dir, exist_ok=True)
    out = []
    for name, data in _gather([task.remote(f) for f in files], progress):
        dest = os.path.join(out_dir, name)
        tmp = f"{dest}.tmp{os.getpid()}"
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, dest)
        out.append(dest)
    return out


def _gather(refs: List[Any], progress: ProgressArg) -> List[Any]:
    """``ray.get(refs)``, telling ``progress`` how many have finished as
    they do (a job of thousands of traces takes minutes)."""
    import ray

    with callback(progress) as cb:
        pending, total = list(refs), len(refs)
        cb("ingesting", 0, total)
        while pending:
            _, pending = ray.wait(pending, num_returns=len(pending), timeout=0.1)
            cb("ingesting", total - len(pending), total)
    return list(ray.get(refs))


def _distinct_names(files: Sequence[str]) -> None:
    """Refuses traces whose per-rank files would take one name in
    ``out_dir`` (each would replace the other's), as ``lumos ingest``
    refuses them."""
    seen: dict = {}
    for f in files:
        name = _lumos.ingest_name(f)
        if name in seen:
            raise ConfigError(
                f"{seen[name]} and {f} would both be written as {name} into out_dir: "
                "give traces of different file names, or write them apart"
            )
        seen[name] = f


def replay_job(
    paths: Paths,
    out_dir: PathLike,
    *,
    shared_fs: bool = True,
    num_cpus: float = 1,
    representatives: Optional[bool] = None,
    progress: ProgressArg = None,
    **what_if: Any,
) -> Replay:
    """Ingests every rank on Ray (:func:`ingest`), then on the driver
    either assembles the job (:func:`load`) and replays every rank
    jointly, or replays it from representatives
    (:func:`replay_representatives`): with ``representatives=True``, or
    by default (``None``) from :data:`REPRESENTATIVES_FROM` ranks on.
    ``what_if`` takes :func:`lumos.replay`'s options (``scale_kernels``,
    ``scale_rank`` (not with representatives), ...). The answers are those
    of ``lumos.replay(paths, job=True, ...)``, or with representatives of
    ``lumos.replay(paths, representatives=True, ...)``."""
    done = ingest(paths, out_dir, shared_fs=shared_fs, num_cpus=num_cpus, progress=progress)
    if representatives is None:
        representatives = len(done) >= REPRESENTATIVES_FROM
    if representatives:
        return replay_representatives(done, progress=progress, **what_if)
    return load(done, progress=progress).replay(**what_if)
