//! A guard on the memory that reading many inputs takes. A job of
//! thousands of large ranks, each held as its graph until the job is
//! replayed, would outgrow the machine, and the kernel's out-of-memory
//! killer ends a process without a word. The guard stops starting files
//! once the process holds most of the memory that was available when it
//! began, so the command can say why, and what to do instead.
//!
//! Linux only (it reads `/proc`, and the limits of the process's cgroup
//! and its ancestors, v2 or v1's memory controller, as in a container);
//! elsewhere it never stops anything.
//! `LUMOS_MEMORY_LIMIT` sets the limit on the resident size instead
//! (bytes, or with a `K`, `M`, `G` or `T` suffix, powers of 1,024), or
//! turns the guard off (`off`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Share of the memory available at the start that the inputs may take:
/// the rest is for the files still being read and what follows the read.
const SHARE: f64 = 0.85;

/// The variable that sets the limit.
const LIMIT_VAR: &str = "LUMOS_MEMORY_LIMIT";

/// An unreadable `LUMOS_MEMORY_LIMIT`: a usage error.
#[derive(Debug, thiserror::Error)]
#[error(
    "{LIMIT_VAR}={0:?}: not a size from 1 byte to below 16 EiB (bytes, or a number with K, M, G or \
     T), nor `off`"
)]
pub struct BadMemoryLimit(pub String);

/// The guard kept inputs from being read: what it says.
#[derive(Debug, thiserror::Error)]
#[error(
    "stopped with {skipped} of {total} inputs not read: lumos held {}, over its limit of {} \
     ({}). Read fewer inputs at a time, or use a machine with more memory; {}",
    size(*held), size(*limit), limit_source(*from_variable, *purpose), purpose.way_out()
)]
pub struct OverMemoryLimit {
    /// Inputs not read.
    pub skipped: u64,
    /// Inputs in all.
    pub total: u64,
    /// The resident size when the read stopped, bytes.
    pub held: u64,
    /// The limit, bytes.
    pub limit: u64,
    /// True when `LUMOS_MEMORY_LIMIT` set the limit.
    pub from_variable: bool,
    /// What the inputs were read for.
    pub purpose: ReadFor,
}

/// Ranks read whose joint replay would take lumos past its limit.
#[derive(Debug, thiserror::Error)]
#[error(
    "stopped before replaying {ranks} ranks together: lumos holds {} after reading them, and \
     the replay of their {tasks} tasks needs at least {} more, over its limit of {} ({}). Use \
     a machine with more memory; {}",
    size(*held), size(*need), size(*limit), limit_source(*from_variable, *purpose), purpose.way_out()
)]
pub struct NoRoomToReplay {
    /// Ranks read.
    pub ranks: usize,
    /// Their tasks.
    pub tasks: usize,
    /// The resident size after the read, bytes.
    pub held: u64,
    /// The least the replay takes beyond it, bytes.
    pub need: u64,
    /// The limit, bytes.
    pub limit: u64,
    /// True when `LUMOS_MEMORY_LIMIT` set the limit.
    pub from_variable: bool,
    /// What the guard was made for.
    pub purpose: ReadFor,
}

/// Where a limit came from, for a person.
fn limit_source(from_variable: bool, purpose: ReadFor) -> String {
    let when = match purpose {
        ReadFor::HeldJob => "when the replay was asked for",
        ReadFor::Job | ReadFor::Prediction => "when it started",
    };
    match from_variable {
        true => LIMIT_VAR.to_string(),
        false => format!("85% of the memory available {when}; {LIMIT_VAR} sets another"),
    }
}

/// What a guarded read is for, which decides the way out its error offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadFor {
    /// A job's replay, report or inspection: every rank held at once.
    Job,
    /// A prediction, which holds one rank per pipeline stage once it can
    /// tell the stages apart, and every rank until then.
    Prediction,
    /// The replay of a job read before (a `lumos.Job` in Python): a guard
    /// made when the replay is asked for, that reads nothing.
    HeldJob,
}

impl ReadFor {
    fn way_out(self) -> &'static str {
        match self {
            ReadFor::Job | ReadFor::HeldJob => {
                "a job this large replays from representatives (one rank per group of ranks \
                 that run the same communication program: `lumos replay --representatives`, \
                 `representatives=True` in Python; `lumos ingest` the traces first to read each \
                 only once)"
            }
            ReadFor::Prediction => {
                "a prediction needs only one trace per pipeline stage: give it those alone"
            }
        }
    }
}

/// Stops a parallel read of `total` files once the process's resident
/// size passes its limit.
pub struct MemoryGuard {
    /// Resident bytes allowed; `None` where they cannot be read, or with
    /// the guard turned off.
    limit: Option<u64>,
    /// True when `LUMOS_MEMORY_LIMIT` set the limit.
    from_variable: bool,
    purpose: ReadFor,
    total: u64,
    /// Files not started because the guard had stopped the read.
    skipped: AtomicU64,
    /// The resident size when the guard stopped the read; 0 until then
    /// (a process holds more than nothing).
    stopped_at: AtomicU64,
}

impl MemoryGuard {
    /// A guard for reading `total` files for `purpose`; an unreadable
    /// `LUMOS_MEMORY_LIMIT` is a usage error.
    pub fn new(total: usize, purpose: ReadFor) -> Result<MemoryGuard, BadMemoryLimit> {
        let (limit, from_variable) = match variable_limit()? {
            Some(limit) => (limit, true),
            None => {
                let limit = (resident_bytes().zip(available_bytes()))
                    .map(|(now, free)| now + (free as f64 * SHARE) as u64);
                (limit, false)
            }
        };
        Ok(MemoryGuard {
            limit,
            from_variable,
            purpose,
            total: total as u64,
            skipped: AtomicU64::new(0),
            stopped_at: AtomicU64::new(0),
        })
    }

    /// Refuses an unreadable `LUMOS_MEMORY_LIMIT` as [`MemoryGuard::new`]
    /// does, without measuring the process or the machine: for a command
    /// that reads no job, which should not take a bad value without a
    /// word either.
    pub fn limit_readable() -> Result<(), BadMemoryLimit> {
        variable_limit().map(drop)
    }

    /// `read()` of one file, unless the process is already over its limit
    /// (`None`: the file is counted as not read). The resident size is
    /// checked before the file too, so that the files the threads start
    /// first are not read unchecked, and after it.
    pub fn read<T>(&self, read: impl FnOnce() -> T) -> Option<T> {
        self.over_limit();
        if self.stopped_at.load(Ordering::Relaxed) != 0 {
            self.skipped.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        let out = read();
        self.over_limit();
        Some(out)
    }

    /// Stops the read if the resident size is over the limit.
    fn over_limit(&self) {
        let (Some(limit), Some(now)) = (self.limit, resident_bytes()) else {
            return;
        };
        if now > limit {
            // The first stop's size is the one reported.
            let _ =
                (self.stopped_at).compare_exchange(0, now, Ordering::Relaxed, Ordering::Relaxed);
        }
    }

    /// The error once the guard has kept a file from being read. Past the
    /// limit with every file read, the read goes on: what it holds may
    /// still fit.
    pub fn check(&self) -> Result<(), OverMemoryLimit> {
        match self.skipped.load(Ordering::Relaxed) {
            0 => Ok(()),
            _ => Err(self.not_read(0)),
        }
    }

    /// Refuses a joint replay of `ranks` ranks and `tasks` tasks that
    /// needs at least `need` bytes beyond what the process holds, where that
    /// would pass the limit: the kernel would kill the process part way
    /// through it, without a word.
    pub fn room_to_replay(
        &self,
        ranks: usize,
        tasks: usize,
        need: u64,
    ) -> Result<(), NoRoomToReplay> {
        let (Some(limit), Some(held)) = (self.limit, resident_bytes()) else {
            return Ok(());
        };
        if held.saturating_add(need) <= limit {
            return Ok(());
        }
        Err(NoRoomToReplay {
            ranks,
            tasks,
            held,
            need,
            limit,
            from_variable: self.from_variable,
            purpose: self.purpose,
        })
    }

    /// The error for a read that stopped: the inputs the guard kept from
    /// being read, and `not_started` more (a read in windows starts none
    /// after the window it stopped in).
    pub fn not_read(&self, not_started: usize) -> OverMemoryLimit {
        OverMemoryLimit {
            skipped: self.skipped.load(Ordering::Relaxed) + not_started as u64,
            total: self.total,
            held: self.stopped_at.load(Ordering::Relaxed),
            limit: self.limit.unwrap_or(0),
            from_variable: self.from_variable,
            purpose: self.purpose,
        }
    }
}

/// `bytes` for a person, in the powers of 1,024 the limit is given in.
fn size(bytes: u64) -> String {
    let b = bytes as f64;
    match bytes {
        0..1024 => format!("{bytes} bytes"),
        1024..0x10_0000 => format!("{:.1} KiB", b / 1024.0),
        0x10_0000..0x4000_0000 => format!("{:.1} MiB", b / f64::from(1 << 20)),
        _ => format!("{:.1} GiB", b / f64::from(1 << 30)),
    }
}

/// The limit `LUMOS_MEMORY_LIMIT` sets: `None` where it sets none (unset,
/// or set but empty, as if unset), else the limit in bytes, `None` inside
/// for `off`.
fn variable_limit() -> Result<Option<Option<u64>>, BadMemoryLimit> {
    let Some(v) = std::env::var_os(LIMIT_VAR).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    limit_from_text(&v.to_string_lossy()).map(Some)
}

/// The limit a set `LUMOS_MEMORY_LIMIT` of `text` asks for: `None` for
/// `off` (in any case, as `OFF` in a shell script is as clear), else bytes.
fn limit_from_text(text: &str) -> Result<Option<u64>, BadMemoryLimit> {
    let t = text.trim();
    if t.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    // 0 would refuse every job: a slip for `off`, not a limit.
    match parse_size(t).filter(|&n| n > 0) {
        Some(n) => Ok(Some(n)),
        None => Err(BadMemoryLimit(text.to_string())),
    }
}

/// `text` as a number of bytes: digits, then an optional `K`, `M`, `G` or
/// `T` (powers of 1,024; `KB`, `MiB` and lower case are taken too).
fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let n: u64 = t[..digits].parse().ok()?;
    let shift = match t[digits..].trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
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
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let cgroup = cgroup_available(Path::new("/sys/fs/cgroup"), &own);
    Some(cgroup.map_or(machine, |c| c.min(machine)))
}

/// What the process's cgroup may still take, the least over it and its
/// ancestors (a parent's limit bounds its children): a limit less what
/// the cgroup uses apart from its inactive file pages (which the kernel
/// reclaims first), the working set as Docker and Kubernetes count it.
/// cgroup v2's `memory.max`, or the v1 memory controller's
/// `memory.limit_in_bytes`; `own` is `/proc/self/cgroup`, `root` where
/// the hierarchies are mounted. `None` without a limit, or where the
/// files cannot be read. A path that climbs (`..`, a cgroup outside the
/// process's namespace) is not followed: what it names is not an ancestor.
fn cgroup_available(root: &Path, own: &str) -> Option<u64> {
    let mut least: Option<u64> = None;
    for line in own.lines() {
        let mut fields = line.splitn(3, ':');
        let (_, controllers, path) = (fields.next(), fields.next(), fields.next());
        let (Some(controllers), Some(path)) = (controllers, path) else {
            continue;
        };
        if path.split('/').any(|part| part == "..") {
            continue;
        }
        let (mount, room): (PathBuf, fn(&Path) -> Option<u64>) = match controllers {
            "" => (root.to_owned(), v2_room),
            c if c.split(',').any(|c| c == "memory") => (root.join("memory"), v1_room),
            _ => continue,
        };
        // This cgroup and its ancestors, up to the mount (a container's
        // own cgroup is often the mount's root).
        let mut dir = mount.join(path.trim().trim_start_matches('/'));
        loop {
            if let Some(r) = room(&dir) {
                least = Some(least.map_or(r, |l| l.min(r)));
            }
            if dir == mount || !dir.pop() {
                break;
            }
        }
    }
    least
}

/// A cgroup v2 directory's room: `memory.max` (none when `max`) less
/// `memory.current` apart from `memory.stat`'s `inactive_file`.
fn v2_room(dir: &Path) -> Option<u64> {
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
    let max: u64 = read("memory.max")?.trim().parse().ok()?;
    let current: u64 = read("memory.current")?.trim().parse().ok()?;
    let file = stat_field(&read("memory.stat").unwrap_or_default(), "inactive_file");
    Some(max.saturating_sub(current.saturating_sub(file)))
}

/// A cgroup v1 memory controller directory's room: `memory.limit_in_bytes`
/// (none when it is the page-rounded `i64::MAX` that means no limit) less
/// `memory.usage_in_bytes` apart from `memory.stat`'s
/// `total_inactive_file`.
fn v1_room(dir: &Path) -> Option<u64> {
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
    let limit: u64 = read("memory.limit_in_bytes")?.trim().parse().ok()?;
    if limit >= 1 << 62 {
        return None;
    }
    let usage: u64 = read("memory.usage_in_bytes")?.trim().parse().ok()?;
    let cache = stat_field(
        &read("memory.stat").unwrap_or_default(),
        "total_inactive_file",
    );
    Some(limit.saturating_sub(usage.saturating_sub(cache)))
}

/// The number on `memory.stat`'s `name N` line, 0 without one.
fn stat_field(stat: &str, name: &str) -> u64 {
    (stat.lines())
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or(0)
}

/// The value of `/proc`'s `name   N kB` line, in bytes.
fn kib_field(text: &str, name: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(name))?;
    let kib: u64 = (line[name.len()..].trim().trim_end_matches("kB"))
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
        assert_eq!(parse_size("2T"), Some(2 << 40));
        assert_eq!(parse_size("1.5G"), None);
        assert_eq!(parse_size("G"), None);
        assert_eq!(parse_size(""), None);
        assert_eq!(parse_size("99999999999999999999G"), None);
        for off in ["off", "OFF", "Off", " off "] {
            assert_eq!(limit_from_text(off).unwrap(), None, "{off}");
        }
        assert_eq!(limit_from_text("2K").unwrap(), Some(2048));
        for bad in ["0", "offf", "of", ""] {
            assert!(limit_from_text(bad).is_err(), "{bad}");
        }
        let status = "Name:\tlumos\nVmRSS:\t   1234 kB\n";
        assert_eq!(kib_field(status, "VmRSS:"), Some(1234 * 1024));
        assert_eq!(kib_field(status, "MemAvailable:"), None);
        assert_eq!(size(16 << 30), "16.0 GiB");
        assert_eq!(size(300 << 20), "300.0 MiB");
        // A limit of 1K said "0.0 MiB".
        assert_eq!(size(1 << 10), "1.0 KiB");
        assert_eq!(size(5), "5 bytes");
    }

    #[test]
    fn cgroup_limits_v1_and_v2_the_least_over_the_ancestors() {
        let dir = lumos_testkit::TempDir::new("cgroups");
        let root = dir.join("sys");
        let write = |path: &str, files: &[(&str, &str)]| {
            let d = root.join(path);
            std::fs::create_dir_all(&d).unwrap();
            for (name, text) in files {
                std::fs::write(d.join(name), text).unwrap();
            }
        };
        // v2: the parent's limit is the lower; inactive file pages are not use.
        write("", &[("memory.stat", "anon 1\n")]);
        write(
            "pod",
            &[
                ("memory.max", "1000\n"),
                ("memory.current", "600\n"),
                ("memory.stat", ""),
            ],
        );
        write(
            "pod/app",
            &[
                ("memory.max", "max\n"),
                ("memory.current", "500\n"),
                ("memory.stat", "anon 300\nfile 250\ninactive_file 200\n"),
            ],
        );
        assert_eq!(cgroup_available(&root, "0::/pod/app\n"), Some(400));
        assert_eq!(cgroup_available(&root, "0::/\n"), None);
        // v1: no limit at the root; the memory controller's own line.
        write(
            "memory",
            &[("memory.limit_in_bytes", "9223372036854771712\n")],
        );
        write(
            "memory/job",
            &[
                ("memory.limit_in_bytes", "5000\n"),
                ("memory.usage_in_bytes", "3000\n"),
                (
                    "memory.stat",
                    "total_cache 1500\ninactive_file 10\ntotal_inactive_file 1000\n",
                ),
            ],
        );
        let v1 = "5:cpu,cpuacct:/job\n4:memory:/job\n0::/\n";
        assert_eq!(cgroup_available(&root, v1), Some(3000));
        // Both: the least.
        let both = "4:memory:/job\n0::/pod/app\n";
        assert_eq!(cgroup_available(&root, both), Some(400));
        // A path that is not there, and no cgroup file at all.
        assert_eq!(cgroup_available(&root, "4:memory:/elsewhere\n"), None);
        // A cgroup outside the namespace: not an ancestor, not followed.
        assert_eq!(cgroup_available(&root, "0::/../pod/app\n"), None);
        assert_eq!(cgroup_available(&root, ""), None);
    }

    /// A guard with `limit` bytes of limit, as `LUMOS_MEMORY_LIMIT` sets
    /// (the variable is the process's, shared by parallel tests).
    fn guard_at(limit: u64) -> MemoryGuard {
        MemoryGuard {
            limit: Some(limit),
            from_variable: true,
            purpose: ReadFor::Job,
            total: 4,
            skipped: AtomicU64::new(0),
            stopped_at: AtomicU64::new(0),
        }
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_replay_past_the_limit_is_refused_and_a_stopped_read_counts_what_it_skipped() {
        let held = resident_bytes().unwrap();
        let g = guard_at(held + (64 << 20));
        assert!(g.room_to_replay(4, 1000, 1 << 20).is_ok());
        let e = g.room_to_replay(4, 1000, 128 << 20).unwrap_err();
        assert_eq!((e.ranks, e.tasks, e.need), (4, 1000, 128 << 20));
        assert!(e
            .to_string()
            .starts_with("stopped before replaying 4 ranks together"));
        assert!(e.to_string().contains("--representatives"));
        // A job read before is replayed under a guard made then: its
        // error says so.
        let held_job = MemoryGuard {
            from_variable: false,
            purpose: ReadFor::HeldJob,
            ..guard_at(held + (64 << 20))
        };
        let e = held_job.room_to_replay(4, 1000, 128 << 20).unwrap_err();
        assert!(e
            .to_string()
            .contains("available when the replay was asked for"));
        assert!(e.to_string().contains("--representatives"));
        // Under a limit already passed, no file is read: each is counted.
        let g = guard_at(1);
        assert!(g.read(|| ()).is_none() && g.read(|| ()).is_none());
        assert_eq!(g.check().unwrap_err().skipped, 2);
        assert_eq!(g.not_read(2).skipped, 4);
        // Without a limit, nothing is refused.
        let off = MemoryGuard {
            limit: None,
            ..guard_at(0)
        };
        assert!(off.room_to_replay(1, 1, u64::MAX).is_ok());
        assert!(off.read(|| 1) == Some(1) && off.check().is_ok());
    }
}
