//! A guard on the memory that reading many inputs takes. A job of
//! thousands of large ranks, each held as its graph until the job is
//! replayed, would outgrow the machine, and the kernel's out-of-memory
//! killer ends a process without a word. The guard stops starting files
//! once the process holds most of the memory that was available when it
//! began, so the command can say why, and what to do instead.
//!
//! It reads Linux's `/proc` (and a cgroup's limit, in a container);
//! elsewhere it never stops anything.
//! `LUMOS_MEMORY_LIMIT` (bytes, or with a `K`, `M` or `G` suffix, powers of
//! 1,024) sets the limit on the resident size instead.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use anyhow::{anyhow, Result};

/// Share of the memory available at the start that the inputs may take:
/// the rest is for the files still being read and what follows the read.
const SHARE: f64 = 0.85;

/// The variable that sets the limit.
const LIMIT_VAR: &str = "LUMOS_MEMORY_LIMIT";

/// Stops a parallel read of `total` files once the process's resident
/// size passes its limit.
pub struct MemoryGuard {
    /// Resident bytes allowed; `None` where they cannot be read.
    limit: Option<u64>,
    total: u64,
    finished: AtomicU64,
    /// The resident size when the guard stopped the read.
    stopped_at: AtomicU64,
    stopped: AtomicBool,
}

impl MemoryGuard {
    /// A guard for reading `total` files; an unreadable `LUMOS_MEMORY_LIMIT`
    /// is a usage error.
    pub fn new(total: usize) -> Result<MemoryGuard> {
        let limit = match std::env::var(LIMIT_VAR) {
            Ok(v) => Some(parse_size(&v).ok_or_else(|| {
                crate::usage::usage(format!(
                    "{LIMIT_VAR}={v:?}: not a size (bytes, or a number with K, M or G)"
                ))
            })?),
            Err(_) => resident_bytes()
                .zip(available_bytes())
                .map(|(now, free)| now + (free as f64 * SHARE) as u64),
        };
        Ok(MemoryGuard {
            limit,
            total: total as u64,
            finished: AtomicU64::new(0),
            stopped_at: AtomicU64::new(0),
            stopped: AtomicBool::new(false),
        })
    }

    /// False once the guard has stopped the read: the next file is not
    /// started.
    pub fn may_start(&self) -> bool {
        !self.stopped.load(Ordering::Relaxed)
    }

    /// After a file is read: stops the read if the process is over its
    /// limit.
    pub fn finished(&self) {
        self.finished.fetch_add(1, Ordering::Relaxed);
        let (Some(limit), Some(now)) = (self.limit, resident_bytes()) else {
            return;
        };
        if now > limit && !self.stopped.swap(true, Ordering::Relaxed) {
            self.stopped_at.store(now, Ordering::Relaxed);
        }
    }

    /// The error once the guard has stopped the read.
    pub fn check(&self) -> Result<()> {
        if !self.stopped.load(Ordering::Relaxed) {
            return Ok(());
        }
        let read = self.finished.load(Ordering::Relaxed).max(1);
        let held = self.stopped_at.load(Ordering::Relaxed);
        let all = held as f64 * self.total as f64 / read as f64;
        Err(anyhow!(
            "stopped after reading {read} of {} inputs: lumos held {}, over its limit of {} \
             ({LIMIT_VAR}; by default 85% of the memory available when it started), and all \
             {} would hold about {}. For a job this large, `lumos replay --representatives` \
             replays one rank per group of ranks that run the same communication program \
             (`lumos ingest` the traces first to read each only once); or use a machine with \
             more memory",
            self.total,
            size(held as f64),
            size(self.limit.unwrap_or(0) as f64),
            self.total,
            size(all),
        ))
    }
}

/// `bytes` for a person: MB below a GB, GB above.
fn size(bytes: f64) -> String {
    match bytes < 1e9 {
        true => format!("{:.0} MB", bytes / 1e6),
        false => format!("{:.1} GB", bytes / 1e9),
    }
}

/// `text` as a number of bytes: digits, then an optional `K`, `M` or `G`
/// (powers of 1,024; `KB`, `MiB` and lower case are taken too).
fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let n: u64 = t[..digits].parse().ok()?;
    let shift = match t[digits..].trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        _ => return None,
    };
    n.checked_mul(1 << shift)
}

/// The process's resident size (`VmRSS`), bytes.
fn resident_bytes() -> Option<u64> {
    kib_field(
        &std::fs::read_to_string("/proc/self/status").ok()?,
        "VmRSS:",
    )
}

/// The memory the kernel could give without swapping (`MemAvailable`),
/// bytes, or less where the process's cgroup (a container) is limited to
/// less.
fn available_bytes() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let machine = kib_field(&meminfo, "MemAvailable:")?;
    let cgroup = |name: &str| -> Option<u64> {
        let text = std::fs::read_to_string(format!("/sys/fs/cgroup/{name}")).ok()?;
        text.trim().parse().ok()
    };
    // `memory.max` is `max` where there is no limit: no number, no bound.
    let in_cgroup =
        cgroup("memory.max").map(|max| max.saturating_sub(cgroup("memory.current").unwrap_or(0)));
    Some(in_cgroup.map_or(machine, |c| c.min(machine)))
}

/// The value of `/proc`'s `name   N kB` line, in bytes.
fn kib_field(text: &str, name: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(name))?;
    let kib: u64 = line[name.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    kib.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_proc_fields_parse() {
        assert_eq!(parse_size("123"), Some(123));
        assert_eq!(parse_size("2K"), Some(2048));
        assert_eq!(parse_size("3 MiB"), Some(3 << 20));
        assert_eq!(parse_size("1g"), Some(1 << 30));
        assert_eq!(parse_size("1.5G"), None);
        assert_eq!(parse_size("G"), None);
        assert_eq!(parse_size("99999999999999999999G"), None);
        let status = "Name:\tlumos\nVmRSS:\t   1234 kB\n";
        assert_eq!(kib_field(status, "VmRSS:"), Some(1234 * 1024));
        assert_eq!(kib_field(status, "MemAvailable:"), None);
    }
}
