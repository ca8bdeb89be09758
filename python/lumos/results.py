"""The results of lumos: replays, inspections and predictions, each with
its report (the CLI's ``--json``, as a dict) and its tables as pandas
DataFrames (and pyarrow tables).
"""

from __future__ import annotations

import json
import numbers
from functools import cached_property
from typing import Any, Dict, List, Mapping, Optional, Tuple

import pandas as pd
import pyarrow as pa

from . import _lumos
from .errors import ConfigError
from .frames import ANALYSIS_COLUMNS, COLUMNS, arrow_table, frame, records_table

__all__ = ["Diff", "Replay", "Inspection", "Prediction"]


class Replay:
    """A replay: one per trace, or the joint replay of a job's ranks.

    ``report`` is what ``lumos replay --json`` prints; every other property
    is a pandas DataFrame (a new one at each access) whose columns
    :data:`lumos.frames.COLUMNS` documents. ``arrow(name)`` gives the same
    table as a pyarrow table.
    """

    def __init__(self, raw: _lumos.ReplayResult) -> None:
        self._raw = raw
        self._tables: Dict[str, pa.Table] = {}

    def __repr__(self) -> str:
        kind = "job" if self.is_job else "traces"
        return f"<lumos.Replay of {kind}: {len(self.report['traces'])} rank(s)>"

    @property
    def is_job(self) -> bool:
        """True for the joint replay of a job's ranks."""
        return self._raw.is_job

    @cached_property
    def report(self) -> Dict[str, Any]:
        """``lumos replay --json``, parsed: ``traces``, ``summary`` and, for a
        job, ``job`` (and ``representatives`` for a replay from
        representatives)."""
        return json.loads(self._raw.json())

    @property
    def representatives(self) -> Optional[Dict[str, Any]]:
        """For a replay from representatives, what was replayed for whom
        (``ranks``, ``replayed_ranks``, ``modelled_collectives``,
        ``groups``); else ``None``. ``traces`` and the per-rank tables then
        hold the representatives only."""
        return self.report.get("representatives")

    @property
    def graphs_loaded(self) -> Optional[int]:
        """For a replay from representatives, how many rank graphs were
        built or decoded to make it: one per group when the inputs are
        ``.lgraph`` files (the others gave only their summaries and
        programs), every rank for traces (each built, then dropped unless
        it represents its group); else ``None``."""
        return self._raw.graphs_loaded

    @property
    def program_groups(self) -> pd.DataFrame:
        """For a replay from representatives, one row per group of ranks
        running the same program: ``representative`` (the rank replayed),
        ``ranks`` (its members, as ranges), ``size``; empty otherwise."""
        groups = (self.representatives or {}).get("groups", [])
        rows = [{k: g[k] for k in ("representative", "ranks", "size")} for g in groups]
        return frame(records_table(rows, ["representative", "ranks", "size"]))

    @property
    def summary(self) -> Dict[str, Any]:
        """Errors over all traces: ``mean_abs_error_pct``,
        ``max_abs_error_pct``, ``steps``, ``flagged_mean_abs_error_pct``."""
        return self.report["summary"]

    @staticmethod
    def table_names() -> List[str]:
        """The names of every table."""
        return list(_lumos.ReplayResult.table_names())

    def arrow(self, name: str) -> pa.Table:
        """The table ``name`` as a pyarrow table (made once)."""
        if name not in self._tables:
            self._tables[name] = arrow_table(self._raw.table(name))
        return self._tables[name]

    def frame(self, name: str) -> pd.DataFrame:
        """The table ``name`` as a pandas DataFrame."""
        return frame(self.arrow(name))

    def tables(self) -> Dict[str, pa.Table]:
        """Every table, as pyarrow tables."""
        return {n: self.arrow(n) for n in self.table_names()}

    # One property per table; the columns are in lumos.frames.COLUMNS.
    @property
    def traces(self) -> pd.DataFrame:
        """Per trace: rank, path, tasks, steps, flagged, warnings."""
        return self.frame("traces")

    @property
    def steps(self) -> pd.DataFrame:
        """Per trace and step: measured and replayed length, error."""
        return self.frame("steps")

    @property
    def window(self) -> pd.DataFrame:
        """Per trace: the whole window, measured and replayed."""
        return self.frame("window")

    @property
    def breakdown(self) -> pd.DataFrame:
        """Per trace and side: exposed compute, overlap, exposed
        communication and idle time over the window."""
        return self.frame("breakdown")

    @property
    def step_breakdown(self) -> pd.DataFrame:
        """The breakdown of every step, per trace and side."""
        return self.frame("step_breakdown")

    @property
    def kernels(self) -> pd.DataFrame:
        """GPU time per rank, kernel name and launching operator, measured
        and replayed, over the trace's whole window (every GPU task).
        :attr:`kernel_summary`, the CLI's kernel table, covers the steps
        analysed instead: the two agree only where the steps hold every
        GPU task."""
        return self.frame("kernels")

    @property
    def critical_path(self) -> pd.DataFrame:
        """Per trace, the replay's critical path by class of constraint."""
        return self.frame("critical_path")

    @property
    def critical_path_tasks(self) -> pd.DataFrame:
        """Per trace, the longest tasks on the critical path."""
        return self.frame("critical_path_tasks")

    @property
    def timeline(self) -> pd.DataFrame:
        """Per trace and side, the GPU-busy fraction of each bin."""
        return self.frame("timeline")

    @property
    def warnings(self) -> pd.DataFrame:
        """Every warning: the reader's, the builder's, the replay's, the
        job's."""
        return self.frame("warnings")

    @property
    def job_steps(self) -> pd.DataFrame:
        """A job's steps: the slowest rank's, measured and replayed."""
        return self.frame("job_steps")

    @property
    def collectives(self) -> pd.DataFrame:
        """Per matched collective: who arrived last, skew, end spread."""
        return self.frame("collectives")

    @property
    def collective_ranks(self) -> pd.DataFrame:
        """Per matched collective and participant: whom it waited for, how
        long, its transfer and its end."""
        return self.frame("collective_ranks")

    @property
    def waiting(self) -> pd.DataFrame:
        """Per rank: time spent waiting for peers, time it kept others
        waiting, how often it arrived last."""
        return self.frame("waiting")

    @property
    def job_critical_path(self) -> pd.DataFrame:
        """The job's critical path: time per rank on it."""
        return self.frame("job_critical_path")

    @property
    def clock(self) -> pd.DataFrame:
        """Per rank: its clock offset to the reference rank."""
        return self.frame("clock")

    @property
    def clock_hosts(self) -> pd.DataFrame:
        """Per rank of each host the traces name: the host's shared clock
        offset and the rank's residual from it (empty when no trace names
        its host)."""
        return self.frame("clock_hosts")

    # The CLI's per-step analyses (``traces[].analysis`` of ``lumos replay
    # --json``), flattened from the report: the numbers its tables print.
    @property
    def step_analysis(self) -> pd.DataFrame:
        """The CLI's per-step analysis, per rank, side and step (``window``
        when the trace has no steps), and a row over the steps analysed
        whose ``step`` is ``selection`` (the report's ``total``, named as
        the CLI's JSON names it):
        span, GPU tasks and time, compute, communication, exposed and
        overlapped parts, idle time split into host waits, kernel gaps and
        other (us and % of the span), as ``lumos replay`` prints it."""
        return self._analysis_rows("steps", ANALYSIS_COLUMNS["step_analysis"], total=True)

    @property
    def kernel_summary(self) -> pd.DataFrame:
        """The CLI's kernel table, per rank, side and kernel name: count,
        total, mean, min and max (us), share of GPU time (%), over the
        steps analysed (the whole window for a trace without steps; see
        :attr:`kernels` for every GPU task of the window)."""
        return self._analysis_rows("kernels", ANALYSIS_COLUMNS["kernel_summary"])

    @property
    def operator_summary(self) -> pd.DataFrame:
        """The CLI's operator table, per rank, side and launching operator:
        GPU tasks, total and mean (us), share (%), its top kernel."""
        return self._analysis_rows("operators", ANALYSIS_COLUMNS["operator_summary"])

    @property
    def collective_summary(self) -> pd.DataFrame:
        """The CLI's collective table, per rank, side and collective kind:
        count, total and mean (us), bytes, algorithm and bus bandwidth
        (GB/s) where sizes are recorded."""
        return self._analysis_rows("collectives", ANALYSIS_COLUMNS["collective_summary"])

    @property
    def step_critical_paths(self) -> pd.DataFrame:
        """The CLI's critical path of each step, per rank: length, hops,
        CPU, GPU compute and communication time on it (us and %), and its
        verdict (``cpu_bound``, ``gpu_bound``, ...)."""
        rows = [
            {"rank": t["rank"], **c}
            for t in self.report["traces"]
            for c in (t.get("analysis") or {}).get("critical_path", [])
        ]
        return frame(records_table(rows, list(ANALYSIS_COLUMNS["step_critical_paths"])))

    def _analysis_rows(self, section: str, columns: Mapping[str, str],
                       total: bool = False) -> pd.DataFrame:
        rows = []
        for t in self.report["traces"]:
            a = t.get("analysis") or {}
            for side in ("measured", "replayed"):
                part = a.get(side) or {}
                items = list(part.get(section, []))
                if total and part.get("total"):
                    items.append(part["total"])
                rows += [{"rank": t["rank"], "side": side, **x} for x in items]
        return frame(records_table(rows, list(columns)))

    def stragglers(self, side: str = "replayed") -> pd.DataFrame:
        """The waiting table, ranks that kept others waiting longest
        first."""
        _side(side)
        return (
            self.waiting.sort_values(f"{side}_caused_us", ascending=False, kind="stable")
            .reset_index(drop=True)
        )

    def top_kernels(self, n: int = 10, by: str = "name", side: str = "replayed") -> pd.DataFrame:
        """The ``n`` kernels (``by="name"``) or launching operators
        (``by="operator"``) with the most GPU time on ``side``, over all
        ranks: count, measured_us, replayed_us, and their share of the
        side's GPU time in ``pct`` (NaN when that time is zero). Names are
        compared whole, whatever they hold (pandas' own grouping stops at a
        NUL). A negative
        ``n``, or another ``by`` or ``side``, raises
        :class:`~lumos.ConfigError` (a ``ValueError``)."""
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 0:
            raise ConfigError(f"n must be a whole number >= 0, got {n!r}")
        if by not in ("name", "operator"):
            raise ConfigError(f"by must be 'name' or 'operator', got {by!r}")
        _side(side)
        k = self.kernels
        k["operator"] = k["operator"].fillna("(unknown)")
        codes, names = _first_seen_codes(k[by])
        g = k.groupby(codes, sort=True)[["count", "measured_us", "replayed_us"]].sum()
        g.index = pd.Index(names, dtype=object, name=by)
        total = g[f"{side}_us"].sum()
        # No share of no GPU time: NaN (it was 0.0), as the report's null.
        g["pct"] = g[f"{side}_us"] / total * 100 if total else float("nan")
        g = g.sort_values(f"{side}_us", ascending=False, kind="stable")
        return g.head(n).reset_index()


def _first_seen_codes(names: pd.Series) -> Tuple[List[int], List[str]]:
    """Each of ``names`` as the position of its first appearance, and the
    distinct names in that order. Not pandas' groupby on the names: it
    hashes and compares object strings as C strings, up to their first
    NUL, so two kernel names that differ only after a ``\\x00`` were one
    group, under the first's name; a Python dict compares whole strings."""
    first: Dict[str, int] = {}
    codes = [first.setdefault(n, len(first)) for n in names]
    return codes, list(first)


def _side(side: str) -> None:
    if side not in ("measured", "replayed"):
        raise ConfigError(f"side must be 'measured' or 'replayed', got {side!r}")


class Inspection:
    """What ``lumos inspect`` reports: per file, what the reader kept and
    skipped, what the builder found, what structure discovery found; for a
    job, identities, matching and clocks. ``report`` is ``lumos inspect
    --json``; the properties are DataFrames of it."""

    def __init__(self, report: Dict[str, Any]) -> None:
        self.report = report

    def __repr__(self) -> str:
        return f"<lumos.Inspection: {len(self.report['traces'])} file(s)>"

    @property
    def job(self) -> Optional[Dict[str, Any]]:
        """The job object, for the ranks of one job."""
        return self.report.get("job")

    @property
    def files(self) -> pd.DataFrame:
        """Per file: rank, world size, sizes, event counts (with
        ``absurd_durations``, kept events that end absurdly late), threads,
        streams, typical launch latency (us), ``launches_without_gpu_task``
        (launch and copy calls whose kernel or copy is missing), warnings."""
        rows = [
            {
                "path": t["path"],
                "rank": t["rank"],
                "rank_source": t["rank_source"],
                "world_size": t["world_size"],
                "json_bytes": t["json_bytes"],
                "gzipped": t["gzipped"],
                "events": t["events"]["total"],
                "kept": t["events"]["kept"],
                "flows": t["events"]["flows"],
                "skipped": t["events"]["skipped"],
                "absurd_durations": t["events"]["absurd_durations"],
                "threads": t["threads"],
                "streams": t["streams"],
                "steps": len(t["steps"]),
                "typical_launch_latency_us": t["typical_launch_latency_us"],
                "launches_without_gpu_task": t["launches_without_gpu_task"],
                "warnings": len(t["warnings"]),
            }
            for t in self.report["traces"]
        ]
        cols = ["path", "rank", "rank_source", "world_size", "json_bytes", "gzipped", "events",
                "kept", "flows", "skipped", "absurd_durations", "threads", "streams", "steps",
                "typical_launch_latency_us", "launches_without_gpu_task", "warnings"]
        return frame(records_table(rows, cols))

    @property
    def steps(self) -> pd.DataFrame:
        """Per file and step: the annotation's length and the measured step
        (to the end of its GPU work), us."""
        rows = [
            {"rank": t["rank"], "step": s["name"], "annotation_us": s["annotation_us"],
             "measured_us": s["measured_us"]}
            for t in self.report["traces"]
            for s in t["steps"]
        ]
        return frame(records_table(rows, ["rank", "step", "annotation_us", "measured_us"]))

    @property
    def edges(self) -> pd.DataFrame:
        """Per file: dependencies found (recorded) or inferred, by kind and
        rule."""
        rows = [
            {"rank": t["rank"], **i} for t in self.report["traces"] for i in t["inferred"]
        ]
        return frame(records_table(rows, ["rank", "kind", "rule", "recorded", "count"]))

    @property
    def warnings(self) -> pd.DataFrame:
        """Every warning, per file (rank None for the job's)."""
        rows = [
            {"rank": t["rank"], "message": w} for t in self.report["traces"] for w in t["warnings"]
        ]
        if self.job:
            rows += [{"rank": None, "message": w} for w in self.job["warnings"]]
        return frame(records_table(rows, ["rank", "message"]))

    @property
    def findings(self) -> pd.DataFrame:
        """What structure discovery found per file, each with its confidence
        (``high``, ``medium``, ``low``) and evidence."""
        return _findings(
            (t["rank"], t["structure"]) for t in self.report["traces"]
        )


def _findings(structures: Any) -> pd.DataFrame:
    rows = [
        {"rank": rank, **f} for rank, s in structures for f in s.get("findings", [])
    ]
    return frame(records_table(rows, ["rank", "what", "value", "confidence", "evidence"]))


class Prediction:
    """A prediction (``lumos predict``): per step the measured, replayed and
    predicted time; per stage the breakdown; where the predicted durations
    came from; the calibrated models; every assumption and the confidence of
    what discovery found. ``report`` is ``lumos predict --json``."""

    def __init__(self, report: Dict[str, Any]) -> None:
        self.report = report

    def __repr__(self) -> str:
        r = self.report
        # No change from a replayed step of no length (null in the report).
        change = "-" if r["change_pct"] is None else f"{r['change_pct']:+.2f}%"
        return (
            f"<lumos.Prediction: {r['mean_replayed_ms']:.3f} ms replayed -> "
            f"{r['mean_predicted_ms']:.3f} ms predicted ({change})>"
        )

    @property
    def verdict(self) -> str:
        """How far the prediction can be trusted: ``high``, ``medium`` or
        ``low`` (``confidence.reasons`` in the report says why)."""
        return self.report["confidence"]["verdict"]

    @property
    def degrees_guessed(self) -> bool:
        """Whether discovery guessed the traced parallel degrees (a trace
        without process groups, ``pg_config``; the report's
        ``traced.degrees_guessed``): an edit of a guessed degree is one
        confidence level lower, and each input's
        ``structure.config.degrees_guessed`` says from what."""
        return bool(self.report["traced"]["degrees_guessed"])

    @property
    def trust(self) -> Dict[str, Any]:
        """The prediction's confidence block, as ``lumos predict --json``
        gives it: the verdict and its reasons, the shares of predicted GPU
        time measured, scaled and modelled (%), the inferred share of each
        step's critical path (%), the extrapolations beyond the trace, the
        re-timed process groups whose class was only guessed, and the
        collectives launched before the capture that could not be tied to
        a re-timed group (``untied_collectives``)."""
        return self.report["confidence"]

    @property
    def model_fits(self) -> pd.DataFrame:
        """Every duration model the prediction could use: whether it was
        used, whether it was calibrated on the trace, its samples and its
        mean absolute error on them (%)."""
        cols = ["model", "used", "calibrated", "samples", "mean_abs_error_pct"]
        return frame(records_table(self.report["confidence"]["models"], cols))

    @property
    def transfer(self) -> Optional["Transfer"]:
        """With ``durations_from``: how the trace's graph took the other
        recording's durations (matched shares, steps); else ``None``."""
        t = self.report.get("durations_from")
        return Transfer(t) if t is not None else None

    @property
    def steps(self) -> pd.DataFrame:
        """Per step: measured_ms, replayed_ms (slowest traced stage),
        predicted_ms (slowest predicted stage), change_pct (predicted over
        replayed; NaN where the replayed step has no length),
        gpu_work_change_ms (the change of the summed durations of the GPU
        tasks the step launched, every stage, the replay's waits for peers
        left out; without steps, the window's, every GPU task; a step whose
        time changed by less had the rest in slack; NaN for a step beyond
        the traced ones)."""
        cols = [
            "step",
            "measured_ms",
            "replayed_ms",
            "predicted_ms",
            "change_pct",
            "gpu_work_change_ms",
        ]
        return frame(records_table(self.report["steps"], cols))

    @property
    def stages(self) -> pd.DataFrame:
        """Per predicted stage and side (``replayed``: the traced stage's
        replay, only when the pipeline keeps its stages; ``predicted``): that
        side's mean step (ms, the report's ``replayed_step_ms`` and
        ``step_ms``) and breakdown (ms)."""
        rows = []
        for s in self.report["stages"]:
            for side, step in (("replayed", "replayed_step_ms"), ("predicted", "step_ms")):
                b = s.get(side)
                if b is not None:
                    rows.append({"stage": s["stage"], "side": side, "step_ms": s[step],
                                 "dropped_edges": s["dropped_edges"], **b})
        cols = ["stage", "side", "step_ms", "exposed_compute_ms", "overlapped_ms",
                "exposed_comm_ms", "idle_ms", "total_ms", "dropped_edges"]
        return frame(records_table(rows, cols))

    @property
    def steadiness(self) -> Optional[Dict[str, Any]]:
        """Whether the predicted steps settle (``steady_step_ms``, the
        replay's ``replayed_steady_step_ms``, ``worst_deviation_pct``,
        ``noise_pct``, ``drifting``; ``noise_pct`` is ``None`` when the
        replay has no steady-state step), as the CLI's drift warning says;
        ``None`` with too few steps to tell."""
        return self.report.get("steadiness")

    @property
    def gpu_by_source(self) -> pd.DataFrame:
        """GPU time (ms) per duration source: measured, scaled, modelled."""
        rows = [{"source": s, "ms": ms} for s, ms in self.report["gpu_ms_by_source"]]
        return frame(records_table(rows, ["source", "ms"]))

    @property
    def assumptions(self) -> pd.DataFrame:
        """What the prediction assumed, one row each."""
        rows = [{"assumption": a} for a in self.report["assumptions"]]
        return frame(records_table(rows, ["assumption"]))

    @property
    def confidence(self) -> pd.DataFrame:
        """What discovery found in each input, with its confidence and
        evidence."""
        return _findings((i["rank"], i["structure"]) for i in self.report["inputs"])

    @property
    def network(self) -> pd.DataFrame:
        """The network model per link class, as calibrated on the traces."""
        cols = ["link", "samples", "effective_gbps", "latency_scale", "mean_abs_error_pct",
                "calibrated"]
        return frame(records_table(self.report["calibration"]["network"], cols))


class Diff:
    """Two runs compared (``lumos diff A B``): per step, per breakdown
    metric, per operator and per kernel, B against A. ``report`` is ``lumos
    diff --json``; the properties are DataFrames of it (times in us,
    ``delta_*`` B minus A; ``status`` ``slower``, ``faster``, ``same``
    (steps within the thresholds), ``added`` (only in B) or ``removed``
    (only in A); operators and kernels under the thresholds are counted in
    the report's ``unchanged_*``, not listed)."""

    def __init__(self, report: Dict[str, Any]) -> None:
        self.report = report

    def __repr__(self) -> str:
        a, b = self.report["a"], self.report["b"]
        return f"<lumos.Diff: {a['mean_step_us']:.1f} us -> {b['mean_step_us']:.1f} us per step>"

    @property
    def steps(self) -> pd.DataFrame:
        """Per step position: each side's step name and length, the change."""
        cols = ["position", "a_step", "b_step", "a_us", "b_us", "delta_us", "delta_pct", "status"]
        return frame(records_table(self.report["steps"], cols))

    @property
    def breakdown(self) -> pd.DataFrame:
        """Per breakdown metric (exposed compute, idle, ...): A, B, change."""
        cols = ["metric", "a_us", "b_us", "delta_us", "delta_pct"]
        return frame(records_table(self.report["breakdown"], cols))

    @property
    def operators(self) -> pd.DataFrame:
        """Operators that changed (by name, and shape where both runs record
        them): runs and time per step on each side."""
        return frame(records_table(self.report["operators"], _DIFF_ROW))

    @property
    def kernels(self) -> pd.DataFrame:
        """Kernels that changed: runs and time per step on each side."""
        return frame(records_table(self.report["kernels"], _DIFF_ROW))


_DIFF_ROW = ["name", "shape", "kind", "inclusive", "status", "a_count", "b_count", "a_us", "b_us",
             "delta_us", "delta_pct"]


class Transfer:
    """One run re-timed with another run's durations (``lumos replay A
    --durations-from B``): A's graph with the durations measured in B, the
    same program recorded again, replayed. ``report`` is that command's
    ``--json``; ``matched`` holds the shares of A's CPU and GPU time that
    matched B (0 to 1), ``steps`` each step's prediction beside B's
    measured step (times in us)."""

    def __init__(self, report: Dict[str, Any]) -> None:
        self.report = report

    def __repr__(self) -> str:
        share = self.report["matched"]["share"]
        return f"<lumos.Transfer: {share:.1%} of A's task time matched B>"

    @property
    def matched(self) -> Dict[str, Any]:
        """Matched shares and counts (``share``, ``cpu_share``,
        ``gpu_share``, tasks and dependencies matched, thread pairs);
        ``cpu_share`` or ``gpu_share`` is ``None`` where A's tasks of that
        side have no time (none, or none with a duration)."""
        return self.report["matched"]

    @property
    def steps(self) -> pd.DataFrame:
        """Per step: A's measured step, the prediction, and B's measured and
        replayed step with the prediction's error against B's measured one
        (``NaN`` where B has no step at that position, or B's measured step
        has no length)."""
        rows = []
        for s in self.report["steps"]:
            b = s.get("b") or {}
            rows.append({
                "step": s["name"],
                "a_measured_us": s["a_measured_us"],
                "predicted_us": s["predicted_us"],
                "b_step": b.get("name"),
                "b_measured_us": b.get("measured_us"),
                "b_replayed_us": b.get("replayed_us"),
                "error_pct": b.get("error_pct"),
            })
        cols = ["step", "a_measured_us", "predicted_us", "b_step", "b_measured_us",
                "b_replayed_us", "error_pct"]
        return frame(records_table(rows, cols))
