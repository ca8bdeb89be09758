//! The verdict the report opens with: what bounds the run.
//!
//! A replay's critical path half or more through CPU threads and launches
//! names the CPU (CPU/launch-bound), whatever the GPU's shares: faster
//! kernels would not shorten it. Otherwise, from the measured breakdown of
//! the window: the largest of GPU compute (exposed or overlapped with
//! communication), exposed communication and GPU idle time names the
//! bound, and when the GPU is mostly idle the critical path says why:
//! through peers in collectives (waiting for other ranks), or neither
//! (idle). A heuristic, stated as such on the page.

use crate::{BoundShare, BreakdownUs};

/// What bounds the run, with the shares behind it.
#[derive(Debug, Clone)]
pub(super) struct Verdict {
    /// One of `compute-bound`, `communication-bound`, `CPU/launch-bound`,
    /// `waiting for peers`, `idle-bound`, `no GPU work` (a CPU-only
    /// trace) or `no measured time` (a window of no length, or none).
    pub bound: &'static str,
    /// The shares of the window, in words.
    pub detail: String,
}

/// The breakdown of an empty window.
pub(super) const NOTHING: BreakdownUs = BreakdownUs {
    exposed_compute_us: 0.0,
    overlapped_us: 0.0,
    exposed_comm_us: 0.0,
    idle_us: 0.0,
    total_us: 0.0,
};

/// Critical-path bounds that are CPU-side: a thread's own order, another
/// thread, a launch. (A release, a start no dependency explains, is
/// neither CPU nor GPU.)
const CPU_BOUNDS: [&str; 3] = ["intra_thread", "inter_thread", "launch"];

/// The verdict of a window's breakdown `b` and critical-path shares.
pub(super) fn verdict(b: &BreakdownUs, path: &[BoundShare]) -> Verdict {
    // A window of no length has no shares: nothing names a bound (it
    // read "idle-bound", GPU idle 0%, from nothing).
    if b.total_us <= 0.0 {
        return Verdict {
            bound: "no measured time",
            detail: "The window has no measured length, so it has no shares to name a bound by"
                .to_owned(),
        };
    }
    // `+ 0.0` turns -0 into 0, which prints without a sign.
    let pct = |x: f64| x / b.total_us * 100.0 + 0.0;
    let compute = pct(b.exposed_compute_us + b.overlapped_us);
    let comm = pct(b.exposed_comm_us);
    let idle = pct(b.idle_us);
    let path_total: f64 = path.iter().map(|s| s.wait_us + s.busy_us).sum();
    // `None` on a path of no length (or none): no share of it exists.
    let share = |names: &[&str]| -> Option<f64> {
        let t: f64 = path
            .iter()
            .filter(|s| names.contains(&s.bound.as_str()))
            .map(|s| s.wait_us + s.busy_us)
            .sum();
        (path_total > 0.0).then(|| t / path_total * 100.0 + 0.0)
    };
    let (cpu, peers) = (share(&CPU_BOUNDS), share(&["rendezvous", "collective"]));
    let gpu_work = b.exposed_compute_us + b.overlapped_us + b.exposed_comm_us;
    // A path mostly through CPU threads and launches names the CPU before
    // any share of the GPU's: the corpus' recsys rank, GPU compute 65% of
    // its window, read "compute-bound" where its path ran 72% through the
    // CPU, `lumos replay` called every step CPU-bound, and compute kernels
    // twice as fast saved 1% of the step (ResNet50: 57%, 94%, 7%).
    let bound = if gpu_work <= 0.0 {
        "no GPU work"
    } else if cpu.is_some_and(|c| c >= 50.0) {
        "CPU/launch-bound"
    } else if idle >= compute.max(comm) {
        if peers.is_some_and(|p| p >= 50.0) {
            "waiting for peers"
        } else {
            "idle-bound"
        }
    } else if comm > compute {
        "communication-bound"
    } else {
        "compute-bound"
    };
    let path_words = match (cpu, peers) {
        (Some(cpu), Some(peers)) => format!(
            "critical path {cpu:.0}% through CPU threads and launches, {peers:.0}% through peers"
        ),
        _ => "the critical path has no length".to_owned(),
    };
    let detail = format!(
        "GPU compute {compute:.0}% of the window ({:.0}% overlapped with communication), \
         exposed communication {comm:.0}%, GPU idle {idle:.0}%; {path_words}",
        pct(b.overlapped_us)
    );
    Verdict { bound, detail }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(compute: f64, comm: f64, idle: f64) -> BreakdownUs {
        BreakdownUs {
            exposed_compute_us: compute,
            overlapped_us: 0.0,
            exposed_comm_us: comm,
            idle_us: idle,
            total_us: compute + comm + idle,
        }
    }

    fn share(bound: &str, us: f64) -> BoundShare {
        BoundShare {
            bound: bound.to_owned(),
            hops: 1,
            wait_us: 0.0,
            busy_us: us,
        }
    }

    #[test]
    fn the_largest_share_names_the_bound() {
        assert_eq!(verdict(&b(70.0, 10.0, 20.0), &[]).bound, "compute-bound");
        assert_eq!(
            verdict(&b(20.0, 50.0, 30.0), &[]).bound,
            "communication-bound"
        );
        let cpu = [share("launch", 8.0), share("intra_stream", 2.0)];
        assert_eq!(
            verdict(&b(20.0, 10.0, 70.0), &cpu).bound,
            "CPU/launch-bound"
        );
        let peers = [share("rendezvous", 8.0), share("launch", 2.0)];
        assert_eq!(
            verdict(&b(20.0, 10.0, 70.0), &peers).bound,
            "waiting for peers"
        );
        assert_eq!(
            verdict(&b(20.0, 10.0, 70.0), &[]).bound,
            "idle-bound",
            "no path: no share of it is CPU's"
        );
        // The GPU busy most of the window, but the path through the CPU:
        // faster kernels would not shorten it.
        assert_eq!(
            verdict(&b(70.0, 10.0, 20.0), &cpu).bound,
            "CPU/launch-bound"
        );
        let gpu = [share("intra_stream", 8.0), share("launch", 2.0)];
        assert_eq!(verdict(&b(70.0, 10.0, 20.0), &gpu).bound, "compute-bound");
        // A CPU-only trace: its window has no GPU task at all.
        assert_eq!(verdict(&b(0.0, 0.0, 50.0), &cpu).bound, "no GPU work");
    }

    /// A window of no length has no shares: no bound is named from them
    /// (it was "idle-bound", GPU idle 0%), and a path of no length has no
    /// shares either (it was "critical path 0% through CPU threads").
    #[test]
    fn nothing_measured_names_no_bound() {
        let v = verdict(&b(0.0, 0.0, 0.0), &[share("launch", 8.0)]);
        assert_eq!(v.bound, "no measured time");
        assert!(!v.detail.contains('%'), "{}", v.detail);
        assert_eq!(verdict(&NOTHING, &[]).bound, "no measured time");
        let v = verdict(&b(20.0, 10.0, 70.0), &[share("launch", 0.0)]);
        assert_eq!(v.bound, "idle-bound");
        assert!(
            v.detail.ends_with("the critical path has no length"),
            "{}",
            v.detail
        );
        let v = verdict(&b(20.0, 10.0, 70.0), &[share("launch", 8.0)]);
        assert!(v
            .detail
            .ends_with("100% through CPU threads and launches, 0% through peers"));
    }
}
