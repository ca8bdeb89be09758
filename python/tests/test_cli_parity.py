"""The numbers of the Python API are the ones the CLI prints: the same
report, value for value, and frames built from it, on corpus traces."""

from __future__ import annotations

import math
import os

import pytest

import lumos

SINGLE = [
    "single-rank/v100-ddp-rank1of2-allreduce.json.gz",
    "single-rank/a100-alexnet-cuda-sync.json.gz",
    "micro/a100-simple-add.json.gz",
    "single-rank/rtx2080ti-linear-train.json.gz",
]
DLRM = "multi-rank/dlrm-8xv100"


def test_replay_reports_equal_the_cli(corpus, cli_json):
    paths = [str(corpus / p) for p in SINGLE]
    cli = cli_json(["replay", *paths])
    r = lumos.replay(paths, progress=False)
    assert r.report == cli


def test_one_file_read_into_the_build_equals_the_trace_read_first(corpus):
    """`lumos.replay(PATH)` reads the file straight into the graph build;
    a trace read first and then replayed gives the same report and the
    same tables made from the graph and the schedule."""
    path = str(corpus / SINGLE[0])
    streamed = lumos.replay(path, progress=False)
    read_first = lumos.read_trace(path, progress=False).replay()
    assert streamed.report == read_first.report
    assert not streamed.kernels.empty
    for name in ("kernels", "timeline", "kernel_summary", "collective_summary"):
        assert getattr(streamed, name).equals(getattr(read_first, name)), name


def _frame_matches_steps(r, cli):
    got = r.steps
    want = [(t["rank"], s["name"], s["measured_us"], s["replayed_us"], s["error_pct"])
            for t in cli["traces"] for s in t["steps"]]
    rows = list(got[["rank", "step", "measured_us", "replayed_us", "error_pct"]]
                .itertuples(index=False, name=None))
    assert rows == want


def test_frames_hold_the_cli_numbers_on_a_single_trace(corpus, cli_json):
    path = str(corpus / SINGLE[0])
    cli = cli_json(["replay", path])
    r = lumos.replay(path, progress=False)
    _frame_matches_steps(r, cli)
    t = cli["traces"][0]
    w = r.window.iloc[0]
    assert (w.measured_us, w.replayed_us, w.error_pct) == (
        t["window"]["measured_us"], t["window"]["replayed_us"], t["window"]["error_pct"])
    b = r.breakdown.set_index("side")
    for side in ("measured", "replayed"):
        for k, v in t["breakdown"][side].items():
            assert b.loc[side, k] == v, (side, k)
    cp = r.critical_path
    assert list(cp["bound"]) == [x["bound"] for x in t["critical_path"]["by_bound"]]
    assert list(cp["wait_us"]) == [x["wait_us"] for x in t["critical_path"]["by_bound"]]
    assert list(r.critical_path_tasks["us"]) == [x["us"] for x in t["critical_path"]["top_tasks"]]
    tl = r.timeline
    assert list(tl[tl.side == "replayed"]["busy"]) == t["gpu_busy_timeline"]["replayed"]
    assert list(r.warnings["message"]) == t["warnings"]


def test_job_replay_and_its_frames_equal_the_cli(corpus, cli_json):
    path = str(corpus / DLRM)
    cli = cli_json(["replay", path])
    r = lumos.replay(path, progress=False)
    assert r.is_job
    assert r.report == cli
    _frame_matches_steps(r, cli)
    job = cli["job"]
    js = r.job_steps.iloc[0]
    assert (js.measured_us, js.replayed_us, js.slowest_rank_replayed) == (
        job["steps"][0]["measured_us"], job["steps"][0]["replayed_us"],
        job["steps"][0]["slowest_rank_replayed"])
    w = r.waiting.set_index("rank")
    for x in job["waiting"]:
        assert w.loc[x["rank"], "replayed_wait_us"] == x["replayed"]["wait_us"]
        assert w.loc[x["rank"], "measured_caused_us"] == x["measured"]["caused_us"]
    cr = r.collective_ranks
    for i, c in enumerate(job["collectives"]):
        rows = cr[cr["index"] == i]
        assert list(rows["rank"]) == c["ranks"]
        assert list(rows["replayed_wait_us"]) == c["replayed"]["wait_us"]
        assert set(rows["replayed_waited_for"]) == {c["replayed"]["last_rank"]}
    assert list(r.clock["offset_us"]) == [o["offset_us"] for o in job["clock"]["offsets"]]


def test_what_ifs_equal_the_cli(corpus, cli_json):
    path = str(corpus / SINGLE[0])
    cli = cli_json(["replay", path, "--scale-kernels", "0.5", "--scale-only", "compute",
                    "--deps", "no-inter-thread"])
    r = lumos.replay(path, scale_kernels=0.5, scale_only="compute", deps=["no-inter-thread"],
                     progress=False)
    assert r.report == cli
    job = str(corpus / DLRM)
    cli = cli_json(["replay", job, "--scale-rank", "3=1.5", "--scale-rank-cpu"])
    r = lumos.replay(job, scale_rank={3: 1.5}, scale_rank_cpu=True, progress=False)
    assert r.report == cli
    assert lumos.load_job(job, progress=False).replay(scale_rank={3: 1.5},
                                                     scale_rank_cpu=True).report == cli


def test_per_trace_and_job_flags_equal_the_cli(corpus, cli_json):
    job = str(corpus / DLRM)
    assert lumos.replay(job, job=False, progress=False).report == cli_json(
        ["replay", job, "--per-trace"])
    path = str(corpus / SINGLE[2])
    assert lumos.replay(path, job=True, progress=False).report == cli_json(
        ["replay", path, "--job"])


def test_inspect_equals_the_cli(corpus, cli_json):
    paths = [str(corpus / SINGLE[1]), str(corpus / DLRM)]
    cli = cli_json(["inspect", paths[0]])
    assert lumos.inspect(paths[0], progress=False).report == cli
    cli = cli_json(["inspect", paths[1]])
    i = lumos.inspect(paths[1], progress=False)
    assert i.report == cli
    assert list(i.files["events"]) == [t["events"]["total"] for t in cli["traces"]]
    assert i.job is not None and i.job["ranks"] == list(range(8))


def test_inspect_counts_what_two_warnings_say(corpus, tmp_path):
    """Launch calls whose GPU task is missing and events that end absurdly
    late are columns of ``Inspection.files``, not only warning text: 0 on a
    corpus trace, the warnings' counts on one whose kernels were removed and
    two of whose events end absurdly late, from the trace and from its
    ``.lgraph`` file alike."""
    import gzip
    import json

    from lumos.distributed import ingest_rank

    cols = ["absurd_durations", "launches_without_gpu_task"]
    clean = lumos.inspect(str(corpus / SINGLE[1]), progress=False).files
    assert clean[cols].iloc[0].tolist() == [0, 0]
    with gzip.open(corpus / "single-rank/h100-vit-inference.json.gz", "rt") as f:
        doc = json.load(f)
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("cat") != "kernel"]
    late = [e for e in doc["traceEvents"]
            if e.get("cat") in ("user_annotation", "cpu_op")][:2]
    for e in late:
        e["dur"] = 1e12
    trace = tmp_path / "damaged.json"
    trace.write_text(json.dumps(doc))
    graph = ingest_rank(trace, tmp_path / "graphs")
    for path in (str(trace), graph):
        i = lumos.inspect(path, progress=False)
        warned = [int(w.split(" ")[0]) for w in i.warnings["message"]
                  if "after the trace's last event start" in w
                  or "have no GPU task of their correlation id" in w]
        counts = i.files[cols].iloc[0].tolist()
        assert counts == warned and counts[0] == 2 and 130 <= counts[1] <= 154, path


def test_predict_equals_the_cli(tmp_path, cli_json):
    files = lumos.synth("gpt-tiny", tmp_path, tp=2, pp=2, dp=2, steps=2, seed=1)
    cli = cli_json(["predict", *files, "--dp", "4", "--microbatches", "8"])
    p = lumos.predict(files, dp=4, microbatches=8, progress=False)
    assert p.report == cli
    assert list(p.steps["predicted_ms"]) == [s["predicted_ms"] for s in cli["steps"]]
    assert list(p.assumptions["assumption"]) == cli["assumptions"]
    assert set(p.confidence["confidence"]) <= {"high", "medium", "low"}
    assert math.isclose(p.stages["total_ms"].iloc[0], cli["stages"][0]["replayed"]["total_ms"])


def test_a_folder_of_predicted_timelines_replays_as_in_the_cli(tmp_path, cli_json):
    files = lumos.synth("gpt-tiny", tmp_path / "job", tp=2, pp=2, dp=2, steps=2, seed=1)
    out = tmp_path / "predicted"
    cli_json(["predict", *files, "--pp", "4", "--out", str(out)])
    # The folder holds only lumos's outputs: predicted timelines, the job.
    cli = cli_json(["replay", str(out)])
    replayed = lumos.replay(out, progress=False)
    assert replayed.is_job
    assert replayed.report == cli
    assert len(cli["traces"]) == 4


def test_prediction_stages_give_each_side_its_own_step(corpus, cli_json):
    """`Prediction.stages`: the `replayed` row's step is the traced stage's
    replayed mean step (`replayed_step_ms`), the `predicted` row's the
    predicted one (`step_ms`), not one number on both rows. With one
    stage, the replayed one is the report's mean replayed step."""
    path = str(corpus / SINGLE[0])
    cli = cli_json(["predict", path, "--dp", "4"])
    p = lumos.predict(path, dp=4, progress=False)
    assert p.report == cli
    st = p.stages.set_index("side")
    assert math.isclose(st.loc["replayed", "step_ms"], cli["stages"][0]["replayed_step_ms"])
    assert math.isclose(st.loc["replayed", "step_ms"], cli["mean_replayed_ms"])
    assert math.isclose(st.loc["predicted", "step_ms"], cli["stages"][0]["step_ms"])
    assert math.isclose(st.loc["predicted", "step_ms"], cli["mean_predicted_ms"])
    assert st.loc["replayed", "step_ms"] != st.loc["predicted", "step_ms"]


def test_a_prediction_warns_what_reading_the_files_warned(corpus, cli_json):
    """What reading and building a trace warned (here its stream waits
    that resolved to no edge) is a `UserWarning` naming the file, one per
    warning, and `report["input_warnings"]`, as `lumos predict` says it on
    stderr and in `--json`; the warnings are the replay's."""
    path = str(corpus / "single-rank/a100-ddp-rank0of2-event-record.json.gz")
    cli = cli_json(["predict", path, "--dp", "4"])
    with pytest.warns(UserWarning) as caught:
        p = lumos.predict(path, dp=4, progress=False)
    assert p.report["input_warnings"] == cli["input_warnings"]
    [entry] = p.report["input_warnings"]
    assert entry["warnings"] == lumos.replay(path, progress=False).report["traces"][0]["warnings"]
    said = [str(w.message) for w in caught]
    for text in entry["warnings"]:
        assert f"{entry['path']}: {text}" in said
    assert any("stream waits could not be resolved" in w for w in said)


def test_a_job_found_in_files_replays_as_a_loaded_job(corpus):
    """`lumos.replay(DIR)` of a job replays it owning the job (each rank read
    back from the job graph for the tables); `lumos.load_job(DIR).replay()`
    keeps the job. Same report, same tables."""
    found = lumos.replay(str(corpus / DLRM), progress=False)
    loaded = lumos.load_job(str(corpus / DLRM), progress=False).replay()
    assert found.is_job and loaded.is_job
    assert found.report == loaded.report
    a, b = found.tables(), loaded.tables()
    assert set(a) == set(b)
    for name in a:
        assert a[name].equals(b[name]), name


def test_inspect_and_replay_of_compact_graphs_equal_the_cli(tmp_path, corpus, cli_json):
    """`lumos.inspect` of a job's `.lgraph` files, and of traces and an
    `.lgraph` file together, is the CLI's report; so is `lumos.replay` of
    the job's `.lgraph` files."""
    from lumos.distributed import ingest_rank

    src = sorted(str(p) for p in (corpus / DLRM).iterdir())
    graphs = [ingest_rank(f, str(tmp_path)) for f in src]
    assert lumos.inspect(graphs, progress=False).report == cli_json(["inspect", *graphs])
    mixed = [*src[:2], graphs[2]]
    assert lumos.inspect(mixed, progress=False).report == cli_json(["inspect", *mixed])
    assert lumos.inspect(mixed, job=False, progress=False).report == cli_json(
        ["inspect", "--per-trace", *mixed]
    )
    # Replayed as the ranks of their job, found or told, as the CLI does.
    cli = cli_json(["replay", *graphs])
    assert lumos.replay(graphs, progress=False).report == cli
    assert lumos.replay(graphs, job=True, progress=False).report == cli
    assert lumos.load_job(graphs, progress=False).replay().report == cli
    # Alone, a compact file is replayed as its trace would be, as
    # `lumos replay RANK.lgraph` does, and its frames are there.
    alone = lumos.replay(graphs[0], progress=False)
    assert alone.report == cli_json(["replay", graphs[0]])
    assert alone.report == lumos.replay(src[0], progress=False).report
    assert len(alone.timeline) > 0 and len(alone.kernels) > 0


def test_predict_of_every_rank_equals_the_cli(tmp_path, cli_json):
    """Every rank of a pipeline, highest first: one rank per stage stands
    for it, as the CLI takes them (each rank discovered as it is read)."""
    files = lumos.synth("gpt-tiny", tmp_path, tp=2, pp=2, dp=2, ranks="all", steps=2, seed=1)
    files = sorted(files, key=lambda f: -int(os.path.basename(f)[4:].split(".")[0]))
    cli = cli_json(["predict", *files, "--dp", "4"])
    p = lumos.predict(files, dp=4, progress=False)
    assert p.report == cli
    assert [i["rank"] for i in cli["inputs"]] == [4, 0]
    assert any("6 of 8 inputs left out" in a for a in p.assumptions["assumption"])


def test_predict_from_compact_graphs_equals_the_cli(tmp_path, cli_json):
    """`lumos.predict` takes `.lgraph` files, as the CLI does, and predicts
    from them what it predicts from the traces they were ingested from."""
    from lumos.distributed import ingest_rank

    files = lumos.synth("gpt-tiny", tmp_path / "t", tp=2, pp=2, dp=2, steps=2, seed=1)
    graphs = [ingest_rank(f, str(tmp_path / "g")) for f in files]
    cli = cli_json(["predict", *graphs, "--dp", "4"])
    p = lumos.predict(graphs, dp=4, progress=False)
    assert p.report == cli
    from_traces = lumos.predict(files, dp=4, progress=False)
    assert list(p.steps["predicted_ms"]) == list(from_traces.steps["predicted_ms"])


@pytest.mark.parametrize("recipe,flags", [
    ({}, []),
    (dict(cluster="selene", global_batch=8, recompute="selective", precision="fp16",
          distributed_optimizer=True, sequence_parallel=False, cuda_sync_events=False),
     ["--cluster", "selene", "--global-batch", "8", "--recompute", "selective",
      "--precision", "fp16", "--distributed-optimizer", "--no-sequence-parallel",
      "--no-cuda-sync-events"]),
    # The interleaved schedule needs more than two stages.
    (dict(pp=3, virtual_stages=2, micro_batch=2, unfused_attention=True, event_records=False,
          stream_waits=False),
     ["--pp", "3", "--virtual-stages", "2", "--micro-batch", "2", "--unfused-attention",
      "--no-event-records", "--no-stream-waits"]),
], ids=["layout", "recipe", "schedule"])
def test_synth_writes_what_the_cli_writes(tmp_path, lumos_bin, recipe, flags):
    from conftest import run_cli

    model = "gpt-small" if "virtual_stages" in recipe else "gpt-tiny"
    recipe = {"pp": 2, **recipe}
    ours = lumos.synth(model, tmp_path / "py", tp=2, dp=1, seed=3, **recipe)
    flags = flags if "--pp" in flags else ["--pp", "2", *flags]
    p = run_cli(lumos_bin, ["synth", "--model", model, "--tp", "2", "--seed", "3", *flags,
                            "--out", str(tmp_path / "cli")])
    assert p.returncode == 0, p.stderr
    theirs = p.stdout.split()
    assert [f.rsplit("/", 1)[1] for f in ours] == [f.rsplit("/", 1)[1] for f in theirs]
    import gzip
    for a, b in zip(ours, theirs):
        assert gzip.open(a).read() == gzip.open(b).read()


@pytest.mark.parametrize("rel", SINGLE[:2])
def test_a_trace_read_once_replays_as_the_cli(corpus, cli_json, rel):
    path = str(corpus / rel)
    t = lumos.read_trace(path, progress=False)
    assert t.replay(scale_kernels=2.0).report == cli_json(["replay", path, "--scale-kernels", "2"])
    assert t.inspect().report == cli_json(["inspect", path])


def test_synth_takes_a_model_file_or_dict_as_the_cli_does(tmp_path, lumos_bin):
    import gzip
    import json

    from conftest import run_cli

    model = {"name": "gpt-mini", "layers": 2, "hidden": 512, "heads": 8, "ffn_hidden": 1024,
             "seq_len": 512, "vocab": 8192, "kv_heads": 4, "swiglu": True}
    path = tmp_path / "model.json"
    path.write_text(json.dumps(model))
    p = run_cli(lumos_bin, ["synth", "--model", str(path), "--tp", "2", "--seed", "4",
                            "--out", str(tmp_path / "cli")])
    assert p.returncode == 0, p.stderr
    theirs = p.stdout.split()
    for ours in (lumos.synth(path, tmp_path / "file", tp=2, seed=4),
                 lumos.synth(model, tmp_path / "dict", tp=2, seed=4)):
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            assert gzip.open(a).read() == gzip.open(b).read()


def test_representatives_equal_the_cli_on_traces(corpus, cli_json):
    path = str(corpus / DLRM)
    cli = cli_json(["replay", "--representatives", path, "--scale-kernels", "0.7"])
    r = lumos.replay(path, representatives=True, scale_kernels=0.7, progress=False)
    assert r.report == cli
    reps = cli["representatives"]
    assert r.representatives == reps
    assert list(r.program_groups["representative"]) == [
        g["representative"] for g in reps["groups"]]
    assert list(r.job_steps["replayed_us"]) == [s["replayed_us"] for s in cli["job"]["steps"]]
    # From traces every rank's graph is built (its program comes from it).
    assert r.graphs_loaded == 8
    # The tables beyond the report cover the representatives.
    assert set(r.kernels["rank"]) == {g["representative"] for g in reps["groups"]}
    # A bare factor that picks kernels (which a replay of one graph checks
    # as a pattern) still applies here, where no pattern is taken.
    flags = ["--scale-kernels", "0.5", "--scale-pattern", "ncclKernel"]
    cli = cli_json(["replay", "--representatives", path] + flags)
    r = lumos.replay(path, representatives=True, scale_kernels=0.5,
                     scale_pattern="ncclKernel", progress=False)
    assert r.report == cli
    plain = cli_json(["replay", "--representatives", path])
    assert cli["job"]["steps"] != plain["job"]["steps"]


def test_analysis_frames_hold_the_cli_numbers(corpus, cli_json):
    from lumos.frames import ANALYSIS_COLUMNS

    path = str(corpus / SINGLE[0])
    cli = cli_json(["replay", path])
    r = lumos.replay(path, progress=False)
    a = cli["traces"][0]["analysis"]
    for name, section in [("kernel_summary", "kernels"), ("operator_summary", "operators"),
                          ("collective_summary", "collectives")]:
        f = getattr(r, name)
        assert list(f.columns) == list(ANALYSIS_COLUMNS[name]), name
        for side in ("measured", "replayed"):
            rows = f[f.side == side]
            want = a[side][section]
            assert len(rows) == len(want), (name, side)
            assert list(rows["total_us"]) == [x["total_us"] for x in want], (name, side)
    steps = r.step_analysis
    assert list(steps.columns) == list(ANALYSIS_COLUMNS["step_analysis"])
    m = steps[steps.side == "measured"]
    want = a["measured"]["steps"] + [a["measured"]["total"]]
    assert list(m["step"]) == [s["step"] for s in want]
    # The row over the steps analysed is named as the CLI's JSON names it,
    # and as the docs say.
    assert m["step"].iloc[-1] == a["measured"]["total"]["step"] == "selection"
    assert "``selection``" in ANALYSIS_COLUMNS["step_analysis"]["step"]
    assert list(m["exposed_compute_us"]) == [s["exposed_compute_us"] for s in want]
    assert list(m["idle_host_wait_us"]) == [s["idle_host_wait_us"] for s in want]
    cp = r.step_critical_paths
    assert list(cp["verdict"]) == [c["verdict"] for c in a["critical_path"]]
    assert list(cp["length_us"]) == [c["length_us"] for c in a["critical_path"]]
    # The kernels table (per name and launching operator) adds up to the
    # CLI's kernel table, name by name.
    k = r.kernels.groupby("name")[["count", "measured_us"]].sum()
    for x in a["measured"]["kernels"]:
        assert k.loc[x["name"], "count"] == x["count"], x["name"]
        assert math.isclose(k.loc[x["name"], "measured_us"], x["total_us"], abs_tol=1e-6)


@pytest.mark.parametrize("trace", ["single-rank/mi300x-resnet-ddp-rank0of8.json.gz",
                                   "single-rank/h100-qwen-0.5b-inference.json.gz"])
def test_kernels_cover_the_window_and_the_kernel_summary_the_steps(corpus, cli_json, trace):
    """On traces with GPU work outside their steps the scopes differ, as the
    docs say: `kernel_summary` is the CLI's kernel table (the steps
    analysed, adding up to their GPU task time); `kernels` has every GPU
    task of the window, at least as many of each name, more in all."""
    path = str(corpus / trace)
    a = cli_json(["replay", path])["traces"][0]["analysis"]["measured"]
    r = lumos.replay(path, progress=False)
    ks = r.kernel_summary
    ks = ks[ks.side == "measured"]
    assert list(ks["name"]) == [x["name"] for x in a["kernels"]]
    assert list(ks["count"]) == [x["count"] for x in a["kernels"]]
    assert math.isclose(ks["total_us"].sum(), a["total"]["gpu_task_us"], rel_tol=1e-6, abs_tol=1.0)
    k = r.kernels.groupby("name")["count"].sum()
    for name, count in zip(ks["name"], ks["count"]):
        assert k[name] >= count, name
    assert k.sum() > ks["count"].sum()
    assert r.kernels["measured_us"].sum() > ks["total_us"].sum()


def test_analysis_frames_of_a_job_hold_the_cli_numbers(corpus, cli_json):
    path = str(corpus / DLRM)
    cli = cli_json(["replay", path])
    r = lumos.replay(path, progress=False)
    c = r.collective_summary
    want = [(t["rank"], x["collective"], x["count"], x["total_us"])
            for t in cli["traces"] for x in t["analysis"]["replayed"]["collectives"]]
    got = c[c.side == "replayed"][["rank", "collective", "count", "total_us"]]
    assert list(got.itertuples(index=False, name=None)) == want


def test_kernel_patterns_equal_the_cli(corpus, cli_json):
    path = str(corpus / SINGLE[0])
    # This trace records no shapes: its GEMMs are known by name only.
    cli = cli_json(["replay", path, "--scale-kernels", "sgemm=0.5",
                    "--scale-kernels", "nccl=2"])
    r = lumos.replay(path, scale_kernels={"sgemm": 0.5, "nccl": 2}, progress=False)
    assert r.report == cli
    assert lumos.read_trace(path).replay(scale_kernels=["sgemm=0.5", "nccl=2"]).report == cli
    job = str(corpus / DLRM)
    cli = cli_json(["replay", job, "--scale-kernels", "class:compute=0.8",
                    "--scale-rank", "2=1.2"])
    r = lumos.replay(job, scale_kernels={"class:compute": 0.8}, scale_rank={2: 1.2},
                     progress=False)
    assert r.report == cli
    with pytest.raises(lumos.ConfigError, match="bare scale_kernels"):
        lumos.replay(job, representatives=True, scale_kernels={"class:gemm": 0.5})
    with pytest.raises(lumos.ConfigError, match="scale_kernels class:gemm=0"):
        lumos.replay(path, scale_kernels={"class:gemm": 0})


def test_diff_equals_the_cli(corpus, cli_json, lumos_bin, tmp_path):
    from conftest import run_cli

    a = str(corpus / SINGLE[0])
    # B: A's replay with GEMMs twice as fast, as a timeline (A records no
    # shapes: its GEMMs are known by name only).
    p = run_cli(lumos_bin, ["replay", a, "--scale-kernels", "sgemm=0.5",
                            "--out", str(tmp_path)])
    assert p.returncode == 0, p.stderr
    (b,) = [str(f) for f in tmp_path.iterdir() if f.name.endswith(".replayed.json.gz")]
    cli = cli_json(["diff", a, b, "--min-change-pct", "1"])
    d = lumos.diff(a, b, min_change_pct=1, progress=False)
    assert d.report == cli
    assert list(d.kernels["name"]) == [k["name"] for k in cli["kernels"]]
    assert list(d.steps["delta_us"]) == [s["delta_us"] for s in cli["steps"]]
    with pytest.raises(lumos.ConfigError, match="min_change_us"):
        lumos.diff(a, b, min_change_us=-1)


# Rank 3 of a recsys job and rank 0 of a ResNet DDP job: both record world
# size 8, and they share no collective.
UNRELATED = [
    "single-rank/a100-recsys-rank3of8.json.gz",
    "single-rank/mi300x-resnet-ddp-rank0of8.json.gz",
]


def test_unrelated_traces_are_replayed_one_by_one_as_the_cli_does(corpus, cli_json):
    paths = [str(corpus / p) for p in UNRELATED]
    note = "2 traces record world size 8 but share no collective: replayed one by one"
    with pytest.warns(UserWarning, match=note):
        r = lumos.replay(paths, progress=False)
    assert not r.is_job
    assert r.report == cli_json(["replay", *paths])
    with pytest.warns(UserWarning, match=note):
        assert lumos.inspect(paths, progress=False).job is None
    # job=True still forces one job.
    assert lumos.replay(paths, job=True, progress=False).is_job


CAPTURE_A = "single-rank/v100-resnet50-2021-capture-a.json.gz"
CAPTURE_B = "single-rank/v100-resnet50-2021-capture-b.json.gz"


def test_durations_from_equals_the_cli(corpus, cli_json):
    a, b = str(corpus / CAPTURE_A), str(corpus / CAPTURE_B)
    t = lumos.durations_from(a, b, progress=False)
    assert t.report == cli_json(["replay", a, "--durations-from", b])
    assert t.matched["share"] > 0.5
    steps = t.steps
    assert list(steps["predicted_us"]) == [s["predicted_us"] for s in t.report["steps"]]
    assert steps["error_pct"].notna().all()


def test_durations_from_an_unrelated_run_is_refused(corpus):
    """The refusal names the Python argument, not the CLI's flag."""
    a = str(corpus / "single-rank/mi300x-resnet-ddp-rank0of8.json.gz")
    b = str(corpus / CAPTURE_A)
    with pytest.raises(lumos.ConfigError, match="matched") as e:
        lumos.durations_from(a, b, progress=False)
    assert str(e.value).startswith(f"b {b}: only ") and "--durations-from" not in str(e.value)
    with pytest.raises(lumos.ConfigError, match="matched") as e:
        lumos.predict(a, durations_from=b, progress=False)
    assert f"durations_from {b}: only " in str(e.value)
    assert "--durations-from" not in str(e.value)


def test_predict_with_durations_from_equals_the_cli(corpus, cli_json):
    a, b = str(corpus / CAPTURE_A), str(corpus / CAPTURE_B)
    p = lumos.predict(a, durations_from=b, progress=False)
    assert p.report == cli_json(["predict", a, "--durations-from", b])
    assert p.transfer is not None and p.transfer.matched["share"] > 0.5
    assert lumos.predict(a, progress=False).transfer is None
    with pytest.raises(lumos.ConfigError, match="one trace"):
        lumos.predict([a, b], durations_from=b, progress=False)


def test_predict_with_durations_from_refuses_several_traces_before_reading(tmp_path, corpus):
    # The second file is not a trace: read, it would be an InputError.
    a, junk = str(corpus / CAPTURE_A), tmp_path / "junk.json"
    junk.write_text("not json")
    with pytest.raises(lumos.ConfigError, match="takes one trace to predict from, got 2"):
        lumos.predict([a, str(junk)], durations_from=a, progress=False)


def test_durations_from_a_compact_graph_equals_the_cli(tmp_path, corpus, cli_json):
    """`durations_from` may be an `.lgraph` file, as `--durations-from`."""
    from lumos.distributed import ingest_rank

    a = str(corpus / CAPTURE_A)
    b = ingest_rank(str(corpus / CAPTURE_B), str(tmp_path))
    p = lumos.predict(a, durations_from=b, progress=False)
    assert p.report == cli_json(["predict", a, "--durations-from", b])


def test_prediction_confidence_equals_the_cli(corpus, cli_json):
    path = str(corpus / "single-rank/v100-ddp-rank1of2-allreduce.json.gz")
    cli = cli_json(["predict", path, "--dp", "4"])
    p = lumos.predict(path, dp=4, progress=False)
    assert p.verdict == cli["confidence"]["verdict"] == "low"
    assert p.trust == cli["confidence"]
    fits = p.model_fits
    assert list(fits["model"]) == [m["model"] for m in cli["confidence"]["models"]]
    assert list(fits["used"]) == [m["used"] for m in cli["confidence"]["models"]]


def test_predict_virtual_stages_equals_the_cli(tmp_path, cli_json):
    # The interleaved schedule needs more than two stages; gpt-small's 12
    # layers fill 3 stages x 2 chunks, its default 6 micro-batches 2 x pp.
    files = lumos.synth("gpt-small", tmp_path, pp=3, steps=2, seed=2)
    cli = cli_json(["predict", *files, "--virtual-stages", "2"])
    p = lumos.predict(files, virtual_stages=2, progress=False)
    assert p.report == cli
    assert list(p.steps["predicted_ms"]) == [s["predicted_ms"] for s in cli["steps"]]


def test_virtual_stages_on_two_stages_are_refused_as_by_the_cli(tmp_path, cli_error):
    from lumos import ConfigError

    files = lumos.synth("gpt-tiny", tmp_path, pp=2, steps=2, seed=1)
    code, message = cli_error(["predict", *files, "--virtual-stages", "2"])
    assert code == 2 and "more than 2 pipeline stages" in message
    with pytest.raises(ConfigError) as e:
        lumos.predict(files, virtual_stages=2, progress=False)
    assert str(e.value) == message
    code, message = cli_error(["predict", *files, "--virtual-stages", "0"])
    assert code == 2
    with pytest.raises(ConfigError) as e:
        lumos.predict(files, virtual_stages=0, progress=False)
    assert str(e.value) == "virtual_stages: " + message.split("': ", 1)[1]


def test_clock_hosts_are_empty_when_no_trace_names_its_host(corpus, cli_json):
    path = str(corpus / DLRM)
    cli = cli_json(["replay", path])
    assert "hosts" not in cli["job"]["clock"]
    hosts = lumos.replay(path, progress=False).clock_hosts
    assert hosts.empty
    assert list(hosts.columns) == ["host", "rank", "offset_us", "collective_ends", "residual_us"]


def test_clock_hosts_hold_the_clis_host_offsets(corpus, cli_json, tmp_path):
    import gzip
    import json

    # The DLRM ranks written again naming two hosts of four ranks each.
    for r in range(8):
        v = json.loads(gzip.open(corpus / DLRM / f"rank{r}.json.gz").read())
        v["hostname"] = "a" if r < 4 else "b"
        (tmp_path / f"rank{r}.json").write_text(json.dumps(v))
    cli = cli_json(["replay", str(tmp_path)])
    hosts = lumos.replay(str(tmp_path), progress=False).clock_hosts
    want = [(h["host"], rank, h["offset_us"], h["collective_ends"], h["residual_us"][i])
            for h in cli["job"]["clock"]["hosts"] for i, rank in enumerate(h["ranks"])]
    assert len(want) == 8
    got = list(hosts[["host", "rank", "offset_us", "collective_ends", "residual_us"]]
               .itertuples(index=False, name=None))
    assert got == want


def test_synth_without_stream_waits_writes_no_cuda_stream_wait_event(tmp_path):
    import gzip

    def text(files):
        return "".join(gzip.open(f).read().decode() for f in files)

    # Data parallelism puts the gradient all-reduce on a stream of its own.
    on = lumos.synth("gpt-tiny", tmp_path / "on", dp=2, seed=5)
    assert "cudaStreamWaitEvent" in text(on)
    off = lumos.synth("gpt-tiny", tmp_path / "off", dp=2, seed=5, stream_waits=False)
    assert "cudaStreamWaitEvent" not in text(off)


def test_predict_leaves_out_a_rank_without_tasks_as_the_cli(corpus, lumos_bin, tmp_path):
    """The DLRM job with rank 7 stripped to its metadata: `lumos.predict`
    leaves the rank out with a UserWarning naming it and predicts from the
    other ranks, the CLI's report value for value (which exits 1, naming
    it); only ranks without tasks raise InputError."""
    import gzip
    import json
    import subprocess

    src = corpus / DLRM
    files = []
    for r in range(8):
        doc = json.loads(gzip.open(src / f"rank{r}.json.gz").read())
        if r == 7:
            doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("ph") == "M"]
        f = tmp_path / f"rank{r}.json"
        f.write_text(json.dumps(doc))
        files.append(str(f))
    p = subprocess.run(
        [str(lumos_bin), "predict", *files, "--dp", "16", "--json"],
        capture_output=True, text=True, check=False,
    )
    assert p.returncode == 1, p.stderr
    assert "rank7.json) holds no CPU or GPU task" in p.stderr
    cli = json.loads(p.stdout)
    with pytest.warns(UserWarning, match=r"rank7\.json\) holds no CPU or GPU task"):
        pred = lumos.predict(files, dp=16, progress=False)
    assert pred.report == cli
    assert [(e["rank"], e["reason"]) for e in cli["left_out"]] == [(7, "no_tasks")]
    assert cli["mean_predicted_ms"] == lumos.predict(files[:7], dp=16, progress=False).report[
        "mean_predicted_ms"
    ]
    with pytest.raises(lumos.InputError, match="nothing to predict from"):
        lumos.predict(files[7:], dp=16, progress=False)
