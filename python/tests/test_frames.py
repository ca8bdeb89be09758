"""The tables: documented columns, Arrow types, and sums that hold."""

from __future__ import annotations

import gzip
import json

import pyarrow as pa
import pytest

import lumos
from lumos.frames import COLUMNS

V100 = "single-rank/v100-ddp-rank1of2-allreduce.json.gz"


@pytest.fixture(scope="module")
def job(corpus):
    return lumos.replay(str(corpus / "multi-rank" / "dlrm-8xv100"), progress=False)


@pytest.fixture(scope="module")
def single(corpus):
    return lumos.replay(str(corpus / V100), progress=False)


def test_every_table_has_exactly_its_documented_columns(job, single):
    assert set(lumos.Replay.table_names()) == set(COLUMNS)
    for r in (job, single):
        for name, cols in COLUMNS.items():
            assert r.arrow(name).column_names == list(cols), name
            assert list(r.frame(name).columns) == list(cols), name


def test_columns_have_arrow_types(job):
    k = job.arrow("kernels")
    assert k.schema.field("rank").type == pa.int64()
    assert k.schema.field("measured_us").type == pa.float64()
    assert k.schema.field("comm").type == pa.bool_()
    assert k.schema.field("operator").type == pa.string()
    c = job.arrow("collectives")
    assert c.schema.field("bytes").type == pa.int64()
    w = job.arrow("warnings")
    assert w.column("rank").null_count == len(job.report["job"]["warnings"])


def test_step_breakdowns_add_up_to_their_steps(job, single):
    for r in (job, single):
        b = r.step_breakdown
        parts = b.exposed_compute_us + b.overlapped_us + b.exposed_comm_us + b.idle_us
        assert (parts - b.total_us).abs().max() < 1e-6
        steps = r.steps.set_index(["rank", "step"])
        for row in b.itertuples():
            assert row.total_us == steps.loc[(row.rank, row.step), f"{row.side}_us"]


def test_kernel_time_is_the_gpu_tasks_time(single, corpus):
    k = single.kernels
    assert (k["count"] > 0).all()
    assert k["measured_us"].sum() > 0
    # Without what-ifs every duration replays as measured.
    assert (k["measured_us"] - k["replayed_us"]).abs().max() < 1e-6
    faster = lumos.replay(str(corpus / V100), scale_kernels=0.5, scale_only="compute",
                          progress=False).kernels
    compute = faster[~faster.comm]
    assert (compute.replayed_us - compute.measured_us / 2).abs().max() < 1.0
    top = single.top_kernels(5)
    assert list(top.columns) == ["name", "count", "measured_us", "replayed_us", "pct"]
    assert top["replayed_us"].is_monotonic_decreasing
    ops = single.top_kernels(5, by="operator")
    assert ops["replayed_us"].is_monotonic_decreasing
    with pytest.raises(ValueError):
        single.top_kernels(by="stream")


def test_who_waited_for_whom(job):
    cr = job.collective_ranks
    c = job.collectives.set_index("index")
    for i, rows in cr.groupby("index"):
        last = c.loc[i, "replayed_last_rank"]
        assert (rows.replayed_waited_for == last).all()
        # The last to arrive waits least.
        assert rows.loc[rows["rank"] == last, "replayed_wait_us"].iloc[0] == rows.replayed_wait_us.min()
    s = job.stragglers()
    assert s["replayed_caused_us"].is_monotonic_decreasing


def test_a_replay_of_traces_has_empty_job_tables(single):
    for name in ("job_steps", "collectives", "collective_ranks", "waiting", "job_critical_path", "clock"):
        assert single.arrow(name).num_rows == 0, name
    assert not single.is_job


def test_unknown_table_names_are_key_errors(single):
    with pytest.raises(KeyError, match="no table `nope`"):
        single.arrow("nope")


def test_docs_list_every_table_and_column():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "PYTHON.md").read_text()
    for name, cols in COLUMNS.items():
        assert f"**`{name}`**" in doc, name
        for c in cols:
            assert f"| `{c}` |" in doc, (name, c)


def test_empty_frames_from_the_report_have_their_documented_types(corpus):
    """A frame with no rows (no collectives, no program groups, no steps)
    keeps each column's type, as the same frame with rows has it where no
    value is missing: numbers as int64/float64, flags as bool, names as
    strings, not every column `object`."""
    empty = lumos.replay(str(corpus / "micro/a100-simple-add.json.gz"), progress=False)
    full = lumos.replay(str(corpus / "single-rank/v100-ddp-rank1of2-allreduce.json.gz"),
                        progress=False)
    e, f = empty.collective_summary, full.collective_summary
    assert e.empty and not f.empty
    for c in e.columns:
        if not f[c].isna().any():
            assert e[c].dtype == f[c].dtype, c
    assert e["total_us"].dtype == "float64" and e["count"].dtype == "int64"
    groups = empty.program_groups
    assert groups.empty and groups["representative"].dtype == "int64"


def test_a_span_of_zero_length_has_no_error(corpus, tmp_path, cli_json):
    """A trace whose every time is zero measures a window of no length: its
    error is missing (null in Arrow, NaN in pandas), as the CLI's JSON has
    null, not the 0.0 it was; the summary averages nothing."""
    path = _zero_times(corpus, tmp_path)
    r = lumos.replay(str(path), progress=False)
    assert r.window["measured_us"].tolist() == [0.0]
    assert r.arrow("window").column("error_pct").null_count == 1
    assert r.window["error_pct"].isna().all()
    assert r.summary["mean_abs_error_pct"] is None
    assert r.summary["steps"] == 0
    assert cli_json(["replay", str(path)])["traces"][0]["window"]["error_pct"] is None
    # A prediction from it has no change to state either (its repr
    # formatted the change as a number).
    p = lumos.predict(str(path), scale_kernels={"add": 0.5}, progress=False)
    assert p.report["change_pct"] is None
    assert p.steps["change_pct"].isna().all()
    assert repr(p).endswith("ms predicted (-)>")


def _zero_times(corpus, tmp_path):
    """The simple-add trace with every time zero: a window of no length."""
    import gzip
    import json

    with gzip.open(corpus / "micro" / "a100-simple-add.json.gz") as f:
        v = json.load(f)
    for e in v["traceEvents"]:
        for key in ("ts", "dur"):
            if key in e:
                e[key] = 0
    path = tmp_path / "zero.json"
    path.write_text(json.dumps(v))
    return path


def test_shares_of_a_window_of_no_length_are_missing(corpus, tmp_path, cli_json):
    """A window of no length has no shares: the step breakdown's, the
    kernels' and the critical path's ``_pct`` columns are float64 NaN (the
    CLI's JSON has null; they were 0.0), and the path has no verdict."""
    path = _zero_times(corpus, tmp_path)
    r = lumos.replay(str(path), progress=False)
    steps = r.step_analysis
    for col in ("exposed_compute_pct", "overlapped_pct", "exposed_comm_pct", "idle_pct"):
        assert steps[col].dtype == "float64" and steps[col].isna().all(), col
    kernels = r.kernel_summary
    assert len(kernels) > 0
    assert kernels["share_pct"].dtype == "float64" and kernels["share_pct"].isna().all()
    paths = r.step_critical_paths
    assert len(paths) == 1 and paths["verdict"].isna().all()
    for col in ("cpu_pct", "gpu_compute_pct", "communication_pct"):
        assert paths[col].dtype == "float64" and paths[col].isna().all(), col
    top = r.top_kernels()
    assert len(top) > 0 and top["pct"].dtype == "float64" and top["pct"].isna().all()
    path_json = cli_json(["replay", str(path)])["traces"][0]["analysis"]["critical_path"][0]
    assert path_json["verdict"] is None and path_json["cpu_pct"] is None


def test_a_column_of_missing_values_keeps_its_type():
    """A column whose every value is None takes its documented type (it was
    a column of nulls, ``object`` in pandas)."""
    from lumos.frames import frame, records_table

    rows = [{"step": "a", "error_pct": None, "b_step": None}]
    f = frame(records_table(rows, ["step", "error_pct", "b_step"]))
    assert f["error_pct"].dtype == "float64" and f["error_pct"].isna().all()
    assert f["b_step"].isna().all()
    mixed = frame(records_table([{"error_pct": None}, {"error_pct": 2.0}], ["error_pct"]))
    assert mixed["error_pct"].dtype == "float64"


def test_durations_from_steps_without_errors_are_float(corpus, tmp_path):
    """B without step annotations: no B step pairs with A's, so every
    ``error_pct`` is missing, and the column is float64 NaN (it was
    ``object`` of None)."""
    import gzip
    import json

    with gzip.open(corpus / "multi-rank" / "dlrm-8xv100" / "rank1.json.gz") as f:
        v = json.load(f)
    v["traceEvents"] = [
        e for e in v["traceEvents"] if not str(e.get("name", "")).startswith("ProfilerStep#")
    ]
    b = tmp_path / "b.json"
    b.write_text(json.dumps(v))
    a = corpus / "multi-rank" / "dlrm-8xv100" / "rank0.json.gz"
    t = lumos.durations_from(str(a), str(b), progress=False)
    steps = t.steps
    assert len(steps) == 1
    for col in ("error_pct", "b_measured_us", "b_replayed_us"):
        assert steps[col].dtype == "float64" and steps[col].isna().all(), col


def test_a_prediction_says_whether_the_traced_degrees_were_guessed(corpus):
    """DLRM's ranks list no process groups: their data-parallel degree is
    the world size, a guess, which a prediction states as
    ``degrees_guessed`` (and is one level less confident changing it); the
    MI300X DDP rank lists its groups."""
    dlrm = corpus / "multi-rank" / "dlrm-8xv100" / "rank0.json.gz"
    p = lumos.predict(str(dlrm), dp=4, progress=False)
    assert p.degrees_guessed is True
    assert p.report["traced"]["dp"] == 8
    assert p.verdict == "low"
    ddp = corpus / "single-rank" / "mi300x-resnet-ddp-rank0of8.json.gz"
    p = lumos.predict(str(ddp), progress=False)
    assert p.degrees_guessed is False


def test_a_model_fitted_on_nothing_has_no_error(corpus):
    """The simple-add trace has no GEMM and no collective: each model's
    mean error is NaN (null in the JSON; it was 0.0, a perfect fit)."""
    p = lumos.predict(
        str(corpus / "micro" / "a100-simple-add.json.gz"),
        scale_kernels={"add": 0.5},
        progress=False,
    )
    fits = p.model_fits
    assert len(fits) >= 1
    assert fits["mean_abs_error_pct"].dtype == "float64"
    assert fits["mean_abs_error_pct"].isna().all()
    net = p.network
    assert net["mean_abs_error_pct"].dtype == "float64" and net["mean_abs_error_pct"].isna().all()


def test_names_holding_any_text_come_back_exact_and_apart(corpus, tmp_path):
    # Two kernels and two operators of the corpus's toy run renamed to names
    # that differ only after a NUL, with an escape, a right-to-left
    # override and HTML before it: pandas groups object strings up to their
    # first NUL, so top_kernels gave them as one row under the first's name.
    text = gzip.open(corpus / "single-rank" / "mi250-toy-train.json.gz", "rt").read()
    events = json.loads(text)
    prefix = "k\x00\x1b[31m\u202e<script>"
    kernels = sorted({e["name"] for e in events["traceEvents"] if e.get("cat") == "kernel"})
    renamed = {kernels[0]: prefix + "A", kernels[1]: prefix + "B"}
    for e in events["traceEvents"]:
        if e.get("name") in renamed:
            e["name"] = renamed[e["name"]]
    path = tmp_path / "toy.json"
    path.write_text(json.dumps(events))
    r = lumos.replay(path)
    assert set(renamed.values()) <= set(r.kernels["name"])
    top = r.top_kernels(100)
    assert set(renamed.values()) <= set(top["name"])
    assert top["count"].sum() == r.kernels["count"].sum()
    assert len(top) == len(set(r.kernels["name"]))
    by_op = r.top_kernels(100, by="operator")
    assert by_op["count"].sum() == r.kernels["count"].sum()
