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


# The note lumos adds to the exception that stopped work which did stop
# early for it (docs/PYTHON.md): without it, the work ran to its end and
# its result was thrown away.
STOPPED = "lumos stopped the work before its end"


def stopped_early(exc: BaseException) -> bool:
    return STOPPED in getattr(exc, "__notes__", [])


def test_ctrl_c_stops_a_joint_replay_before_it_ends(tmp_path):
    import _thread

    lumos.synth("gpt-small", tmp_path / "job", tp=1, pp=2, dp=16, microbatches=16, ranks="all",
                progress=False)
    job = lumos.load_job(tmp_path / "job", progress=False)
    # Ctrl-C soon after the start: the signal is seen within a tick (0.1
    # s), and the simulator, which looks at the stop flag as it goes,
    # stops (or, still merging the ranks, which cannot be stopped, does
    # not begin), which the note says; before, it replayed to the end and
    # only then was interrupted.
    timer = threading.Timer(0.02, _thread.interrupt_main)
    timer.start()
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt) as interrupt:
        job.replay()
    stopped = time.monotonic() - start
    timer.join()
    assert stopped_early(interrupt.value), getattr(interrupt.value, "__notes__", None)
    # The job is intact: it replays again, to its end, which takes longer
    # than the replay that was cut (a loose bound: merging is about a third
    # of the whole, and the cut came within a tick or two).
    start = time.monotonic()
    assert job.replay().is_job
    whole = time.monotonic() - start
    assert stopped < whole, (stopped, whole)


def ctrl_c_once_replaying(phases):
    """A progress callback that records the phases it sees in `phases` and
    presses Ctrl-C once the replays have begun (the graphs are made): only
    the simulator can stop the work then."""
    import _thread

    def callback(phase, done, total):
        first = phase == "replaying" and "replaying" not in phases
        phases.append(phase)
        if first:
            _thread.interrupt_main()

    return callback


def test_ctrl_c_stops_a_prediction_within_its_replays(tmp_path):
    files = lumos.synth("gpt-small", tmp_path / "job", tp=1, pp=2, microbatches=8, ranks="all",
                        progress=False)
    phases = []

    # Sixteen times the micro-batches and twice the layers: its replays
    # take seconds, where the signal is seen within a tick (0.1 s).
    with pytest.raises(KeyboardInterrupt) as interrupt:
        lumos.predict(files, microbatches=128, layers=48, progress=ctrl_c_once_replaying(phases))
    assert "predicting" in phases and phases[-1] == "replaying", phases
    # The replay stopped: before, the prediction replayed to its end.
    assert stopped_early(interrupt.value), getattr(interrupt.value, "__notes__", None)
    # Nothing is left half-done: the same inputs predict again.
    assert lumos.predict(files, microbatches=16, progress=False).report["steps"]


def test_an_interrupt_after_the_work_ended_has_no_note(tmp_path):
    import _thread

    files = lumos.synth("gpt-tiny", tmp_path / "job", ranks="all", progress=False)

    def ctrl_c_at_the_end(phase, done, total):
        # The last call, once the work is done.
        if phase == "replaying" and done == total:
            _thread.interrupt_main()

    with pytest.raises(KeyboardInterrupt) as interrupt:
        lumos.predict(files, progress=ctrl_c_at_the_end)
    assert not stopped_early(interrupt.value)


def test_an_interrupt_while_synth_writes_its_last_file_has_no_note(tmp_path):
    import _thread

    pressed = []

    def ctrl_c_while_writing(phase, done, total):
        # One rank of about a second (the signal is seen within a tick,
        # 0.1 s): its one pipeline column is under way, and none is left
        # to skip.
        if phase == "writing" and done == 0 and not pressed:
            pressed.append(total)
            _thread.interrupt_main()

    with pytest.raises(KeyboardInterrupt) as interrupt:
        lumos.synth("gpt-small", tmp_path / "job", microbatches=256,
                    progress=ctrl_c_while_writing)
    assert pressed == [1]
    # Every file was written: the work was not cut short, which the note
    # said before.
    assert [f.name for f in (tmp_path / "job").iterdir()] == ["rank0.json.gz"]
    assert not stopped_early(interrupt.value), interrupt.value.__notes__


def test_ctrl_c_stops_durations_from_within_its_replays(tmp_path):
    # Replays of about half a second (the signal is seen within a tick,
    # 0.1 s), begun once both graphs are built.
    a = lumos.synth("gpt-small", tmp_path / "a", microbatches=256, seed=1, progress=False)[0]
    b = lumos.synth("gpt-small", tmp_path / "b", microbatches=256, seed=2, progress=False)[0]
    phases = []
    with pytest.raises(KeyboardInterrupt) as interrupt:
        lumos.durations_from(a, b, progress=ctrl_c_once_replaying(phases))
    assert "building" in phases and phases[-1] == "replaying", phases
    # Before, durations_from replayed both graphs to their end.
    assert stopped_early(interrupt.value), getattr(interrupt.value, "__notes__", None)
    assert lumos.durations_from(a, b, progress=False).steps is not None
