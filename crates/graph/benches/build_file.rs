//! The graph build alone on one trace file: for profiling (`perf record`,
//! callgrind) and for comparing two builds of the builder side by side.
//!
//! ```text
//! cargo bench -p lumos-graph --bench build_file -- FILE [--runs N] [--owned] [--debug OUT]
//! ```
//!
//! Reads FILE once, builds its graph N times (default 5) and prints one
//! line per run and a summary (best and median build time, tasks/s, ns per
//! task), in wall-clock time and in the CPU time of all the process's
//! threads (Linux's `/proc/self/task/*/schedstat`; the build makes its
//! tasks on rayon's threads too): on a loaded machine the wall clock also
//! counts the time other processes held the cores, the CPU time does not.
//! The CPU time is also split into user and system time (`/proc/self/stat`,
//! 10 ms ticks): the system time is mostly the kernel handing the build
//! fresh pages, which on a virtual machine can cost as much as the build's
//! own work and move from run to run. `RAYON_NUM_THREADS=1` gives the
//! one-core build. For the build's own cost without that, run on a warm
//! heap: `MALLOC_ARENA_MAX=1 MALLOC_MMAP_THRESHOLD_=4294967296
//! MALLOC_TRIM_THRESHOLD_=68719476736 MALLOC_TOP_PAD_=0` make glibc keep
//! what each run frees on its one heap (with more arenas, the vectors the
//! build allocates on rayon's threads are mapped apart once over 64 MB and
//! returned to the kernel when freed), and each run's graph is freed
//! before the next is built, so after the first runs grow the heap the
//! later ones touch no fresh page. With `--debug OUT` it writes the `Debug` form of the last build's
//! graph, measured times and report to OUT, so two versions of the builder
//! can be checked to build the very same graph (`cmp` the files). With
//! `--owned` each run builds with `build_owned` (what `lumos replay` does),
//! on a copy of the trace made outside the timing; the last run takes the
//! trace itself, so `--owned --runs 1` holds one trace only.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

use std::time::Instant;

fn main() {
    let mut file = None;
    let mut runs = 5usize;
    let mut debug = None;
    let mut owned = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            // `cargo bench` passes this to every bench target.
            "--bench" => {}
            "--runs" => runs = args.next().and_then(|n| n.parse().ok()).unwrap_or(runs),
            "--debug" => debug = args.next(),
            "--owned" => owned = true,
            _ if file.is_none() && !a.starts_with('-') => file = Some(a),
            _ => {}
        }
    }
    // Without a file (`cargo bench` over every target) there is nothing to do.
    let Some(file) = file else {
        eprintln!("build_file: no trace file given, nothing to time");
        return;
    };
    let mut trace = match lumos_trace::read_path(std::path::Path::new(&file)) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("build_file: {file}: {e}");
            std::process::exit(1);
        }
    };
    let mut times = Vec::new();
    let mut cpu_times = Vec::new();
    let mut user_times = Vec::new();
    let mut last = None;
    let events = trace.events.len();
    let runs = runs.max(1);
    for run in 0..runs {
        let given = match (owned, run + 1 == runs) {
            (false, _) => None,
            (true, false) => Some(trace.clone()),
            (true, true) => Some(std::mem::take(&mut trace)),
        };
        // The previous run's graph is freed before this one is built, so
        // that a warm heap (see the module's docs) is reused, not grown to
        // hold two graphs.
        drop(last.take());
        let c0 = process_cpu_s();
        let us0 = process_user_system_s();
        let t0 = Instant::now();
        let built = match given {
            Some(t) => lumos_graph::build_owned(t),
            None => lumos_graph::build(&trace),
        };
        let s = t0.elapsed().as_secs_f64();
        let cpu = process_cpu_s().zip(c0).map(|(b, a)| b - a);
        let user_system = (process_user_system_s().zip(us0)).map(|(b, a)| (b.0 - a.0, b.1 - a.1));
        let tasks = built.0.tasks.len();
        let split = user_system.map_or(String::new(), |(u, k)| {
            user_times.push(u);
            format!(" ({u:.2} s user, {k:.2} s system)")
        });
        match cpu {
            Some(c) => {
                println!("run {run}: {s:.4} s, {c:.4} s CPU{split}, {tasks} tasks");
                cpu_times.push(c);
            }
            None => println!("run {run}: {s:.4} s{split}, {tasks} tasks"),
        }
        times.push(s);
        // Dropped outside the timing, like a caller that keeps the graph.
        last = Some(built);
    }
    let (graph, measured, report) = last.expect("at least one run");
    times.sort_by(f64::total_cmp);
    let (best, median) = (times[0], times[times.len() / 2]);
    let n = graph.tasks.len() as f64;
    println!(
        "{file}: {} events, {} tasks, build best {best:.4} s / median {median:.4} s \
         ({:.0} k tasks/s best, {:.0} ns/task best)",
        events,
        graph.tasks.len(),
        n / best / 1e3,
        best * 1e9 / n
    );
    if !cpu_times.is_empty() {
        cpu_times.sort_by(f64::total_cmp);
        let (best, median) = (cpu_times[0], cpu_times[cpu_times.len() / 2]);
        println!(
            "{file}: CPU time best {best:.4} s / median {median:.4} s \
             ({:.0} k tasks/s best, {:.0} k median; {:.0} / {:.0} ns/task)",
            n / best / 1e3,
            n / median / 1e3,
            best * 1e9 / n,
            median * 1e9 / n
        );
    }
    if !user_times.is_empty() {
        user_times.sort_by(f64::total_cmp);
        let (best, median) = (user_times[0], user_times[user_times.len() / 2]);
        println!(
            "{file}: user time best {best:.2} s / median {median:.2} s \
             ({:.0} / {:.0} ns/task; 10 ms ticks)",
            best * 1e9 / n,
            median * 1e9 / n
        );
    }
    if let Some(out) = debug {
        let text = format!("{graph:#?}\n{measured:#?}\n{report:#?}\n");
        if let Err(e) = std::fs::write(&out, text) {
            eprintln!("build_file: {out}: {e}");
            std::process::exit(1);
        }
    }
}

/// The CPU time of every thread of the process so far, in seconds: the
/// first field of each `/proc/self/task/*/schedstat` (ns on a CPU), added
/// up, since the build makes its tasks on rayon's threads too (which live
/// as long as the process, so a difference of two readings is the build's).
/// `None` where there is no such file (not Linux, no schedstats).
fn process_cpu_s() -> Option<f64> {
    let mut ns = 0u64;
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let text = std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok()?;
        ns += text.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(ns as f64 / 1e9)
}

/// The process's user and system CPU time so far, in seconds: fields 14
/// and 15 of `/proc/self/stat`, in the kernel's `USER_HZ` ticks (100 a
/// second on every architecture Linux exports them for). Coarser than
/// [`process_cpu_s`], but it tells the build's own work from the kernel's
/// (on a virtual machine handing out fresh pages slowly, the system time
/// of a large build moves from run to run while the user time does not).
fn process_user_system_s() -> Option<(f64, f64)> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace().skip(11);
    let user: f64 = fields.next()?.parse().ok()?;
    let system: f64 = fields.next()?.parse().ok()?;
    Some((user / 100.0, system / 100.0))
}
