//! Progress on stderr for long reads and replays: drawn only when stderr
//! is a terminal, so piped or redirected output never holds a bar (nor
//! does stdout, where reports and `--json` go).

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// Whether bars are drawn: stderr is a terminal and `LUMOS_NO_PROGRESS`
/// is unset.
fn enabled() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("LUMOS_NO_PROGRESS").is_none()
}

fn styled(bar: ProgressBar, template: &str, msg: &str) -> ProgressBar {
    bar.set_style(
        ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_message(msg.to_owned());
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
