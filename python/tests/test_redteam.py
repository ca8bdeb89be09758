"""Calls a data scientist makes that the other tests did not: numbers
straight from a DataFrame (numpy scalars), arguments of the wrong kind,
a path given where a list of paths goes."""

from __future__ import annotations

import gzip
import os
import sys

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


@pytest.mark.parametrize(
    "call, text",
    [
        (lambda t: lumos.replay(t, job="yes"), "job: expected None, True or False, got 'yes'"),
        (lambda t: lumos.replay(t, job=1), "job: expected None, True or False, got 1"),
        (lambda t: lumos.inspect(t, job="no"), "job: expected None, True or False, got 'no'"),
        # "no" was true: the replay from representatives ran.
        (lambda t: lumos.replay(t, representatives="no"),
         "representatives: expected True or False, got 'no'"),
        (lambda t: lumos.replay(t, deps=[3]), "deps: expected a str, got 3"),
        (lambda t: lumos.replay(t, deps=b"no-sync"), "deps: expected a list of dependency kinds"),
        (lambda t: lumos.replay(t, scale_kernels=["class:gemm=0.5", None]),
         "scale_kernels: expected a str, got None"),
        (lambda t: lumos.replay(t, scale_kernels=b"class:gemm=0.5"), "scale_kernels: expected a factor"),
        (lambda t: lumos.replay(t, scale_kernels=object()), "scale_kernels: expected a factor"),
        # An int key was taken as the pattern "1", a substring of kernel names.
        (lambda t: lumos.replay(t, scale_kernels={1: 0.5}),
         "scale_kernels pattern: expected a str, got 1"),
        (lambda t: lumos.predict(t, dp=2, scale_kernels={1: 0.5}),
         "scale_kernels pattern: expected a str, got 1"),
        (lambda t: lumos.replay(t, scale_kernels=0.5, scale_only=None),
         "scale_only: expected a str, got None"),
        (lambda t: lumos.replay(t, scale_kernels=0.5, scale_pattern=3),
         "scale_pattern: expected a str or None, got 3"),
        (lambda t: lumos.read_trace(t).replay(deps=[None]), "deps: expected a str, got None"),
        (lambda t: lumos.diff(t, t, steps=1), "steps: expected a str or None, got 1"),
        (lambda t: lumos.diff(t, t, min_change_us="1"), "min_change_us: expected a number, got '1'"),
        (lambda t: lumos.diff(t, t, min_change_pct=None),
         "min_change_pct: expected a number, got None"),
    ],
)
def test_arguments_of_the_wrong_kind_are_config_errors(corpus, call, text):
    # Each was the extension's TypeError ("'int' object is not an instance
    # of 'str'"), or taken by its truth value.
    trace = str(corpus / "micro" / "a100-simple-add.json.gz")
    with pytest.raises(ConfigError) as e:
        call(trace)
    assert str(e.value).startswith(text)


def test_wrong_kinds_of_job_and_synth_arguments_are_config_errors(corpus, tmp_path):
    job = lumos.load_job(corpus / "multi-rank" / "dlrm-8xv100", progress=False)
    with pytest.raises(ConfigError, match="scale_rank_cpu: expected True or False, got 'yes'"):
        job.replay(scale_rank={3: 2.0}, scale_rank_cpu="yes")
    for kw, text in [
        (dict(gpu=None), "gpu: expected a str, got None"),
        (dict(ranks=1), "ranks: expected a str, got 1"),
        (dict(recompute=1), "recompute: expected a str or None, got 1"),
        (dict(sequence_parallel="no"), "sequence_parallel: expected True or False, got 'no'"),
        (dict(stream_waits=0), "stream_waits: expected True or False, got 0"),
    ]:
        with pytest.raises(ConfigError, match=text):
            lumos.synth("gpt-tiny", tmp_path, progress=False, **kw)
    assert not any(tmp_path.iterdir())
    # numpy's bools are bools.
    assert lumos.synth("gpt-tiny", tmp_path, stream_waits=np.False_, progress=False)


def test_the_last_progress_call_says_the_work_is_done(corpus):
    # The call made once the work has ended said ("replaying", 0, 1) for a
    # job's joint replay (and "assembling" 0 of 1 for load_job): a
    # callback, or a bar, was left at nothing done.
    job = corpus / "multi-rank" / "dlrm-8xv100"
    trace = corpus / "single-rank" / "a100-alexnet-cuda-sync.json.gz"
    for name, call in [
        ("replay", lambda cb: lumos.replay(job, progress=cb)),
        ("representatives", lambda cb: lumos.replay(job, representatives=True, progress=cb)),
        ("load_job", lambda cb: lumos.load_job(job, progress=cb)),
        ("inspect", lambda cb: lumos.inspect(job, progress=cb)),
        ("durations_from", lambda cb: lumos.durations_from(trace, trace, progress=cb)),
    ]:
        calls = []
        call(lambda phase, done, total: calls.append((phase, done, total)))
        phase, done, total = calls[-1]
        assert done == total > 0, (name, calls)


def test_type_hints_admit_what_the_functions_take():
    # The hints said scale_rank was a Mapping and a path str or PathLike
    # only, where the docs (and the functions) take (rank, factor) pairs
    # and bytes: mypy refused documented calls.
    import typing

    for f in (lumos.replay, lumos.Job.replay):
        hint = typing.get_type_hints(f)["scale_rank"]
        assert typing.Iterable[typing.Tuple[int, float]] in typing.get_args(hint), hint
    assert bytes in typing.get_args(typing.get_type_hints(lumos.read_trace)["path"])
    from lumos import distributed

    # A path where a list of paths goes (load("lg")), as everywhere else.
    assert str in typing.get_args(typing.get_type_hints(distributed.load)["paths"])


def test_column_descriptions_are_the_docs():
    # lumos.frames.COLUMNS said `flagged` was "signs of events dropped by
    # the profiler" where PYTHON.md (and the report) also count repeated
    # ids and skewed clocks.
    import re
    from pathlib import Path

    from lumos.frames import COLUMNS

    doc = (Path(__file__).resolve().parents[2] / "docs" / "PYTHON.md").read_text()
    for name, cols in COLUMNS.items():
        section = doc.split(f"**`{name}`**", 1)[1].split("**`", 1)[0]
        rows = dict(re.findall(r"^\| `(\w+)` \| (.*) \|$", section, re.M))
        for col, text in cols.items():
            assert rows[col] == (text or "(as above)"), (name, col)


def test_a_model_dict_takes_numpy_scalars(tmp_path):
    # A model read from a DataFrame row holds np.int64: it was refused as
    # "model: layers is np.int64(2), not a JSON number, string or bool".
    plain = {"layers": 2, "hidden": 64, "heads": 2, "swiglu": True}
    numpy = {"layers": np.int64(2), "hidden": np.int32(64), "heads": 2, "swiglu": np.True_}
    by_np = lumos.synth(numpy, tmp_path / "np", progress=False)
    by_py = lumos.synth(plain, tmp_path / "py", progress=False)
    assert [gzip.decompress(open(f, "rb").read()) for f in by_np] == [
        gzip.decompress(open(f, "rb").read()) for f in by_py
    ]
    # An array is no number, NaN still none.
    for bad in (np.array([2]), np.float64("nan")):
        with pytest.raises(ConfigError, match="model: heads is"):
            lumos.synth({**plain, "heads": bad}, tmp_path / "bad", progress=False)


def test_an_lgraph_where_a_trace_is_needed_is_a_config_error(corpus, tmp_path, cli_error):
    # diff and read_trace of an .lgraph file were an InputError saying
    # "give its path (a compact graph is recognised in a file, not through
    # a pipe)", to a caller who had given its path; the CLI's diff says the
    # file is the wrong kind (exit 2). durations_from takes one, as
    # --durations-from does (test_durations_from_takes_compact_graphs...).
    from lumos import distributed

    trace = str(corpus / "single-rank" / "a100-alexnet-cuda-sync.json.gz")
    lg = distributed.ingest_rank(trace, tmp_path)
    code, message = cli_error(["diff", lg, trace])
    assert code == 2
    for a, b in ((lg, trace), (trace, lg)):
        with pytest.raises(ConfigError) as e:
            lumos.diff(a, b, progress=False)
        assert str(e.value) == message == f"{lg}: lumos diff needs traces, not .lgraph files"
    for call in (lumos.read_trace, lumos.read_traces):
        with pytest.raises(ConfigError, match="an .lgraph file, not a trace"):
            call(lg)
    # A missing file is still the I/O error, whatever its name.
    with pytest.raises(lumos.LumosIOError):
        lumos.read_trace(str(tmp_path / "missing.lgraph"))


@pytest.mark.skipif(sys.platform != "linux", reason="names that are not UTF-8: Linux file systems")
def test_a_file_name_that_is_not_utf8_opens_the_same_file(corpus, tmp_path, cli_json):
    # Paths came back from the extension as display strings (U+FFFD for
    # the byte 0xff): replay(b".../tr\xff.json.gz") said "cannot read
    # file: No such file", and synth's and ingest_rank's returned paths
    # named no file.
    import os
    import shutil

    src = corpus / "micro" / "a100-simple-add.json.gz"
    bad = os.fsencode(tmp_path) + b"/tr\xff.json.gz"
    shutil.copy(src, bad)
    want = cli_json(["replay", str(src)])["traces"][0]["window"]
    assert lumos.replay(bad, progress=False).report["traces"][0]["window"] == want
    assert lumos.replay(os.fsdecode(bad), progress=False).report["traces"][0]["window"] == want
    assert lumos.inspect(bad, progress=False).files["events"].iloc[0] > 0
    out = os.fsencode(tmp_path) + b"/out\xfe"
    for f in lumos.synth("gpt-tiny", out, progress=False):
        assert os.path.isfile(f)
    from lumos import distributed

    assert os.path.isfile(distributed.ingest_rank(bad, out))


def test_durations_from_takes_compact_graphs_as_the_cli_does(corpus, tmp_path, cli_json):
    # `lumos replay A.lgraph --durations-from B.lgraph` worked, where
    # durations_from refused either file as "durations_from needs traces,
    # not .lgraph files". Both now call lumos_report::transfer_files.
    from lumos.distributed import ingest_rank

    a = str(corpus / "single-rank" / "v100-resnet50-2021-capture-a.json.gz")
    b = str(corpus / "single-rank" / "v100-resnet50-2021-capture-b.json.gz")
    la, lb = ingest_rank(a, tmp_path), ingest_rank(b, tmp_path)
    traces = lumos.durations_from(a, b, progress=False)
    assert traces.matched["share"] > 0.999
    for x, y in ((la, b), (a, lb), (la, lb)):
        cli = cli_json(["replay", x, "--durations-from", y])
        t = lumos.durations_from(x, y, progress=False)
        assert t.report == cli == traces.report, (x, y)
        # The frame holds the CLI's steps, row for row.
        steps = t.steps
        assert list(steps["step"]) == [s["name"] for s in cli["steps"]]
        assert list(steps["predicted_us"]) == [s["predicted_us"] for s in cli["steps"]]
        assert list(steps["b_measured_us"]) == [s["b"]["measured_us"] for s in cli["steps"]]
    # A directory is still one file too many.
    with pytest.raises(ConfigError, match="give one trace file, not a directory"):
        lumos.durations_from(la, tmp_path, progress=False)


def _not_utf8(corpus, folder, stems=(b"tr\xff", b"tr\xfe")):
    """Copies of a corpus trace named with bytes that are not UTF-8, in
    ``folder``; their paths as bytes."""
    import shutil

    os_folder = os.fsencode(folder)
    os.makedirs(os_folder, exist_ok=True)
    trace = corpus / "single-rank" / "a100-alexnet-cuda-sync.json.gz"
    paths = [os.path.join(os_folder, s + b".json.gz") for s in stems]
    for p in paths:
        # Copies: two links to one file are one file given twice.
        shutil.copyfile(trace, p)
    return paths


@pytest.mark.skipif(sys.platform != "linux", reason="names that are not UTF-8: Linux file systems")
def test_names_that_are_not_utf8_keep_their_bytes(corpus, tmp_path):
    # `tr\xff.json.gz` and `tr\xfe.json.gz` were both ingested as
    # `tr\ufffd.lgraph` (ingest refused them as one name).
    from lumos import distributed

    paths = _not_utf8(corpus, tmp_path / "traces")
    assert [os.fsencode(distributed._lumos.ingest_name(os.fsdecode(p))) for p in paths] == [
        b"tr\xff.lgraph",
        b"tr\xfe.lgraph",
    ]
    distributed._distinct_names([os.fsdecode(p) for p in paths])
    out = os.fsencode(tmp_path / "lg")
    written = [distributed.ingest_rank(p, out) for p in paths]
    assert sorted(os.listdir(out)) == [b"tr\xfe.lgraph", b"tr\xff.lgraph"]
    assert [os.fsencode(w) for w in written] == [
        os.path.join(out, b"tr\xff.lgraph"),
        os.path.join(out, b"tr\xfe.lgraph"),
    ]
    # Read back, each is its trace.
    assert lumos.replay(written[0], progress=False).report == lumos.replay(
        paths[0], progress=False
    ).report


@pytest.mark.skipif(sys.platform != "linux", reason="names that are not UTF-8: Linux file systems")
def test_a_folder_lists_names_that_are_not_utf8_as_the_cli(corpus, tmp_path, cli_json):
    # The CLI and the package both left `tr\xff.json.gz` out of a folder
    # (lumos_trace::trace_files_under read its name as ""): a folder of
    # only such traces had "no trace files", though each, given by its
    # path, was read.
    folder = tmp_path / "traces"
    paths = _not_utf8(corpus, folder, stems=(b"tr\xff",))
    assert [os.fsencode(f) for f in lumos._lumos.expand([str(folder)], True)] == paths
    r = lumos.replay(folder, progress=False)
    assert r.report == cli_json(["replay", str(folder)])
    assert r.report == lumos.replay(paths[0], progress=False).report


@pytest.mark.skipif(sys.platform != "linux", reason="names that are not UTF-8: Linux file systems")
def test_load_job_of_a_folder_and_its_lgraph_files_keep_names_that_are_not_utf8(
    corpus, tmp_path, cli_json
):
    # load_job of a folder lists `tr\xff.json.gz` as the CLI's `inspect`
    # of the folder does (both went through lumos_trace::trace_files_under,
    # which left it out). Its .lgraph file named its trace `tr\ufffd.json.gz`
    # (format 4 stored the path as UTF-8 text), so Job.paths named no
    # file; format 5 keeps the bytes.
    from lumos.distributed import ingest_rank

    folder = tmp_path / "traces"
    (path,) = _not_utf8(corpus, folder, stems=(b"tr\xff",))
    job = lumos.load_job(folder, progress=False)
    assert [os.fsencode(p) for p in job.paths] == [path]
    # The CLI lists the same one file (its JSON shows names as text).
    cli = cli_json(["inspect", str(folder)])
    assert [t["path"] for t in cli["traces"]] == [path.decode("utf-8", "replace")]
    lg = os.fsencode(tmp_path / "lg")
    written = ingest_rank(path, lg)
    from_lgraph = lumos.load_job(os.fsdecode(lg), progress=False)
    assert [os.fsencode(p) for p in from_lgraph.paths] == [path]
    assert os.path.isfile(from_lgraph.paths[0])
    assert os.fsencode(written) == os.path.join(lg, b"tr\xff.lgraph")


@pytest.mark.skipif(sys.platform != "linux", reason="names that are not UTF-8: Linux file systems")
def test_a_rank_is_read_from_a_name_that_is_not_utf8(corpus, tmp_path, cli_json):
    # mi250-toy-train records no rank: `n_rank3.json.gz` is rank 3 by its
    # name, and `n\xff_rank3.json.gz` was rank 0 (the name was not read),
    # in the CLI and the package alike (lumos_trace::rank_from_file_name).
    import shutil

    trace = corpus / "single-rank" / "mi250-toy-train.json.gz"
    path = os.path.join(os.fsencode(tmp_path), b"n\xff_rank3.json.gz")
    shutil.copyfile(trace, path)
    with pytest.warns(UserWarning, match="ranks have no file: 0, 1, 2"):
        assert lumos.load_job(path, progress=False).ranks == [3]
    (cli,) = cli_json(["inspect", os.fsdecode(path)])["traces"]
    assert (cli["rank"], cli["rank_source"]) == (3, "file_name")
