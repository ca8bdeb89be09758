"""Tables of lumos results as pyarrow tables and pandas DataFrames.

The extension hands each table over as Arrow column buffers: numbers and
booleans in Arrow's own layout, wrapped here without a copy or a Python
object per value (:func:`arrow_table`); strings as lists. pandas frames are
made from those tables (:func:`frame`). Small tables of predictions and
inspections are flattened here from the report's dict.

Units are in the column names: ``_us`` microseconds, ``_ms`` milliseconds,
``_pct`` percent, ``bytes`` bytes; ``busy`` is a fraction (0 to 1).
``measured_*`` columns are the trace's times, ``replayed_*`` the
simulator's replay of the trace's graph, ``predicted_*`` the replay of an
edited graph. :data:`COLUMNS` documents every column of every replay table.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Sequence, Tuple

import pandas as pd
import pyarrow as pa

__all__ = ["ANALYSIS_COLUMNS", "COLUMNS", "arrow_table", "frame", "records_table"]

_TYPES = {"f64": pa.float64(), "i64": pa.int64(), "bool": pa.bool_()}

RawTable = Tuple[int, List[Tuple[str, str, Any, Any]]]


def arrow_table(raw: RawTable) -> pa.Table:
    """A pyarrow table from the extension's ``(rows, columns)``."""
    rows, cols = raw
    arrays = []
    names = []
    for name, tag, data, valid in cols:
        if tag == "str":
            arrays.append(pa.array(data, type=pa.string()))
        else:
            validity = None if valid is None else pa.py_buffer(valid)
            arrays.append(
                pa.Array.from_buffers(_TYPES[tag], rows, [validity, pa.py_buffer(data)])
            )
        names.append(name)
    return pa.Table.from_arrays(arrays, names=names)


def frame(table: pa.Table) -> pd.DataFrame:
    """A pandas frame of a pyarrow table (nullable integers with nulls
    become floats with NaN, as pandas does)."""
    return table.to_pandas()


#: Columns of the report's tables that are whole numbers or flags; the
#: others are floats when their unit is in the name (``_us``, ``_ms``,
#: ``_pct``, ``_gbps``, ``busy``, ``bus_factor``), else strings.
_INT_COLUMNS = {
    "rank", "index", "stage", "position", "count", "gpu_tasks", "hops", "sized", "bytes",
    "samples", "steps", "events", "kept", "flows", "skipped", "threads", "streams", "warnings",
    "json_bytes", "world_size", "group_size", "dropped_edges", "representative", "size",
    "a_count", "b_count", "tasks",
}
_BOOL_COLUMNS = {"comm", "gzipped", "calibrated", "used", "recorded", "inclusive"}
_FLOAT_SUFFIXES = ("_us", "_ms", "_pct", "_gbps")


def column_type(name: str) -> pa.DataType:
    """The Arrow type of a column of the report's tables, by its name (as
    the docs give them): what an empty table's column takes, where its
    values cannot say."""
    if name in _INT_COLUMNS:
        return pa.int64()
    if name in _BOOL_COLUMNS:
        return pa.bool_()
    if name.endswith(_FLOAT_SUFFIXES) or name in ("busy", "bus_factor", "ms"):
        return pa.float64()
    return pa.string()


def records_table(rows: Iterable[Mapping[str, Any]], columns: Sequence[str]) -> pa.Table:
    """A pyarrow table of dict rows, with exactly ``columns`` (in that order;
    an empty table keeps them, each with its documented type, not all
    ``object`` in pandas). A column whose every value is missing (``None``:
    a percentage of a span of no length, an error over no sample) takes its
    documented type too, all null (``NaN`` in pandas for a float), where
    Arrow alone would give a column of nulls, ``object`` in pandas."""
    rows = list(rows)
    data: Dict[str, List[Any]] = {c: [r.get(c) for r in rows] for c in columns}
    return pa.table({
        c: pa.array(v, column_type(c)) if all(x is None for x in v) else pa.array(v)
        for c, v in data.items()
    })


_SIDE = "``measured`` or ``replayed``"
_BREAKDOWN = {
    "exposed_compute_us": "GPU compute not overlapped by communication, us",
    "overlapped_us": "compute and communication at once, us",
    "exposed_comm_us": "communication not overlapped by compute, us",
    "idle_us": "no GPU task running, us",
    "total_us": "the window (the four parts add up to it), us",
}

#: Every replay table and its columns, with units.
COLUMNS: Dict[str, Dict[str, str]] = {
    "traces": {
        "rank": "the trace's rank",
        "path": "the file, as given",
        "tasks": "tasks in its graph",
        "steps": "ProfilerStep#N annotations",
        "flagged": "signs of a damaged trace: events dropped by the profiler, ids repeated, clocks skewed (reported apart in the summary)",
        "warnings": "how many warnings (see the warnings table)",
    },
    "steps": {
        "rank": "the trace's rank",
        "step": "the annotation's name (ProfilerStep#N)",
        "measured_us": "measured step length, us",
        "replayed_us": "replayed step length, us",
        "error_pct": "(replayed - measured) / measured, % (null in Arrow, NaN in pandas, when the measured length is zero)",
    },
    "window": {
        "rank": "the trace's rank",
        "measured_us": "the whole window, measured, us: from the earlier of the first task's start and the first step's start to the later of the last task's end and the last step's end (every step lies inside it)",
        "replayed_us": "the same, replayed, us",
        "error_pct": "(replayed - measured) / measured, % (null in Arrow, NaN in pandas, when the measured length is zero)",
    },
    "breakdown": {"rank": "the trace's rank", "side": _SIDE, **_BREAKDOWN},
    "step_breakdown": {
        "rank": "the trace's rank",
        "step": "the step (``window`` when the trace has none)",
        "side": _SIDE + "; each over that side's own step span",
        **_BREAKDOWN,
    },
    "kernels": {
        "rank": "the trace's rank",
        "name": "GPU kernel, memcpy or memset name",
        "operator": "innermost operator around the launching call (None when unknown)",
        "kind": "``kernel``, ``memcpy`` or ``memset``",
        "comm": "True for communication kernels",
        "count": "how many",
        "measured_us": "their measured durations, summed, us",
        "replayed_us": "their replayed durations, summed, us (scaled by what-ifs)",
    },
    "critical_path": {
        "rank": "the trace's rank",
        "path_hops": "hops on the whole path",
        "bound": "what bound the hops: a dependency kind, processor, runtime_sync, release or rendezvous",
        "hops": "hops bound by it",
        "wait_us": "time waited on them, us",
        "busy_us": "time their tasks ran, us",
    },
    "critical_path_tasks": {
        "rank": "the trace's rank",
        "position": "0 for the longest",
        "name": "task name",
        "us": "its time on the path, us",
    },
    "timeline": {
        "rank": "the trace's rank",
        "side": _SIDE,
        "bin": "bin index from the window's start",
        "start_us": "bin start from the window's start, us",
        "bin_us": "bin width, us (1 ms, wider for windows over 65 s)",
        "busy": "fraction of the bin with at least one GPU stream busy",
    },
    "warnings": {
        "rank": "the trace's rank (None for the job's own)",
        "scope": "``trace`` or ``job``",
        "message": "the warning, as the CLI prints it",
    },
    "job_steps": {
        "index": "the step's position",
        "step": "its name on the slowest measured rank",
        "measured_us": "the slowest rank's measured step, us",
        "replayed_us": "the slowest rank's replayed step, us",
        "error_pct": "(replayed - measured) / measured, % (null in Arrow, NaN in pandas, when the measured length is zero)",
        "slowest_rank_measured": "which rank was slowest, measured",
        "slowest_rank_replayed": "which rank was slowest, replayed",
    },
    "collectives": {
        "index": "the matched collective's position",
        "label": "its label (process group and sequence)",
        "rule": "how it was matched across ranks",
        "name": "the collective's name",
        "bytes": "message size, bytes (None when not recorded)",
        "ranks": "how many participants",
        "measured_last_rank": "the rank that arrived last (the others waited for it), measured",
        "replayed_last_rank": "the same, replayed",
        "measured_skew_us": "last arrival minus first, measured, us",
        "replayed_skew_us": "the same, replayed, us",
        "measured_end_spread_us": "latest end minus earliest (aligned clocks), us",
        "replayed_end_spread_us": "the same, replayed, us",
    },
    "collective_ranks": {
        "index": "the matched collective's position (as in collectives)",
        "label": "its label",
        "name": "its name",
        "rank": "a participant",
        "measured_waited_for": "the rank it waited for (the last to arrive), measured",
        "measured_wait_us": "how long it waited, measured, us",
        "measured_transfer_us": "its transfer, from the last arrival to its end, us",
        "measured_end_us": "its end on the job timeline (aligned clocks, 0 = earliest window start), us",
        "replayed_waited_for": "the same four, replayed",
        "replayed_wait_us": "",
        "replayed_transfer_us": "",
        "replayed_end_us": "",
    },
    "waiting": {
        "rank": "the rank",
        "measured_wait_us": "time its collectives waited for peers, measured, us",
        "measured_caused_us": "time others waited in collectives it arrived at last, us",
        "measured_last_arrivals": "collectives it arrived at last",
        "replayed_wait_us": "the same three, replayed",
        "replayed_caused_us": "",
        "replayed_last_arrivals": "",
    },
    "job_critical_path": {
        "from_rank": "the rank whose end the path starts from (last to finish)",
        "rank_changes": "how often it moves between ranks",
        "rank": "a rank on the path",
        "us": "its time on the path, us",
    },
    "clock": {
        "rank": "the rank",
        "offset_us": "how far its clock is ahead of the reference rank's, us",
        "reference": "True for the reference rank",
        "aligned": "False when it shares no matched collective with the reference",
    },
    "clock_hosts": {
        "host": "the host, as the traces name it (no rows when none does)",
        "rank": "one of its ranks",
        "offset_us": "the host's clock offset to the reference rank's, shared by its ranks, us",
        "collective_ends": "collective ends of its ranks the offset is the median of (0 for the reference's host)",
        "residual_us": "the rank's median aligned collective end minus the other participants', us",
    },
}


_RANK_SIDE = {"rank": "the trace's rank", "side": _SIDE}

#: The frames of the CLI's per-step analyses (``Replay.step_analysis``,
#: ``kernel_summary``, ``operator_summary``, ``collective_summary``,
#: ``step_critical_paths``): the fields of ``traces[].analysis`` in
#: ``lumos replay --json``, one row per item, with the rank (and side).
ANALYSIS_COLUMNS: Dict[str, Dict[str, str]] = {
    "step_analysis": {
        **_RANK_SIDE,
        "step": "the step's name (``window`` without steps; ``selection`` for the row over the steps analysed, the report's ``total``, as the CLI's JSON names it)",
        "index": "its position (None for ``window`` and ``selection``)",
        "span_us": "its span, us",
        "gpu_tasks": "GPU tasks in it",
        "gpu_task_us": "their durations, summed (overlapping tasks in full), us",
        "compute_us": "time any compute runs (exposed_compute_us + overlapped_us), us",
        "comm_us": "time some communication kernel ran, us",
        "exposed_compute_us": "compute not overlapped by communication, us",
        "exposed_compute_pct": "the same, % of the span (None in the report, NaN here, when the span has no length)",
        "overlapped_us": "compute and communication at once, us",
        "overlapped_pct": "the same, % of the span (NaN when it has no length)",
        "exposed_comm_us": "communication not overlapped by compute, us",
        "exposed_comm_pct": "the same, % of the span (NaN when it has no length)",
        "idle_us": "no GPU task running, us",
        "idle_pct": "the same, % of the span (NaN when it has no length)",
        "idle_host_wait_us": "idle because the work ending the gap was launched after it began (the GPU waited for the host), us",
        "idle_kernel_gap_us": "idle in short gaps before work launched earlier (back-to-back kernels), us",
        "idle_other_us": "the rest of the idle time, us",
        "overlap_pct": "communication hidden under compute: overlapped_us / comm_us, % (None without communication)",
        "hta_overlap_pct": "the same ratio with HTA's kernel classes (its comp_comm_overlap_pctg), % (None without communication)",
    },
    "kernel_summary": {
        **_RANK_SIDE,
        "name": "GPU kernel, memcpy or memset name",
        "kind": "``kernel``, ``memcpy`` or ``memset``",
        "comm": "True for communication kernels",
        "count": "how many",
        "total_us": "their durations, summed, us",
        "mean_us": "mean duration, us",
        "min_us": "shortest, us",
        "max_us": "longest, us",
        "share_pct": "total_us, % of every GPU task's summed durations in the selection (NaN when those sum to zero)",
    },
    "operator_summary": {
        **_RANK_SIDE,
        "operator": "innermost operator around the launching call",
        "gpu_tasks": "GPU tasks it launched",
        "total_us": "their durations, summed, us",
        "mean_us": "mean duration, us",
        "share_pct": "total_us, % of every GPU task's summed durations in the selection (NaN when those sum to zero)",
        "top_kernel": "its kernel with the most time",
        "top_kernel_us": "that kernel's time, us",
    },
    "collective_summary": {
        **_RANK_SIDE,
        "collective": "collective kind (``all_reduce``, ``all_to_all``, ...)",
        "name": "kernel name",
        "process_group": "process group (None when not recorded)",
        "group_size": "ranks in it (None when not recorded)",
        "algorithm": "NCCL algorithm, when recorded",
        "protocol": "NCCL protocol, when recorded",
        "count": "how many",
        "sized": "how many with a recorded size",
        "total_us": "their durations, summed, us",
        "mean_us": "mean duration, us",
        "bytes": "their summed sizes, bytes (None when none is recorded)",
        "algbw_gbps": "algorithm bandwidth, GB/s",
        "bus_factor": "nccl-tests' bus factor for the kind and group size (2(n-1)/n for all-reduce; NaN for a group of one)",
        "busbw_gbps": "bus bandwidth, GB/s",
    },
    "step_critical_paths": {
        "rank": "the trace's rank",
        "step": "the step's name",
        "index": "its position",
        "length_us": "the path's length, us",
        "hops": "tasks on it",
        "verdict": "what bounds the step (``cpu_bound``, ``gpu_bound``, ``communication_bound``; None when the path has no length)",
        "cpu_us": "CPU time on the path, us",
        "cpu_pct": "the same, % of its length (NaN when it has no length)",
        "gpu_compute_us": "GPU compute on the path, us",
        "gpu_compute_pct": "the same, % (NaN when the path has no length)",
        "communication_us": "communication on the path, us",
        "communication_pct": "the same, % (NaN when the path has no length)",
    },
}
