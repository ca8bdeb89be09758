//! Progress on stderr for long reads and replays: drawn only when stderr
//! is a terminal, so piped or redirected output never holds a bar (nor
//! does stdout, where reports and `--json` go).

use std::io::IsTerminal;
use std::time::Duration;

use crate::output::one_line;
use indicatif::{ProgressBar, ProgressStyle};

/// Whether bars are drawn: stderr is a terminal and `LUMOS_NO_PROGRESS`
/// is unset.
fn enabled() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("LUMOS_NO_PROGRESS").is_none()
}

/// `bar` drawn with `template` and `msg`. The bar is drawn by indicatif,
/// not through [`crate::output::Shown`], so `msg` (which can name a file)
/// is shown escaped here.
fn styled(bar: ProgressBar, template: &str, msg: &str) -> ProgressBar {
    bar.set_style(
        ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_message(one_line(msg));
    bar
}

/// A bar over `total` bytes.
pub fn bytes(total: u64, msg: &str) -> ProgressBar {
    if !enabled() {
        return ProgressBar::hidden();
    }
    styled(
        ProgressBar::new(total),
        "{msg} [{bar:30}] {bytes}/{total_bytes} ({eta})",
        msg,
    )
}

/// A bar over `total` items (files, ranks).
pub fn count(total: u64, msg: &str) -> ProgressBar {
    if !enabled() {
        return ProgressBar::hidden();
    }
    styled(
        ProgressBar::new(total),
        "{msg} [{bar:30}] {pos}/{len} ({elapsed})",
        msg,
    )
}

/// A spinner for work of unknown length; clear it with
/// `finish_and_clear`.
pub fn spinner(msg: &str) -> ProgressBar {
    if !enabled() {
        return ProgressBar::hidden();
    }
    let bar = styled(
        ProgressBar::new_spinner(),
        "{spinner} {msg} ({elapsed})",
        msg,
    );
    bar.enable_steady_tick(Duration::from_millis(100));
    bar
}

/// A [`spinner`] for work on one file that is read as it goes: the
/// message says what is done to the file and, while the read lasts, how
/// much of it has been read.
pub struct FileWork {
    bar: ProgressBar,
    what: String,
}

impl FileWork {
    /// A spinner saying `what` (e.g. "replaying FILE").
    pub fn new(what: String) -> FileWork {
        // The spinner shows its message; `what` is kept shown for the
        // messages that follow.
        FileWork {
            bar: spinner(&what),
            what: one_line(&what),
        }
    }

    /// The read's progress: `bytes` (uncompressed) read so far.
    pub fn read(&self, bytes: u64) {
        if !self.bar.is_hidden() {
            let mb = bytes / 1_000_000;
            self.bar
                .set_message(format!("{} ({mb} MB read)", self.what));
        }
    }

    /// The read is done: the message says `what` alone again.
    pub fn read_done(&self) {
        self.bar.set_message(self.what.clone());
    }

    /// Clears the spinner.
    pub fn finish(self) {
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_name_in_a_spinner_is_shown_escaped() {
        // indicatif writes the message to the terminal as it is: a file
        // named with an OSC sequence retitled the terminal while it was
        // read.
        let work = FileWork::new("replaying t\u{1b}]0;x\u{7}.json".to_owned());
        assert_eq!(work.what, "replaying t\\u{1b}]0;x\\u{7}.json");
        work.read_done();
        assert!(!work.bar.message().contains('\u{1b}'));
        let bar = styled(ProgressBar::hidden(), "{msg}", "a\rb");
        assert_eq!(bar.message(), "a\\rb");
    }
}
