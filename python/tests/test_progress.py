"""Long work releases the GIL and reports progress."""

from __future__ import annotations

import threading
import time

import pytest

import lumos

V100 = "single-rank/v100-ddp-rank1of2-allreduce.json.gz"


def test_the_callback_sees_the_bytes_read(corpus):
    calls = []
    path = corpus / V100
    lumos.read_trace(str(path), progress=lambda *a: calls.append(a))
    assert calls, "the callback is called at least once, at the end"
    phase, done, total = calls[-1]
    assert phase == "reading"
    assert done == total == path.stat().st_size


def test_other_python_threads_run_while_rust_works(corpus):
    ticks = 0
    stop = threading.Event()

    def tick():
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            time.sleep(0.001)

    t = threading.Thread(target=tick)
    start = time.monotonic()
    t.start()
    lumos.replay(str(corpus / V100), progress=False)
    elapsed = time.monotonic() - start
    stop.set()
    t.join()
    # Holding the GIL for the whole replay would leave the thread a tick
    # or two; released, it ticks about once a millisecond.
    assert ticks > elapsed * 1000 / 20, (ticks, elapsed)


def test_a_failing_callback_stops_the_work_and_is_raised(corpus):
    def fail(*_):
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        lumos.load_job(str(corpus / "multi-rank" / "dlrm-8xv100"), progress=fail)


def test_tqdm_bars_when_installed(corpus, capsys):
    pytest.importorskip("tqdm")
    lumos.replay(str(corpus / V100), progress=True)
    lumos.replay(str(corpus / V100), progress=False)


def test_synth_reports_each_rank_written(tmp_path):
    calls = []
    files = lumos.synth("gpt-tiny", tmp_path / "job", tp=2, pp=2, dp=2, ranks="all",
                        progress=lambda *a: calls.append(a))
    assert len(files) == 8
    assert calls[-1] == ("writing", 8, 8)


def test_a_failing_callback_stops_synth_before_its_next_column(tmp_path):
    def fail(*_):
        raise RuntimeError("stop here")

    # 256 pipeline columns (512 files of a few MB): the first tick (0.1 s)
    # comes long before the last, on any machine.
    with pytest.raises(RuntimeError, match="stop here"):
        lumos.synth("gpt-small", tmp_path / "job", tp=1, pp=2, dp=256, ranks="all",
                    progress=fail)
    assert len(list((tmp_path / "job").glob("*.json.gz"))) < 512


def test_ctrl_c_stops_a_joint_replay_before_it_ends(tmp_path):
    import _thread

    lumos.synth("gpt-small", tmp_path / "job", tp=1, pp=2, dp=16, microbatches=16, ranks="all",
                progress=False)
    job = lumos.load_job(tmp_path / "job", progress=False)
    start = time.monotonic()
    job.replay()
    whole = time.monotonic() - start
    # Ctrl-C soon after the start: the simulator sees it within a tick
    # (0.1 s) and stops, where before it replayed to the end and only then
    # was interrupted. Merging the ranks before the simulation (about a
    # third of the whole here) cannot be stopped.
    timer = threading.Timer(0.02, _thread.interrupt_main)
    timer.start()
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        job.replay()
    stopped = time.monotonic() - start
    timer.join()
    assert stopped < 0.75 * whole, (stopped, whole)
    # The job is intact: it replays again.
    assert job.replay().is_job
