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
