//! Long work with the GIL released, and its progress reported to a Python
//! callable while it runs.
//!
//! The work runs on a scoped thread (and rayon's pool) while the calling
//! thread, detached from the interpreter, waits for it; every
//! [`TICK`] it attaches, checks for signals (Ctrl-C) and calls the
//! callback, if there is one, with `(phase, done, total)`. A failed
//! callback or a signal cancels the work at its next check
//! ([`Progress::cancelled`], and in a replay the simulator's own, through
//! [`Progress::stop_flag`]) and is raised once the work has stopped,
//! with a note ([`STOPPED_NOTE`]) when the work did stop early for it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Mutex;
use std::time::Duration;

use lumos_sim::Cancel;
use pyo3::prelude::*;

/// How often the callback is called.
const TICK: Duration = Duration::from_millis(100);

/// What the work has done so far, in units of its choosing (bytes read,
/// ranks built).
#[derive(Debug, Default)]
pub struct Progress {
    phase: Mutex<&'static str>,
    done: AtomicU64,
    total: AtomicU64,
    cancel: Cancel,
}

impl Progress {
    /// Starts a phase of `total` units.
    pub fn phase(&self, name: &'static str, total: u64) {
        if let Ok(mut p) = self.phase.lock() {
            *p = name;
        }
        self.done.store(0, Ordering::Relaxed);
        self.total.store(total, Ordering::Relaxed);
    }

    /// `n` more units done.
    pub fn add(&self, n: u64) {
        self.done.fetch_add(n, Ordering::Relaxed);
    }

    /// True once the caller has asked the work to stop. The work, seeing
    /// it, stops where it is: that it did is recorded
    /// ([`lumos_sim::Cancel::mark_stopped`]), for the note [`run`] adds to
    /// the exception.
    pub fn cancelled(&self) -> bool {
        let stop = self.asked_to_stop();
        if stop {
            self.stopped();
        }
        stop
    }

    /// True once the caller has asked the work to stop, without recording
    /// that it did: for work that learns only later whether it had any
    /// left to skip (`synth`, asked after each file, stops before its
    /// next pipeline column, if one is left), which then calls
    /// [`Progress::stopped`] where it did stop.
    pub fn asked_to_stop(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Records that the work stopped before its end because it was asked
    /// to, for the note [`run`] adds to the exception.
    pub fn stopped(&self) {
        self.cancel.mark_stopped();
    }

    /// The flag that cancels the work, for a replay to watch
    /// ([`lumos_sim::SimOptions::cancel`]): the simulator checks it as it
    /// goes, where the work's own checks come only between its steps.
    pub fn stop_flag(&self) -> Cancel {
        self.cancel.clone()
    }

    fn snapshot(&self) -> (&'static str, u64, u64) {
        let phase = self.phase.lock().map(|p| *p).unwrap_or("");
        (
            phase,
            self.done.load(Ordering::Relaxed),
            self.total.load(Ordering::Relaxed),
        )
    }
}

/// Runs `work` with the GIL released, reporting to `callback` if given,
/// and watching for signals either way, so that Ctrl-C stops it.
/// The work's own result comes back even when the callback failed, unless
/// the work was cancelled: then the callback's (or the signal's) error.
pub fn run<T, F>(py: Python<'_>, callback: Option<Py<PyAny>>, work: F) -> PyResult<T>
where
    T: Send,
    F: FnOnce(&Progress) -> T + Send,
{
    let progress = Progress::default();
    let callback = callback.as_ref();
    py.detach(|| {
        std::thread::scope(|s| {
            let (tx, rx) = mpsc::channel::<()>();
            let p = &progress;
            let handle = s.spawn(move || {
                let out = work(p);
                let _ = tx.send(());
                out
            });
            let mut failure = None;
            while let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(TICK) {
                if failure.is_none() {
                    if let Err(e) = report(callback, &progress) {
                        progress.cancel.cancel();
                        failure = Some(e);
                    }
                }
            }
            let out = match handle.join() {
                Ok(out) => out,
                Err(panic) => std::panic::resume_unwind(panic),
            };
            match failure {
                Some(e) if progress.cancel.stopped_work() => Err(noted(e, STOPPED_NOTE)),
                Some(e) => Err(e),
                None => {
                    if callback.is_some() {
                        report(callback, &progress)?;
                    }
                    Ok(out)
                }
            }
        })
    })
}

/// The note (PEP 678, `__notes__`) on the exception that stopped work
/// which did stop early for it (a replay the simulator cut, reading that
/// stopped before its next file, `synth` before its next column). Without
/// it, the work had ended, or could not be stopped, before the exception
/// was seen: it ran to its end and its result was thrown away.
pub const STOPPED_NOTE: &str = "lumos stopped the work before its end";

/// `e` with `note` appended to its `__notes__`, as `add_note` does (which
/// Python before 3.11 lacks; its tracebacks do not show the notes, but
/// they are there to read).
fn noted(e: PyErr, note: &str) -> PyErr {
    Python::attach(|py| {
        let value = e.value(py);
        let notes = value
            .getattr("__notes__")
            .ok()
            .and_then(|n| n.cast_into::<pyo3::types::PyList>().ok())
            .unwrap_or_else(|| pyo3::types::PyList::empty(py));
        // A note that cannot be added leaves the exception as it was.
        let _ = notes
            .append(note)
            .and_then(|()| value.setattr("__notes__", notes));
    });
    e
}

/// A check for signals, then one call of the callback if there is one.
fn report(callback: Option<&Py<PyAny>>, progress: &Progress) -> PyResult<()> {
    Python::attach(|py| {
        py.check_signals()?;
        let Some(callback) = callback else {
            return Ok(());
        };
        let (phase, done, total) = progress.snapshot();
        callback.call1(py, (phase, done, total)).map(drop)
    })
}
