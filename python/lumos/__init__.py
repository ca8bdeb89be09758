"""lumos for notebooks: PyTorch profiler traces replayed, changed and
predicted, with the results as pandas DataFrames.

The package is the lumos library itself (a Rust extension), not a wrapper
around the command line: the numbers are the ones ``lumos`` prints, from
the same functions. The GIL is released while Rust works, and long work
shows a tqdm bar when tqdm is installed.

>>> import lumos
>>> r = lumos.replay("traces/")                 # one trace, or the ranks of a job
>>> r.steps                                      # measured / replayed / error per step
>>> r.step_breakdown                             # exposed compute, overlap, comm, idle
>>> r.top_kernels(10)                            # GPU time per kernel name
>>> r.stragglers()                               # who kept whom waiting (jobs)
>>> lumos.replay("traces/", scale_kernels=0.5, scale_only="compute").steps

Main entry points: :func:`replay`, :func:`inspect`, :func:`predict`,
:func:`synth`, :func:`read_trace` / :func:`load_job` (read once, replay many
what-ifs), and :mod:`lumos.distributed` (per-rank ingest on Ray, or any
engine). Errors are :class:`LumosError` s (:mod:`lumos.errors`).
"""

from __future__ import annotations

import json
import numbers
import os
import warnings
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import _lumos
from ._progress import ProgressArg, callback
from .errors import ConfigError, InputError, LumosError, LumosIOError
from .results import Diff, Inspection, Prediction, Replay, Transfer

__version__ = _lumos.version()

__all__ = [
    "ConfigError",
    "Diff",
    "InputError",
    "Inspection",
    "Job",
    "LumosError",
    "LumosIOError",
    "Prediction",
    "Replay",
    "Trace",
    "Transfer",
    "diff",
    "durations_from",
    "inspect",
    "load_job",
    "predict",
    "read_trace",
    "read_traces",
    "replay",
    "synth",
]

#: A path as every function takes it: ``str``, ``bytes`` (decoded as the
#: file system does) or ``os.PathLike``.
PathLike = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]
Paths = Union[PathLike, Iterable[PathLike]]


def _path(p: object, what: str = "paths") -> str:
    """One path as ``str`` (``bytes`` decoded as the file system does)."""
    if not isinstance(p, (str, bytes, os.PathLike)):
        raise ConfigError(f"{what}: expected a path (str or os.PathLike), got {p!r}")
    return os.fsdecode(os.fspath(p))


def _paths(paths: Paths) -> List[str]:
    if isinstance(paths, (str, bytes, os.PathLike)):
        return [_path(paths)]
    try:
        items = list(paths)  # type: ignore[arg-type]
    except TypeError:
        raise ConfigError(
            f"paths: expected a path or a list of paths, got {paths!r}"
        ) from None
    return [_path(p) for p in items]


def _str(v: object, what: str) -> str:
    """``v`` as the ``str`` argument ``what`` takes; anything else raises
    :class:`ConfigError`, not the extension's ``TypeError``."""
    if not isinstance(v, str):
        raise ConfigError(f"{what}: expected a str, got {v!r}")
    return v


def _opt_str(v: object, what: str) -> Optional[str]:
    """``v`` as an optional ``str`` argument: ``None`` or as :func:`_str`."""
    if v is not None and not isinstance(v, str):
        raise ConfigError(f"{what}: expected a str or None, got {v!r}")
    return v


def _is_bool(v: object) -> bool:
    return isinstance(v, bool) or (
        type(v).__module__ == "numpy" and type(v).__name__ in ("bool", "bool_")
    )


def _bool(v: object, what: str) -> bool:
    """``v`` as the flag ``what`` (a bool, numpy's too); anything else,
    ``"no"`` or ``0`` included, raises :class:`ConfigError` rather than be
    taken for true or false."""
    if not _is_bool(v):
        raise ConfigError(f"{what}: expected True or False, got {v!r}")
    return bool(v)


def _opt_bool(v: object, what: str) -> Optional[bool]:
    """``v`` as an optional flag: ``None`` or as :func:`_bool`."""
    if v is not None and not _is_bool(v):
        raise ConfigError(f"{what}: expected None, True or False, got {v!r}")
    return None if v is None else bool(v)


def _real(v: object, what: str) -> float:
    """``v`` as the number ``what`` (not a bool); anything else raises
    :class:`ConfigError` (its range is the extension's to check)."""
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise ConfigError(f"{what}: expected a number, got {v!r}")
    return float(v)


def _one_file(p: PathLike, what: str, command: Optional[str]) -> str:
    """``p`` as the one file an argument takes: a directory (which would
    expand to many) raises :class:`ConfigError` before anything is read;
    so does an ``.lgraph`` file where ``command`` needs a trace (``lumos
    diff`` compares traces and refuses it in the same words); ``None``
    when either is taken."""
    path = _path(p, what)
    if os.path.isdir(path):
        raise ConfigError(f"{what} {path}: give one trace file, not a directory")
    if command is not None and os.path.isfile(path) and _lumos.is_lgraph(path):
        raise ConfigError(f"{path}: {command} needs traces, not .lgraph files")
    return path


#: ``scale_kernels``: a bare factor (every GPU task, or those
#: ``scale_only`` / ``scale_pattern`` pick), or ``{pattern: factor}`` (or
#: ``["pattern=factor", ...]``, each pattern once: one given twice raises
#: :class:`ConfigError`) as ``--scale-kernels PATTERN=FACTOR``.
KernelScales = Union[float, Mapping[str, float], Sequence[str], None]


def _kernel_scales(scale_kernels: KernelScales) -> Tuple[Optional[object], List[str]]:
    """A bare factor (as given: the extension checks it) and the patterns."""
    if scale_kernels is None or isinstance(scale_kernels, numbers.Real):
        return scale_kernels, []
    if isinstance(scale_kernels, str):
        return None, [scale_kernels]
    if isinstance(scale_kernels, Mapping):
        # A pattern is a str: an int key would be taken as the substring
        # "1" of kernel names.
        return None, [f"{_str(k, 'scale_kernels pattern')}={v}" for k, v in scale_kernels.items()]
    if isinstance(scale_kernels, bytes) or not isinstance(scale_kernels, Iterable):
        raise ConfigError(
            "scale_kernels: expected a factor, {pattern: factor} or \"pattern=factor\" "
            f"(one or a list), got {scale_kernels!r}"
        )
    return None, [_str(k, "scale_kernels") for k in scale_kernels]


#: ``scale_rank``: ``{rank: factor}`` or ``(rank, factor)`` pairs.
RankScales = Union[Mapping[int, float], Iterable[Tuple[int, float]], None]


def _rank_scales(scale_rank: RankScales) -> List[Tuple[object, object]]:
    """``scale_rank`` as ``(rank, factor)`` pairs: a dict, or pairs (a rank
    given twice is refused by the extension, as the CLI refuses it)."""
    if scale_rank is None:
        return []
    if isinstance(scale_rank, Mapping):
        return list(scale_rank.items())
    if not isinstance(scale_rank, Iterable):
        raise ConfigError(
            f"scale_rank: expected {{rank: factor}} or (rank, factor) pairs, got {scale_rank!r}"
        )
    pairs: List[Tuple[object, object]] = []
    for p in scale_rank if not isinstance(scale_rank, (str, bytes)) else [scale_rank]:
        if isinstance(p, (str, bytes)) or not isinstance(p, Sequence) or len(p) != 2:
            raise ConfigError(
                f"scale_rank: expected {{rank: factor}} or (rank, factor) pairs, got {p!r}"
            )
        pairs.append((p[0], p[1]))
    return pairs


def _options(
    deps: Sequence[str] = (),
    scale_kernels: KernelScales = None,
    scale_only: str = "all",
    scale_pattern: Optional[str] = None,
    scale_rank: RankScales = None,
    scale_rank_cpu: bool = False,
) -> _lumos.ReplayOptions:
    if isinstance(deps, str):
        deps = [d for d in deps.split(",") if d]
    elif isinstance(deps, bytes) or not isinstance(deps, Iterable):
        raise ConfigError(f"deps: expected a list of dependency kinds, got {deps!r}")
    kinds = [_str(d, "deps") for d in deps]
    bare, patterns = _kernel_scales(scale_kernels)
    return _lumos.ReplayOptions(
        kinds, bare, _str(scale_only, "scale_only"), _opt_str(scale_pattern, "scale_pattern"),
        _rank_scales(scale_rank), _bool(scale_rank_cpu, "scale_rank_cpu"), patterns,
    )


class Trace:
    """One trace file, read once: replay it under as many what-ifs as
    wanted without reading it again."""

    def __init__(self, raw: _lumos.Trace) -> None:
        self._raw = raw

    def __repr__(self) -> str:
        return repr(self._raw)

    @property
    def path(self) -> str:
        """The file, as given."""
        return self._raw.path

    @property
    def rank(self) -> int:
        """Its rank."""
        return self._raw.rank

    @property
    def world_size(self) -> Optional[int]:
        """``distributedInfo.world_size``, if recorded."""
        return self._raw.world_size

    def inspect(self) -> Inspection:
        """``lumos inspect`` of this trace."""
        return Inspection({"traces": [json.loads(self._raw.inspect_json())]})

    def replay(
        self,
        *,
        deps: Sequence[str] = (),
        scale_kernels: KernelScales = None,
        scale_only: str = "all",
        scale_pattern: Optional[str] = None,
    ) -> Replay:
        """Replays the trace on its own; the what-ifs are :func:`replay`'s."""
        opts = _options(deps, scale_kernels, scale_only, scale_pattern)
        return Replay(self._raw.replay(opts))


class Job:
    """The ranks of one job, read, built and assembled once (identities
    checked, collectives matched, clocks aligned): replay it under as many
    what-ifs as wanted."""

    def __init__(self, raw: _lumos.Job) -> None:
        self._raw = raw

    def __repr__(self) -> str:
        return repr(self._raw)

    @property
    def ranks(self) -> List[int]:
        """Ranks present, ascending."""
        return list(self._raw.ranks)

    @property
    def world_size(self) -> Optional[int]:
        """The world size, if any file records it."""
        return self._raw.world_size

    @property
    def missing_ranks(self) -> List[int]:
        """Ranks below the world size that no file holds."""
        return list(self._raw.missing_ranks)

    @property
    def paths(self) -> List[str]:
        """Each rank's file, in rank order."""
        return list(self._raw.paths)

    @property
    def report(self) -> Dict[str, object]:
        """The job object of ``lumos inspect --json``: identities, matching,
        clocks."""
        return json.loads(self._raw.report_json())

    def programs(self) -> List[List[int]]:
        """Ranks grouped by communication program, lowest rank first."""
        return [list(g) for g in self._raw.programs()]

    def replay(
        self,
        *,
        deps: Sequence[str] = (),
        scale_kernels: KernelScales = None,
        scale_only: str = "all",
        scale_pattern: Optional[str] = None,
        scale_rank: RankScales = None,
        scale_rank_cpu: bool = False,
    ) -> Replay:
        """Replays the ranks together; the what-ifs are :func:`replay`'s."""
        opts = _options(deps, scale_kernels, scale_only, scale_pattern, scale_rank, scale_rank_cpu)
        return Replay(self._raw.replay(opts))


def read_trace(path: PathLike, *, progress: ProgressArg = None) -> Trace:
    """Reads one trace file (``.json`` or gzip, by content). A directory
    raises :class:`ConfigError` before anything is read: one trace is
    asked for (:func:`load_job` or :func:`replay` take a folder of a job's
    traces, :func:`read_traces` reads each of its files)."""
    p = _path(path, "path")
    if os.path.isdir(p):
        raise ConfigError(
            f"{p}: a directory; read_trace reads one trace file "
            "(load_job or replay take a folder of traces, read_traces reads each of its files)"
        )
    return read_traces([p], progress=progress)[0]


def read_traces(paths: Paths, *, progress: ProgressArg = None) -> List[Trace]:
    """Reads trace files, or directories of them (natural order), in
    parallel; the first that cannot be read is raised."""
    files = _paths(paths)
    for f in files:
        if os.path.isfile(f) and _lumos.is_lgraph(f):
            # An .lgraph file keeps the graph, not the trace.
            raise ConfigError(
                f"{f}: an .lgraph file, not a trace (replay, inspect, predict and load_job "
                "take .lgraph files)"
            )
    with callback(progress) as cb:
        return [Trace(t) for t in _lumos.read_traces(files, cb)]


def load_job(paths: Paths, *, progress: ProgressArg = None) -> Job:
    """Reads the ranks of one job (traces or ``.lgraph`` files) and
    assembles them, dropping each trace as soon as its graph is built. Two
    files claiming one rank are an
    :class:`InputError`; ranks below the world size that no file holds a
    ``UserWarning`` (and :attr:`Job.missing_ranks`), as is each file left
    out of the job, naming it and why."""
    with callback(progress) as cb:
        job = Job(_lumos.load_job(_paths(paths), cb))
    _warn_missing(job)
    return job


def _warn_missing(job: Job) -> None:
    """Warns when ranks below the job's world size have no file, and for
    each file left out of the job (another run's rank, one without tasks,
    a clock hours away), why: its rank is missing too, but it has a file."""
    missing = job.missing_ranks
    if not missing:
        return
    left_out = job.report.get("left_out", [])
    for entry in left_out:
        warnings.warn(f"{entry['detail']} (Job.missing_ranks)", stacklevel=3)
    left = {entry["rank"] for entry in left_out}
    no_file = [r for r in missing if r not in left]
    if no_file:
        warnings.warn(
            f"{len(no_file)} of {job.world_size} ranks have no file: "
            f"{', '.join(map(str, no_file))} (Job.missing_ranks)",
            stacklevel=3,
        )


def replay(
    paths: Paths,
    *,
    job: Optional[bool] = None,
    deps: Sequence[str] = (),
    scale_kernels: KernelScales = None,
    scale_only: str = "all",
    scale_pattern: Optional[str] = None,
    scale_rank: RankScales = None,
    scale_rank_cpu: bool = False,
    representatives: bool = False,
    progress: ProgressArg = None,
) -> Replay:
    """``lumos replay``: replays each trace, or the ranks of one job
    together, and compares with the measurement. One trace file is read
    straight into the graph build, as ``lumos replay FILE`` does: its
    events are never all in memory (:meth:`Trace.replay` of a trace read
    first holds it whole); of several files, each trace is built into its
    rank and dropped as it is read. ``.lgraph`` files (``lumos ingest``)
    are replayed as the ranks of their job.

    - ``job``: ``None`` (default) replays the files as one job when there
      are several, most record one world size above 1 and they share at
      least one collective (``lumos replay``; otherwise they are replayed
      one by one, with a warning when they looked like a job);
      ``True`` always (``--job``); ``False`` never (``--per-trace``).
    - ``deps``: dependency kinds to drop: ``no-inter-stream``, ``no-sync``,
      ``no-inter-thread`` (``--deps``).
    - ``scale_kernels``: ``{pattern: factor}`` multiplies the durations of
      the GPU tasks a pattern picks (``class:gemm``, ``class:attention``,
      ``class:memory``, ``class:comm``, ``class:compute`` or a
      case-sensitive substring of kernel names), as ``--scale-kernels
      PATTERN=FACTOR``; a pattern that picks no GPU task raises
      :class:`ConfigError`; a bare factor
      multiplies every GPU task's, or ``scale_only`` ``compute`` or
      ``comm`` tasks', or those whose name contains ``scale_pattern``
      (the CLI's deprecated bare ``--scale-kernels FACTOR``), the last
      three checked as a pattern is, except with ``representatives``
      (``scale_only`` or ``scale_pattern`` without a bare factor raises
      :class:`ConfigError`, as the CLI refuses them).
    - ``scale_rank``: ``{rank: factor}`` slows a job's rank's GPU compute
      (and CPU tasks with ``scale_rank_cpu``).
    - ``representatives``: replay a big job from one rank per group of
      ranks that run the same communication program (``lumos replay
      --representatives``): ``paths`` may be traces or ``.lgraph`` files
      (:mod:`lumos.distributed`), of which only the summaries are read
      before one graph per group is loaded; collectives inside a group
      wait for peers modelled from the group's measurement. Memory follows
      the number of groups, not of ranks. Not with ``scale_rank`` or
      ``job=False``; ``Replay.graphs_loaded`` says how many graphs were
      loaded.
    - ``progress``: ``None`` for a tqdm bar when tqdm is installed,
      ``False`` for none, or ``callback(phase, done, total)``.
    """
    opts = _options(deps, scale_kernels, scale_only, scale_pattern, scale_rank, scale_rank_cpu)
    job = _opt_bool(job, "job")
    representatives = _bool(representatives, "representatives")
    files = _paths(paths)
    if representatives:
        if job is False:
            raise ConfigError("representatives replays the ranks of one job: not with job=False")
        with callback(progress) as cb:
            return Replay(_lumos.replay_representatives(files, opts, cb))
    with callback(progress) as cb:
        found = _lumos.expand(files, True)
        if len(found) == 1 and not job and not _lumos.is_lgraph(found[0]):
            # One file is never a job: read straight into the graph build,
            # as `lumos replay FILE` does (the trace never all in memory).
            return Replay(_lumos.replay_file(found[0], opts, cb))
        # Each trace is built into its rank as it is read and dropped, as
        # `lumos replay` does: no trace is held beside the ranks; a job is
        # given up to its joint replay.
        replayed, note = _lumos.replay_files(found, opts, job, cb)
    _warn_not_a_job(note)
    return Replay(replayed)


def _warn_not_a_job(note: Optional[str]) -> None:
    """Warns, as ``lumos replay`` notes it, when files that looked like a
    job (one world size above 1) share no collective."""
    if note is not None:
        warnings.warn(f"{note} (job=True replays them as one job)", stacklevel=3)


def inspect(paths: Paths, *, job: Optional[bool] = None, progress: ProgressArg = None) -> Inspection:
    """``lumos inspect``: what each file holds (events, tasks, edges found
    and inferred, steps, collectives, structure, warnings) and, for the ranks
    of one job, their identities, matching and clocks. ``job`` as in
    :func:`replay`. One trace file is read straight into the graph build,
    as ``lumos inspect FILE`` does."""
    job = _opt_bool(job, "job")
    with callback(progress) as cb:
        found = _lumos.expand(_paths(paths), True)
        if len(found) == 1 and not job and not _lumos.is_lgraph(found[0]):
            return Inspection(json.loads(_lumos.inspect_file(found[0], cb)))
        # Each trace is built into its rank as it is read and dropped, and
        # reported from it, as `lumos inspect` does.
        report, note = _lumos.inspect_files(found, job, cb)
    _warn_not_a_job(note)
    return Inspection(json.loads(report))


def predict(
    paths: Paths,
    *,
    dp: Optional[int] = None,
    pp: Optional[int] = None,
    microbatches: Optional[int] = None,
    virtual_stages: Optional[int] = None,
    layers: Optional[int] = None,
    hidden: Optional[int] = None,
    ffn: Optional[int] = None,
    micro_batch: Optional[int] = None,
    tp: Optional[int] = None,
    scale_kernels: Union[Mapping[str, float], Sequence[str], str, None] = None,
    network: Optional[PathLike] = None,
    heads: Optional[int] = None,
    durations_from: Optional[PathLike] = None,
    progress: ProgressArg = None,
) -> Prediction:
    """``lumos predict``: another configuration predicted from one rank's
    trace, or one rank per pipeline stage, by editing their graphs.
    ``paths`` may be traces or ``.lgraph`` files (``lumos ingest``), as
    for the CLI; each is read straight into its graph's build.

    ``scale_kernels`` maps a pattern (``class:gemm``, ``class:attention``,
    ``class:memory``, ``class:comm``, ``class:compute`` or a case-sensitive
    substring of kernel names) to a duration factor, e.g. ``{"class:gemm":
    0.5}`` (or ``"pattern=factor"``, one or a list); a pattern that picks no
    GPU task of the traces raises :class:`ConfigError`;
    ``network`` is a GPU preset (``a100``, ``h100``, ``h200``, ``b200``) or a
    JSON file (``str`` or ``os.PathLike``; a path with nothing there raises
    :class:`InputError`, as the CLI says). ``virtual_stages`` (as ``--virtual-stages``) is the model
    chunks per stage of Megatron's interleaved 1F1B schedule (1: plain
    1F1B); above 1 it needs more than 2 stages, micro-batches a multiple of
    the stages and layers a multiple of stages x virtual stages, else
    :class:`ConfigError`. ``micro_batch`` (as ``--micro-batch``) is the
    sequences per micro-batch at the same sequence length; a trace that
    does not show its own (no attention kernel whose operator records the
    query's shape) raises :class:`ConfigError`. ``heads`` (as ``--heads``) is
    the attention heads of the whole model: without it a ``hidden`` edit
    keeps the traced heads (the head size changes), and a hidden size that
    is not a multiple of them raises :class:`ConfigError`. ``durations_from`` (as ``--durations-from``) is another
    recording of the same program whose measured durations the one trace's
    graph takes before the edit (see :func:`durations_from`); the report
    then also holds the transfer under ``durations_from`` (and
    :attr:`Prediction.transfer`). A rank that holds no task is left out
    and the others predicted, with a ``UserWarning`` naming it (and
    ``report["left_out"]``), as the CLI names it; only ranks without tasks
    raise :class:`InputError`. What reading and building each file warned
    (as :func:`replay` lists it) is a ``UserWarning`` per warning, naming
    the file (and ``report["input_warnings"]``). Ctrl-C stops it between
    its steps or within a replay (phases ``predicting``, then
    ``replaying``). See docs/PREDICTION.md."""
    bare, kernels = _kernel_scales(scale_kernels)
    if bare is not None:
        raise ConfigError(
            f"scale_kernels: predict takes {{pattern: factor}} (or \"pattern=factor\"), "
            f"not a bare factor ({bare!r})"
        )
    net = _path(network, "network") if network is not None else None
    opts = _lumos.PredictOptions(
        dp, pp, microbatches, layers, hidden, ffn, tp, kernels, net,
        virtual_stages=virtual_stages, micro_batch=micro_batch, heads=heads,
    )
    b = _path(durations_from, "durations_from") if durations_from is not None else None
    with callback(progress) as cb:
        p = Prediction(json.loads(_lumos.predict_files(_paths(paths), opts, b, cb)))
    # A rank without tasks was left out and the others predicted, as the
    # CLI names it (error line, exit 1) and `load_job` warns of it.
    for entry in p.report.get("left_out", []):
        warnings.warn(f"{entry['detail']} (Prediction.report['left_out'])", stacklevel=2)
    # What reading and building each file warned (skipped events, edges
    # left out, repaired clocks), as the CLI says it once the prediction
    # is made: a prediction from a damaged trace is not made silently.
    for entry in p.report.get("input_warnings", []):
        for text in entry["warnings"]:
            warnings.warn(f"{entry['path']}: {text}", stacklevel=2)
    return p


def diff(
    a: PathLike,
    b: PathLike,
    *,
    steps: Optional[str] = None,
    min_change_us: float = 10.0,
    min_change_pct: float = 5.0,
    progress: ProgressArg = None,
) -> Diff:
    """``lumos diff A B``: run B compared with run A (two traces: captures,
    or timelines ``lumos replay --out`` / ``predict --out`` wrote), per
    step, breakdown metric, operator and kernel. ``steps`` selects the
    steps of each run as ``--steps`` does (``"3"``, ``"2..4"``,
    ``"ProfilerStep#5"``, comma-separated), matched by position; a change
    under ``min_change_us`` per step or ``min_change_pct`` of A's time is
    no change. Options are checked, and ``a`` and ``b`` must each be one
    file (a directory raises :class:`ConfigError`), before anything is
    read."""
    # Options first, then the two files, before anything is read.
    steps = _opt_str(steps, "steps")
    min_change_us = _real(min_change_us, "min_change_us")
    min_change_pct = _real(min_change_pct, "min_change_pct")
    _lumos.check_diff_options(steps, min_change_us, min_change_pct)
    files = [_one_file(a, "a", "lumos diff"), _one_file(b, "b", "lumos diff")]
    with callback(progress) as cb:
        ta, tb = _lumos.read_pair(files[0], files[1], cb)
    return Diff(json.loads(_lumos.diff_json(ta, tb, steps, min_change_us, min_change_pct)))


def durations_from(a: PathLike, b: PathLike, *, progress: ProgressArg = None) -> Transfer:
    """``lumos replay A --durations-from B``: A's graph re-timed with the
    durations measured in B, another recording of the same program (other
    hardware, another software version), and replayed. Operators are
    matched per thread by name, shapes and order (a sequence alignment),
    their GPU work in launch order; unmatched tasks keep A's durations.
    Raises :class:`ConfigError` with the matched share when B shares too
    little with A. ``a`` and ``b`` are each one file, a trace or an
    ``.lgraph`` file (``lumos ingest``, :func:`lumos.distributed.ingest_rank`),
    as the CLI takes them; a directory raises :class:`ConfigError` before
    anything is read."""
    files = [_one_file(a, "a", None), _one_file(b, "b", None)]
    with callback(progress) as cb:
        return Transfer(json.loads(_lumos.durations_from_json(files[0], files[1], cb)))


def synth(
    model: Union[str, "os.PathLike[str]", Mapping[str, object]],
    out: PathLike,
    *,
    tp: int = 1,
    pp: int = 1,
    dp: int = 1,
    microbatches: Optional[int] = None,
    gpu: str = "h100",
    ranks: str = "one-per-stage",
    steps: int = 2,
    seed: int = 0,
    cluster: Optional[str] = None,
    global_batch: Optional[int] = None,
    micro_batch: Optional[int] = None,
    virtual_stages: Optional[int] = None,
    sequence_parallel: bool = True,
    distributed_optimizer: bool = False,
    recompute: Optional[str] = None,
    precision: Optional[str] = None,
    unfused_attention: bool = False,
    cuda_sync_events: bool = True,
    event_records: bool = True,
    stream_waits: bool = True,
    progress: ProgressArg = None,
) -> List[str]:
    """``lumos synth``: writes synthesized Kineto traces (``rank<N>.json.gz``)
    of a Megatron-style GPT training job into ``out``; returns the files.
    ``model`` is a preset (``gpt-tiny``, ``gpt-small``, ``gpt3-15b``,
    ``gpt3-44b``, ``gpt3-117b``, ``gpt3-175b``), a model file as ``lumos
    synth --model`` takes (JSON with ``layers``, ``hidden``, ``heads`` and
    optionally ``name``, ``ffn_hidden``, ``seq_len``, ``micro_batch``,
    ``vocab``, ``kv_heads``, ``swiglu``), or the same object as a dict;
    a bad file, or a key it cannot take, raises :class:`InputError`, a bad dict
    :class:`ConfigError`. ``ranks`` is
    ``one-per-stage`` or ``all``; ``microbatches`` defaults to ``2 * pp``
    (or follows ``global_batch``).

    The recipe, as the CLI's flags: ``cluster`` a preset (``selene``,
    ``jean-zay``, ``dgx-h100``, ``dgx-h200``, ``dgx-b200``; replaces
    ``gpu``), ``global_batch`` and ``micro_batch`` in sequences,
    ``virtual_stages`` (interleaved 1F1B), ``sequence_parallel``,
    ``distributed_optimizer``, ``recompute`` (``none``, ``selective``,
    ``full``), ``precision`` (``bf16``, ``fp16``, ``fp8``),
    ``unfused_attention``, and what the profiler writes:
    ``cuda_sync_events``, ``event_records``, ``stream_waits`` (``False``
    is ``--no-stream-waits``: no ``cudaStreamWaitEvent``). A bad value raises
    :class:`ConfigError`. ``progress`` as :func:`replay`'s, in ranks
    written (phase ``writing``); Ctrl-C stops before the next pipeline
    column, leaving the files already written."""
    recipe = _lumos.SynthRecipe(
        _opt_str(cluster, "cluster"), global_batch, micro_batch, virtual_stages,
        _bool(sequence_parallel, "sequence_parallel"),
        _bool(distributed_optimizer, "distributed_optimizer"), _opt_str(recompute, "recompute"),
        _opt_str(precision, "precision"), _bool(unfused_attention, "unfused_attention"),
        _bool(cuda_sync_events, "cuda_sync_events"), _bool(event_records, "event_records"),
        _bool(stream_waits, "stream_waits"),
    )
    gpu, ranks = _str(gpu, "gpu"), _str(ranks, "ranks")
    if isinstance(model, Mapping):
        name, text = "model", _model_json(model)
    else:
        name, text = _path(model, "model"), None
    with callback(progress) as cb:
        return list(
            _lumos.synth(
                name, _path(out, "out"), tp, pp, dp, microbatches, gpu, ranks, steps, seed,
                recipe, text, cb,
            )
        )

def _model_json(model: Mapping[str, object]) -> str:
    """A model dict as JSON text; a value JSON cannot hold (NaN, an
    infinity, an object) raises :class:`ConfigError` naming its key, as
    the dict is an option (a file's JSON would be invalid). numpy's
    scalars (a value read from a DataFrame: ``np.int64``, ``np.bool_``)
    are taken as the Python numbers they hold."""
    values = {}
    for k, v in model.items():
        if type(v).__module__ == "numpy" and getattr(v, "shape", None) == ():
            v = v.item()
        try:
            json.dumps(v, allow_nan=False)
        except (TypeError, ValueError):
            raise ConfigError(f"model: {k} is {v!r}, not a JSON number, string or bool") from None
        values[k] = v
    return json.dumps(values, allow_nan=False)


# lumos.distributed is a submodule of its own; importing it here makes
# `lumos.distributed.ingest_rank` work after a plain `import lumos`.
from . import distributed  # noqa: E402
