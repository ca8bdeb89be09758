"""Errors are lumos.LumosError subclasses carrying the CLI's messages."""

from __future__ import annotations

import gzip
import json
import os
import re
import sys

import pytest

import lumos
from lumos import ConfigError, InputError, LumosError, LumosIOError


def test_a_missing_file_is_an_io_error_with_the_cli_message(tmp_path, cli_error):
    missing = str(tmp_path / "missing.json")
    code, message = cli_error(["replay", missing])
    with pytest.raises(LumosIOError) as e:
        lumos.replay(missing, progress=False)
    assert code == 1
    assert str(e.value) == message
    assert isinstance(e.value, OSError) and isinstance(e.value, LumosError)
    # One file is inspected as it is read, as replayed: the same error.
    with pytest.raises(LumosIOError) as e:
        lumos.inspect(missing, progress=False)
    assert str(e.value) == message


@pytest.mark.parametrize(
    "content",
    [b"", b'{"traceEvents": [', b'{"traceEvents": [{"ph": "X",}]}', b"42", b"\x1f\x8b\x08garbage"],
)
def test_bad_traces_are_input_errors_with_the_cli_message(tmp_path, cli_error, content):
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    code, message = cli_error(["replay", str(bad)])
    with pytest.raises(InputError) as e:
        lumos.replay(str(bad), progress=False)
    assert code == 1
    assert str(e.value) == message
    with pytest.raises(InputError):
        lumos.read_trace(str(bad))
    with pytest.raises(InputError) as e:
        lumos.inspect(str(bad), progress=False)
    assert str(e.value) == cli_error(["inspect", str(bad)])[1]


def test_a_folder_without_traces_is_an_input_error(tmp_path, cli_error):
    code, message = cli_error(["inspect", str(tmp_path)])
    # The same error: `lumos.inspect` and `lumos.replay` take .lgraph files
    # too, as the CLI.
    assert code == 1
    assert message == (
        f"{tmp_path}: directory has no trace files (*.json, *.json.gz, *.lgraph), "
        "sub-folders included"
    )
    for f in (lumos.inspect, lumos.replay):
        with pytest.raises(InputError) as e:
            f(str(tmp_path))
        assert str(e.value) == message


def test_two_files_claiming_one_rank_are_an_input_error(tmp_path, corpus, cli_error):
    src = corpus / "multi-rank" / "dlrm-8xv100"
    first = sorted(src.iterdir())[0]
    for name in ("a.json.gz", "b.json.gz"):
        (tmp_path / name).write_bytes(first.read_bytes())
    code, message = cli_error(["replay", "--job", str(tmp_path)])
    with pytest.raises(InputError) as e:
        lumos.load_job(str(tmp_path), progress=False)
    assert code == 1
    assert str(e.value) == message
    # A prediction refuses them too, with the CLI's message.
    code, message = cli_error(["predict", str(tmp_path), "--dp", "16"])
    with pytest.raises(InputError) as e:
        lumos.predict(str(tmp_path), dp=16, progress=False)
    assert code == 1
    assert "both claim rank 0" in message
    assert str(e.value) == message


def test_one_file_given_twice_is_a_config_error_with_the_cli_message(tmp_path, corpus, cli_error):
    # Read twice, it was counted twice (replay) or two ranks claiming one
    # (predict, load_job): however it is given twice, it is refused before
    # anything is read, as the CLI refuses it (exit 2).
    job = tmp_path / "job"
    job.mkdir()
    f = job / "rank0.json.gz"
    f.write_bytes((corpus / "micro" / "a100-simple-add.json.gz").read_bytes())
    (job / "rank1.json.gz").write_bytes((corpus / "micro" / "a100-event-sync.json.gz").read_bytes())
    link = tmp_path / "link.json.gz"
    os.symlink(f, link)
    why = "; each trace is one rank, give it once"
    for paths, want in [
        ([f, f], f"{f} is given twice{why}"),
        ([str(job) + "/./rank0.json.gz", f], f"{job}/./rank0.json.gz is given twice "
         f"(as {job}/./rank0.json.gz and as {f}){why}"),
        ([job, f], f"{f} is given twice (in {job} and as {f}){why}"),
        ([f, link], f"{f} is given twice (as {f} and as {link}){why}"),
    ]:
        paths = [str(p) for p in paths]
        code, message = cli_error(["replay", *paths])
        assert (code, message) == (2, want)
        for call in (lumos.replay, lumos.inspect, lumos.read_traces, lumos.load_job,
                     lambda p, progress: lumos.replay(p, representatives=True, progress=progress),
                     lambda p, progress: lumos.predict(p, dp=2, progress=progress)):
            with pytest.raises(ConfigError) as e:
                call(paths, progress=False)
            assert str(e.value) == message
    with pytest.raises(ConfigError) as e:
        lumos.distributed.load([str(f), str(link)], progress=False)
    assert str(e.value) == f"{f} is given twice (as {f} and as {link}){why}"
    # Each given once, both are read; a file compared with itself is no
    # change.
    assert len(lumos.read_traces(str(job), progress=False)) == 2
    lumos.diff(str(f), str(link))


@pytest.mark.parametrize(
    "kwargs, text",
    [
        ({"scale_kernels": 0}, "scale_kernels: must be a number from 1e-6 to 1e6, got 0"),
        ({"scale_kernels": float("nan")},
         "scale_kernels: must be a number from 1e-6 to 1e6, got nan"),
        ({"scale_kernels": 1e300}, "scale_kernels: must be a number from 1e-6 to 1e6, got 1e+300"),
        ({"scale_only": "gpu", "scale_kernels": 2}, "scale_only: unknown value `gpu`"),
        ({"deps": ["no-such"]}, "deps: unknown value `no-such`"),
        ({"scale_rank_cpu": True}, "scale_rank_cpu needs scale_rank"),
        ({"scale_rank": 3}, "scale_rank: expected {rank: factor} or (rank, factor) pairs, got 3"),
        ({"deps": 3}, "deps: expected a list of dependency kinds, got 3"),
    ],
)
def test_bad_options_are_config_errors(corpus, kwargs, text):
    path = str(corpus / "micro" / "a100-simple-add.json.gz")
    with pytest.raises(ConfigError) as e:
        lumos.replay(path, progress=False, **kwargs)
    assert text in str(e.value)
    assert isinstance(e.value, ValueError)


def test_a_rank_the_job_lacks_is_a_config_error_naming_the_cli_text(corpus, cli_error):
    job = str(corpus / "multi-rank" / "dlrm-8xv100")
    code, message = cli_error(["replay", job, "--scale-rank", "9=2"])
    with pytest.raises(ConfigError) as e:
        lumos.replay(job, scale_rank={9: 2.0}, progress=False)
    assert code == 2
    # The CLI names its flag (--scale-rank), the API its argument.
    assert message.startswith("--scale-rank 9=2: ")
    assert str(e.value) == message[2:].replace("scale-rank", "scale_rank", 1)
    single = str(corpus / "micro" / "a100-simple-add.json.gz")
    with pytest.raises(ConfigError, match="scale_rank needs the ranks of one job"):
        lumos.replay(single, scale_rank={0: 2.0}, progress=False)


def test_a_misspelt_key_in_a_network_or_model_file_is_an_input_error(
    tmp_path, corpus, cli_error
):
    # The preset's value, or the model's default, would be taken silently.
    trace = str(corpus / "micro" / "a100-simple-add.json.gz")
    net = tmp_path / "net.json"
    net.write_text('{"inter_node": {"bandwidth": 100}}')
    code, message = cli_error(["predict", "--network", str(net), trace])
    assert code == 1 and 'unknown key "bandwidth" in "inter_node"' in message
    with pytest.raises(InputError) as e:
        lumos.predict(trace, network=str(net), progress=False)
    assert str(e.value) == message
    model = {"layers": 2, "hidden": 64, "heads": 2, "seq_length": 128}
    # A dict is an option, as a preset's name is: a ConfigError.
    with pytest.raises(ConfigError, match='^model: unknown key "seq_length" in the model '):
        lumos.synth(model, tmp_path / "out")
    # The file with the same object is bad input, as in the CLI.
    (tmp_path / "m.json").write_text(json.dumps(model))
    code, message = cli_error(["synth", "--model", str(tmp_path / "m.json"), "--out", str(tmp_path / "o")])
    assert code == 1 and 'unknown key "seq_length" in the model' in message
    with pytest.raises(InputError) as e:
        lumos.synth(str(tmp_path / "m.json"), tmp_path / "out")
    assert str(e.value) == message


def test_a_kernel_speed_up_that_selects_nothing_is_a_config_error(tmp_path, cli_error):
    # It would change nothing without a word.
    (trace,) = lumos.synth("gpt-tiny", tmp_path)
    code, message = cli_error(["replay", "--scale-kernels", "GEMM=0.5", str(trace)])
    assert code == 2 and "selects no GPU task in" in message
    with pytest.raises(ConfigError) as e:
        lumos.replay(str(trace), scale_kernels={"GEMM": 0.5}, progress=False)
    assert str(e.value) == message
    with pytest.raises(ConfigError, match="class:comm=0.5 selects no GPU task"):
        lumos.predict(str(trace), scale_kernels={"class:comm": 0.5}, progress=False)
    # The deprecated bare factor picks kernels the same way, and is checked too.
    code, message = cli_error(
        ["replay", "--scale-kernels", "0.5", "--scale-pattern", "GEMM", str(trace)]
    )
    assert code == 2 and "GEMM=0.5 selects no GPU task in" in message
    with pytest.raises(ConfigError) as e:
        lumos.replay(str(trace), scale_kernels=0.5, scale_pattern="GEMM", progress=False)
    assert str(e.value) == message
    with pytest.raises(ConfigError, match="class:comm=0.5 selects no GPU task"):
        lumos.replay(str(trace), scale_kernels=0.5, scale_only="comm", progress=False)
    # Representatives take only the bare form, and apply it unchecked.
    r = lumos.replay(str(trace), representatives=True, scale_kernels=0.5,
                     scale_pattern="GEMM", progress=False)
    assert len(r.job_steps) > 0
    with pytest.raises(ConfigError, match="representatives takes a bare scale_kernels"):
        lumos.replay(str(trace), representatives=True, scale_kernels={"gemm": 0.5},
                     progress=False)


def test_a_kernel_pattern_given_twice_is_a_config_error(tmp_path, cli_error):
    # Its factors would be multiplied, past the range each is checked against.
    (trace,) = lumos.synth("gpt-tiny", tmp_path)
    twice = ["--scale-kernels", "class:gemm=2", "--scale-kernels", "class:gemm=3"]
    code, message = cli_error(["replay", *twice, str(trace)])
    assert code == 2 and "--scale-kernels names pattern class:gemm twice" in message
    want = message.replace("--scale-kernels", "scale_kernels")
    with pytest.raises(ConfigError) as e:
        lumos.replay(str(trace), scale_kernels=["class:gemm=2", "class:gemm=3"], progress=False)
    assert str(e.value) == want
    with pytest.raises(ConfigError) as e:
        lumos.predict(str(trace), scale_kernels=["class:gemm=2", "class:gemm=3"], progress=False)
    assert str(e.value) == want
    # A name and a class are two patterns.
    lumos.replay(str(trace), scale_kernels=["gemm=2", "class:gemm=3"], progress=False)


def test_bad_predict_and_synth_options_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="^dp: must be a whole number from 1 to 65536, got 0$"):
        lumos.predict(str(tmp_path / "x.json"), dp=0)
    with pytest.raises(ConfigError, match="network: "):
        lumos.predict(str(tmp_path / "x.json"), network="no-such-gpu")
    # As `--durations-from DIR`: one recording, not a folder of them.
    with pytest.raises(ConfigError, match="give one trace file, not a directory"):
        lumos.predict(str(tmp_path / "x.json"), durations_from=str(tmp_path))
    with pytest.raises(ConfigError, match="model: "):
        lumos.synth("gpt-huge", tmp_path)
    with pytest.raises(ConfigError):
        lumos.synth("gpt-tiny", tmp_path, tp=0)
    with pytest.raises(ConfigError, match="ranks: unknown value"):
        lumos.synth("gpt-tiny", tmp_path, ranks="some")
    with pytest.raises(ConfigError, match="recompute: \"most\" is not none"):
        lumos.synth("gpt-tiny", tmp_path, recompute="most")
    with pytest.raises(ConfigError, match="precision: "):
        lumos.synth("gpt-tiny", tmp_path, precision="fp4")
    with pytest.raises(ConfigError, match="cluster: "):
        lumos.synth("gpt-tiny", tmp_path, cluster="no-such-cluster")
    with pytest.raises(ConfigError, match="global_batch 7 is not a multiple"):
        lumos.synth("gpt-tiny", tmp_path, dp=2, global_batch=7)


def test_errors_name_the_file(tmp_path):
    bad = tmp_path / "broken.json.gz"
    bad.write_bytes(gzip.compress(b'{"traceEvents": [{"ph": "X", "ts": '))
    with pytest.raises(InputError, match="broken.json.gz"):
        lumos.replay(str(bad), progress=False)


@pytest.mark.parametrize("content", [
    '{"layers": 2, "hidden": 512}',
    '{"layers": 2, "hidden": 512, "heads": 0}',
    '{"layers": 2, "hidden": 512, "heads": 8, "swiglu": 1}',
    '{"layers": 2,',
], ids=["missing", "range", "swiglu", "json"])
def test_a_bad_model_file_is_an_input_error_with_the_cli_message(tmp_path, cli_error, content):
    model = tmp_path / "model.json"
    model.write_text(content)
    code, message = cli_error(["synth", "--model", str(model), "--out", str(tmp_path / "o")])
    with pytest.raises(InputError) as e:
        lumos.synth(model, tmp_path / "p")
    assert code == 1
    assert str(e.value) == message


def test_synth_refuses_what_the_cli_refuses(tmp_path):
    with pytest.raises(ConfigError, match="microbatches and global_batch"):
        lumos.synth("gpt-tiny", tmp_path, microbatches=4, global_batch=8)
    with pytest.raises(ConfigError, match="GB of JSON"):
        lumos.synth("gpt3-175b", tmp_path, pp=1, microbatches=65536, steps=100)
    with pytest.raises(ConfigError, match="at most 1048576"):
        lumos.synth("gpt-tiny", tmp_path, tp=1024, dp=2048)
    with pytest.raises(ConfigError, match="no such GPU holds this model"):
        lumos.synth("gpt3-175b", tmp_path, tp=2, pp=2)
    assert not any(tmp_path.iterdir())


def test_synth_into_a_file_is_a_config_error_with_the_cli_message(tmp_path, cli_error):
    # Not the bare "cannot write: File exists (os error 17)" of an I/O error.
    taken = tmp_path / "f"
    taken.write_text("x")
    for out in (taken, taken / "below"):
        code, message = cli_error(["synth", "--model", "gpt-tiny", "--out", str(out)])
        assert code == 2 and "is not a directory" in message
        with pytest.raises(ConfigError) as e:
            lumos.synth("gpt-tiny", out)
        # The CLI names its flag (--out), the API its argument.
        assert str(e.value) == message.replace("--out", "out")
    assert taken.read_text() == "x"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the guard reads /proc")
def test_a_job_past_the_memory_limit_is_an_input_error_with_the_cli_message(
    tmp_path, cli_error, monkeypatch
):
    # Reading every rank of a job that would outgrow the machine stops with
    # the CLI's message, where the kernel would kill the interpreter.
    lumos.synth("gpt-tiny", tmp_path, pp=2, dp=4, ranks="all", steps=2, seed=1)
    monkeypatch.setenv("LUMOS_MEMORY_LIMIT", "1M")
    code, message = cli_error(["replay", str(tmp_path)])
    assert code == 1 and "inputs not read" in message
    with pytest.raises(InputError) as e:
        lumos.replay(str(tmp_path), progress=False)
    # The same words; the sizes and counts are each process's own.
    digits = lambda m: re.sub(r"[0-9.]+", "N", m)
    assert digits(str(e.value)) == digits(message)
    # A prediction's way out is fewer traces.
    code, message = cli_error(["predict", "--dp", "2", str(tmp_path)])
    assert code == 1 and "one trace per pipeline stage" in message
    with pytest.raises(InputError) as e:
        lumos.predict(str(tmp_path), dp=2, progress=False)
    assert digits(str(e.value)) == digits(message)
    monkeypatch.setenv("LUMOS_MEMORY_LIMIT", "lots")
    with pytest.raises(ConfigError, match="LUMOS_MEMORY_LIMIT"):
        lumos.replay(str(tmp_path), progress=False)


_REFUSED_REPLAY = """
import os, sys, lumos
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) * 1024
job, how = sys.argv[1], sys.argv[2]
try:
    if how == "replay":
        # The 16 ranks take about 215 MiB once read by two threads (more
        # threads hold more at once), and their replay at least 76 MiB
        # more: 245 MiB lets the read through, not the replay.
        os.environ["LUMOS_MEMORY_LIMIT"] = str(rss() + (245 << 20))
        lumos.replay(job, progress=False)
    else:
        j = lumos.load_job(job, progress=False)
        # A replay that keeps the job needs at least 229 MiB more.
        os.environ["LUMOS_MEMORY_LIMIT"] = str(rss() + (120 << 20))
        j.replay()
    print("replayed")
except lumos.InputError as e:
    print("InputError:", e)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the guard reads /proc")
def test_a_joint_replay_past_the_memory_limit_is_refused_before_it_starts(tmp_path):
    # In a fresh interpreter each, so that the resident size is this
    # read's, and with two threads whatever the machine.
    import os
    import subprocess

    lumos.synth("gpt3-175b", tmp_path, tp=8, pp=2, microbatches=4, ranks="all", seed=1)
    for how in ["replay", "job"]:
        p = subprocess.run(
            [sys.executable, "-c", _REFUSED_REPLAY, str(tmp_path), how],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "RAYON_NUM_THREADS": "2"},
        )
        assert p.returncode == 0, p.stderr
        assert p.stdout.startswith("InputError: stopped before replaying 16 ranks together"), (
            how,
            p.stdout,
        )


def test_an_empty_list_of_traces_is_a_config_error(cli_error):
    # As a command without its trace argument is bad usage in the CLI.
    code, _ = cli_error(["replay"])
    assert code == 2
    for call in (lumos.replay, lumos.inspect):
        with pytest.raises(ConfigError, match="^no input traces given$"):
            call([], progress=False)
    with pytest.raises(ConfigError, match="^no input traces given$"):
        lumos.predict([], dp=2, progress=False)
    with pytest.raises(ConfigError, match="^no input traces given$"):
        lumos.distributed.load([], progress=False)


V = "single-rank/v100-ddp-rank1of2-allreduce.json.gz"
JOB = "multi-rank/dlrm-8xv100"


def _cli_tail(message: str) -> str:
    """What clap says of a value after naming it and its flag
    (`invalid value '65537' for '--dp <DP>': must be ...`)."""
    assert message.startswith("invalid value '"), message
    return message.split("': ", 1)[1]


@pytest.mark.parametrize("cli, call, argument", [
    (["predict", V, "--dp", "65537"], lambda v, j: lumos.predict(v, dp=65537), "dp"),
    (["predict", V, "--microbatches", "0"], lambda v, j: lumos.predict(v, microbatches=0),
     "microbatches"),
    (["predict", V, "--ffn", "1048577"], lambda v, j: lumos.predict(v, ffn=1048577), "ffn"),
    (["predict", V, "--scale-kernels", "class:compute=0"],
     lambda v, j: lumos.predict(v, scale_kernels={"class:compute": 0}),
     "scale_kernels class:compute=0"),
    (["replay", V, "--scale-kernels", "class:compute=1e7"],
     lambda v, j: lumos.replay(v, scale_kernels=["class:compute=1e7"]),
     "scale_kernels class:compute=1e7"),
    (["replay", V, "--scale-kernels", "0"], lambda v, j: lumos.replay(v, scale_kernels=0),
     "scale_kernels"),
])
def test_numbers_outside_the_cli_ranges_are_config_errors(corpus, cli_error, cli, call,
                                                          argument):
    """The CLI's ranges (`lumos_report::range`, the same checks): what it
    refuses (exit 2) is a ConfigError naming the argument, with its words,
    before any file is read."""
    cli = [str(corpus / a) if a in (V, JOB) else a for a in cli]
    code, message = cli_error(cli)
    assert code == 2
    with pytest.raises(ConfigError) as e:
        call(str(corpus / V), str(corpus / JOB))
    assert str(e.value) == f"{argument}: {_cli_tail(message)}"


def test_factors_and_counts_past_the_cli_ranges_give_no_numbers(tmp_path, corpus, cli_error):
    v, job = str(corpus / V), str(corpus / JOB)
    code, message = cli_error(["replay", job, "--scale-rank", "3=1e9"])
    assert code == 2 and _cli_tail(message) == "factor must be a number from 1e-6 to 1e6, got 1e9"
    with pytest.raises(ConfigError) as e:
        lumos.load_job(job, progress=False).replay(scale_rank={3: 1e9})
    assert str(e.value) == (
        "scale_rank 3=1000000000.0: factor must be a number from 1e-6 to 1e6, got 1000000000.0")
    # A factor too big to scale a duration is the option's fault, not the trace's.
    with pytest.raises(ConfigError, match="^scale_kernels: must be a number from 1e-6 to 1e6"):
        lumos.replay(v, scale_kernels=1e300, progress=False)
    for bad in (0, -1.0, float("inf"), float("nan"), 10 ** 400):
        with pytest.raises(ConfigError, match="must be a number from 1e-6 to 1e6"):
            lumos.replay(v, scale_kernels={"class:compute": bad}, progress=False)
    with pytest.raises(ConfigError, match="^dp: must be a whole number from 1 to 65536, got 65537$"):
        lumos.synth("gpt-tiny", tmp_path, dp=65537)
    with pytest.raises(ConfigError, match="^steps: must be a whole number from 2 to 65536, got 1$"):
        lumos.synth("gpt-tiny", tmp_path, steps=1)
    with pytest.raises(ConfigError, match="^micro_batch: must be a whole number from 1 to 65536"):
        lumos.synth("gpt-tiny", tmp_path, micro_batch=65537)
    assert not any(tmp_path.iterdir())
    # The bounds themselves are taken, as by the CLI.
    lumos.predict(v, dp=1, scale_kernels={"class:compute": 1e-6}, progress=False)


def test_scale_only_and_scale_pattern_without_a_bare_factor_are_config_errors(corpus, cli_error):
    """They apply to a bare factor only: without one the CLI refuses them
    (exit 2) rather than ignore them, and so does the package."""
    v = str(corpus / V)
    code, message = cli_error(["replay", v, "--scale-only", "comm", "--scale-pattern", "nccl"])
    assert code == 2 and "apply to a bare --scale-kernels FACTOR" in message
    want = ("scale_only and scale_pattern apply to a bare scale_kernels factor; "
            "use scale_kernels={pattern: factor} instead")
    for kwargs in ({"scale_only": "comm", "scale_pattern": "nccl"},
                   {"scale_kernels": {"class:compute": 0.5}, "scale_only": "comm"},
                   {"scale_pattern": "nccl"}):
        with pytest.raises(ConfigError) as e:
            lumos.replay(v, progress=False, **kwargs)
        assert str(e.value) == want
    code, _ = cli_error(["replay", v, "--scale-kernels", "class:compute=0.5", "--scale-only", "comm"])
    assert code == 2
    with pytest.raises(ConfigError, match="apply to a bare scale_kernels factor"):
        lumos.load_job(str(corpus / JOB), progress=False).replay(scale_only="compute")


def test_read_trace_of_a_directory_is_a_config_error(tmp_path, corpus):
    """One trace is asked for: a folder is refused before anything is read,
    not answered with its first file."""
    folder = corpus / JOB
    with pytest.raises(ConfigError) as e:
        lumos.read_trace(folder, progress=False)
    assert str(e.value).startswith(f"{folder}: a directory; read_trace reads one trace file")
    assert "load_job" in str(e.value)
    assert len(lumos.read_traces(str(folder), progress=False)) == 8


@pytest.mark.parametrize("call, text", [
    (lambda v, j, o: lumos.predict(v, dp=-1), "dp: must be a whole number from 1 to 65536, got -1"),
    (lambda v, j, o: lumos.predict(v, microbatches=-3),
     "microbatches: must be a whole number from 1 to 65536, got -3"),
    (lambda v, j, o: lumos.predict(v, dp=2 ** 40),
     "dp: must be a whole number from 1 to 65536, got 1099511627776"),
    (lambda v, j, o: lumos.predict(v, ffn=-1), "ffn: must be a whole number from 1 to 1048576, got -1"),
    (lambda v, j, o: lumos.predict(v, dp=4.0), "dp: must be a whole number from 1 to 65536, got 4.0"),
    (lambda v, j, o: lumos.synth("gpt-tiny", o, tp=-1),
     "tp: must be a whole number from 1 to 65536, got -1"),
    (lambda v, j, o: lumos.synth("gpt-tiny", o, steps=-1),
     "steps: must be a whole number from 2 to 65536, got -1"),
    (lambda v, j, o: lumos.synth("gpt-tiny", o, seed=-1),
     "seed: must be a whole number from 0 to 18446744073709551615, got -1"),
    (lambda v, j, o: lumos.replay(j, scale_rank={-1: 2}), "scale_rank -1=2: `-1` is not a rank number"),
    (lambda v, j, o: lumos.replay(j, scale_rank=[(3, 2), (3, 1.5)]),
     "scale_rank names rank 3 twice; give each rank one factor"),
    # The first repeat in the order given, as --scale-rank names it (not
    # the lowest rank repeated).
    (lambda v, j, o: lumos.replay(j, scale_rank=[(3, 2), (1, 2), (3, 2), (1, 2)]),
     "scale_rank names rank 3 twice; give each rank one factor"),
    (lambda v, j, o: lumos.replay(j, scale_rank=[3]),
     "scale_rank: expected {rank: factor} or (rank, factor) pairs, got 3"),
    (lambda v, j, o: lumos.predict(v, scale_kernels="class:compute=0"),
     "scale_kernels class:compute=0: factor must be a number from 1e-6 to 1e6, got 0"),
    (lambda v, j, o: lumos.replay(v, progress=5),
     "progress: expected None, True, False or a callable (phase, done, total), got 5"),
    (lambda v, j, o: lumos.synth({"layers": 2, "hidden": 64, "heads": 2, "seq_len": float("nan")}, o),
     "model: seq_len is nan, not a JSON number, string or bool"),
    (lambda v, j, o: lumos.diff(o / "nope", o / "nope", steps="2..1"), "steps: empty step range \"2..1\""),
    (lambda v, j, o: lumos.diff(o / "nope", o / "nope", min_change_us=-1),
     "min_change_us must be a number >= 0, got -1"),
    (lambda v, j, o: lumos.diff(v, j), "b <JOB>: give one trace file, not a directory"),
    (lambda v, j, o: lumos.durations_from(j, j), "a <JOB>: give one trace file, not a directory"),
    (lambda v, j, o: lumos.replay(v).top_kernels(-1), "n must be a whole number >= 0, got -1"),
])
def test_bad_arguments_are_config_errors_with_clear_messages(tmp_path, corpus, call, text):
    """Not an OverflowError, a ValueError from unpacking, a TypeError or a
    string iterated by character: a ConfigError saying what is wrong,
    before any file is read (the files named here do not exist)."""
    with pytest.raises(ConfigError) as e:
        call(str(corpus / V), str(corpus / JOB), tmp_path)
    assert str(e.value) == text.replace("<JOB>", str(corpus / JOB))
    assert not any(tmp_path.iterdir())


def test_paths_are_taken_as_str_bytes_or_pathlike(tmp_path, corpus, cli_error):
    import pathlib

    v = str(corpus / V)
    # A str is one pattern, as for replay, not a string of characters.
    a = lumos.predict(v, scale_kernels="class:compute=0.5", progress=False)
    b = lumos.predict(v, scale_kernels={"class:compute": 0.5}, progress=False)
    assert a.report == b.report
    assert lumos.replay(os.fsencode(v), progress=False).report == lumos.replay(v, progress=False).report
    net = tmp_path / "net.json"
    net.write_text('{"preset": "h100"}')
    assert lumos.predict(v, network=pathlib.Path(net), progress=False).report == lumos.predict(
        v, network=str(net), progress=False).report
    # A path with nothing there is bad input, as the CLI says, not an unknown preset.
    code, message = cli_error(["predict", v, "--network", "/nonexistent.json"])
    assert code == 1
    with pytest.raises(InputError) as e:
        lumos.predict(v, network="/nonexistent.json", progress=False)
    assert str(e.value) == message.replace("--network", "network")
    code, message = cli_error(["synth", "--model", "/nonexistent.json", "--out", str(tmp_path / "o")])
    assert code == 1
    with pytest.raises(InputError) as e:
        lumos.synth("/nonexistent.json", tmp_path / "o")
    assert str(e.value) == message.replace("--model", "model")
    with pytest.raises(ConfigError, match="^paths: expected a path"):
        lumos.replay(5, progress=False)



def test_a_job_with_missing_ranks_warns(tmp_path, corpus):
    """As the docstring says: ranks below the world size with no file are
    a UserWarning (and Job.missing_ranks)."""
    src = sorted((corpus / JOB).iterdir())
    with pytest.warns(UserWarning, match=r"1 of 8 ranks have no file: 3 "):
        job = lumos.load_job([str(p) for p in src if p.name != "rank3.json.gz"], progress=False)
    assert job.missing_ranks == [3]


def test_a_rank_left_out_is_named_not_said_to_have_no_file(tmp_path, corpus):
    """A rank whose file holds no task is left out of the job: the warning
    names its file and why (it said "1 of 8 ranks have no file: 7")."""
    src = sorted((corpus / JOB).iterdir())
    for p in src:
        if p.name != "rank7.json.gz":
            (tmp_path / p.name).write_bytes(p.read_bytes())
    doc = json.loads(gzip.decompress((corpus / JOB / "rank7.json.gz").read_bytes()))
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("ph") == "M"]
    (tmp_path / "rank7.json").write_text(json.dumps(doc))
    with pytest.warns(UserWarning) as record:
        job = lumos.load_job(str(tmp_path), progress=False)
    assert job.missing_ranks == [7]
    said = [str(w.message) for w in record]
    assert any("rank7.json) holds no CPU or GPU task" in m for m in said), said
    assert not any("have no file" in m for m in said), said


def test_an_ingest_error_says_its_cause_once(tmp_path, cli_error):
    from lumos.distributed import ingest_rank

    missing = str(tmp_path / "nonexistent.json")
    code, message = cli_error(["ingest", missing, "-o", str(tmp_path / "out.lgraph")])
    with pytest.raises(LumosIOError) as e:
        ingest_rank(missing, str(tmp_path / "out"))
    assert code == 1
    assert str(e.value) == message
    assert str(e.value).count("no such file") == 1


def test_a_trace_without_tasks_is_an_input_error_not_zeros(tmp_path, cli_error):
    # Only metadata and an event of a kind lumos does not model: nothing
    # to replay or predict from, where a replay would report zeros.
    trace = tmp_path / "metadata-only.json"
    trace.write_text(json.dumps({"traceEvents": [
        {"name": "process_name", "ph": "M", "ts": 0, "pid": 1, "tid": 0, "args": {"name": "python3"}},
        {"ph": "X", "cat": "made_up", "name": "x", "pid": 1, "tid": 1, "ts": 1, "dur": 2},
    ]}))
    code, message = cli_error(["replay", str(trace)])
    assert code == 1 and "nothing to replay: no CPU or GPU task was read" in message
    with pytest.raises(InputError) as e:
        lumos.replay(str(trace), progress=False)
    assert str(e.value) == message
    code, message = cli_error(["predict", "--dp", "2", str(trace)])
    assert code == 1 and "nothing to predict from" in message
    with pytest.raises(InputError) as e:
        lumos.predict(str(trace), dp=2, progress=False)
    assert str(e.value) == message
    # Ingested all the same (a job names the rank and leaves it out), with
    # the warning `lumos ingest` prints as a note.
    from lumos.distributed import ingest_rank

    with pytest.warns(UserWarning, match="no CPU or GPU task was read.*replaying it alone is refused"):
        out = ingest_rank(str(trace), str(tmp_path / "g"))
    assert os.path.exists(out)
    with pytest.raises(InputError, match="nothing to replay"):
        lumos.replay(out, progress=False)


def test_files_a_folder_leaves_out_are_named_in_a_warning(tmp_path, corpus, lumos_bin):
    # A rank3.gz beside the traces was left out without a word; the API
    # names it in a UserWarning, in the CLI's words (the CLI's warning line).
    trace = (corpus / "micro" / "a100-simple-add.json.gz").read_bytes()
    for name in ("rank0.json.gz", "rank3.gz", "rank4.JSON", "README.md"):
        (tmp_path / name).write_bytes(trace)
    from conftest import run_cli

    p = run_cli(lumos_bin, ["inspect", str(tmp_path)])
    assert p.returncode == 0, p.stderr
    lines = [l for l in p.stderr.splitlines() if l.startswith("warning: ")]
    assert len(lines) == 1 and "README" not in lines[0], p.stderr
    cli = lines[0][len("warning: "):]
    assert cli.startswith(f"{tmp_path}: left out 2 files not named *.json, *.json.gz or *.lgraph: ")
    with pytest.warns(UserWarning) as seen:
        lumos.inspect(str(tmp_path))
    assert [str(w.message) for w in seen if "left out" in str(w.message)] == [cli]
    # read_traces reads no .lgraph files, and says so.
    with pytest.warns(UserWarning, match=r"not named \*\.json or \*\.json\.gz: rank3\.gz"):
        lumos.read_traces(str(tmp_path))


def test_ingest_into_a_file_is_a_config_error_with_the_cli_message(tmp_path, corpus, cli_error):
    # As synth(out=<file>), in the words of the CLI's usage error for a
    # directory to write into: not the bare "File exists (os error 17)" of
    # an I/O error, from ingest_rank, and from ingest before any task
    # starts. (`lumos ingest -o` of one trace names the file to write, so
    # synth's --out is the CLI's message to match.)
    from lumos import distributed

    trace = str(corpus / "micro" / "a100-simple-add.json.gz")
    taken = tmp_path / "f"
    taken.write_text("x")
    for out, what in ((taken, "exists and is not a directory"), (taken / "below", f"{taken} is not a directory")):
        code, message = cli_error(["synth", "--model", "gpt-tiny", "--out", str(out)])
        assert code == 2
        want = (
            f"out_dir {out}: {what}; out_dir names the directory to write into (created if needed)"
        )
        assert message == want.replace("out_dir", "--out")
        with pytest.raises(ConfigError) as e:
            distributed.ingest_rank(trace, out)
        assert str(e.value) == want
        with pytest.raises(ConfigError) as e:
            distributed.ingest([trace], out)
        assert str(e.value) == want
    assert taken.read_text() == "x"
