"""Progress of long work: a tqdm bar when tqdm is installed, nothing
otherwise, or a callable of the caller's.

The extension calls the callback as ``callback(phase, done, total)`` about
ten times a second while Rust works (the GIL is released meanwhile, so
other Python threads run), and once at the end. ``phase`` is ``reading``
(``done`` and ``total`` in bytes), ``building``, ``loading``,
``assembling`` or ``replaying`` (in ranks; 1 for a job's joint replay or
a prediction's replays), ``predicting`` (1: :func:`lumos.predict`'s
discovery and edits), ``reporting`` (1), ``writing`` (ranks,
:func:`lumos.synth`) or ``ingesting`` (traces,
:func:`lumos.distributed.ingest`, called by the driver as Ray's tasks
finish).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator, Union

Callback = Callable[[str, int, int], Any]
ProgressArg = Union[bool, None, Callback]

try:  # tqdm is optional
    from tqdm.auto import tqdm as _tqdm
except ImportError:  # pragma: no cover - depends on the environment
    _tqdm = None


class _Bars:
    """One tqdm bar per phase, shown only for work longer than half a
    second."""

    def __init__(self) -> None:
        self._bar: Any = None
        self._phase = ""

    def __call__(self, phase: str, done: int, total: int) -> None:
        if phase != self._phase or self._bar is None:
            self.close()
            self._phase = phase
            unit = "B" if phase == "reading" else "rank"
            self._bar = _tqdm(
                total=total or None,
                desc=phase,
                unit=unit,
                unit_scale=unit == "B",
                delay=0.5,
                leave=False,
            )
        self._bar.update(done - self._bar.n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def _silent(phase: str, done: int, total: int) -> None:
    """Shows nothing."""


@contextmanager
def callback(progress: ProgressArg) -> Iterator[Callback]:
    """The callback for ``progress``: ``None`` or ``True`` give tqdm bars
    when tqdm is installed (silence without it), ``False`` silence, a
    callable itself."""
    if not (progress is None or isinstance(progress, bool) or callable(progress)):
        from .errors import ConfigError

        raise ConfigError(
            "progress: expected None, True, False or a callable (phase, done, total), "
            f"got {progress!r}"
        )
    if progress is False or (progress in (None, True) and _tqdm is None):
        # Still a callback: while one is given, the extension checks for
        # Ctrl-C as it waits.
        yield _silent
        return
    if callable(progress):
        yield progress
        return
    bars = _Bars()
    try:
        yield bars
    finally:
        bars.close()
