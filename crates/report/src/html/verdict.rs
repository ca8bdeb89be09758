//! The verdict the report opens with: what bounds the run.
//!
//! From the measured breakdown of the window: the largest of GPU compute
//! (exposed or overlapped with communication), exposed communication and
//! GPU idle time names the bound. When the GPU is mostly idle, the replay's
//! critical path says why: through CPU threads and launches (CPU/launch
//! bound), through peers in collectives (waiting for other ranks), or
//! neither (idle). A heuristic, stated as such on the page.

use crate::{BoundShare, BreakdownUs};

/// What bounds the run, with the shares behind it.
#[derive(Debug, Clone)]
pub(super) struct Verdict {
    /// One of `compute-bound`, `communication-bound`, `CPU/launch-bound`,
    /// `waiting for peers`, `idle-bound`, or `no GPU work` (a CPU-only
    /// trace).
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
    let total = b.total_us.max(f64::MIN_POSITIVE);
    // `+ 0.0` turns -0 into 0, which prints without a sign.
    let pct = |x: f64| x / total * 100.0 + 0.0;
    let compute = pct(b.exposed_compute_us + b.overlapped_us);
    let comm = pct(b.exposed_comm_us);
    let idle = pct(b.idle_us);
    let path_total: f64 = path.iter().map(|s| s.wait_us + s.busy_us).sum();
    let share = |names: &[&str]| -> f64 {
        let t: f64 = path
            .iter()
            .filter(|s| names.contains(&s.bound.as_str()))
            .map(|s| s.wait_us + s.busy_us)
            .sum();
        if path_total > 0.0 {
            t / path_total * 100.0 + 0.0
        } else {
            0.0
        }
    };
    let cpu = share(&CPU_BOUNDS);
    let peers = share(&["rendezvous", "collective"]);
    let gpu_work = b.exposed_compute_us + b.overlapped_us + b.exposed_comm_us;
    let bound = if gpu_work <= 0.0 && b.total_us > 0.0 {
        "no GPU work"
    } else if idle >= compute.max(comm) {
        if cpu >= 50.0 {
            "CPU/launch-bound"
        } else if peers >= 50.0 {
            "waiting for peers"
        } else {
            "idle-bound"
        }
    } else if comm > compute {
        "communication-bound"
    } else {
        "compute-bound"
    };
    let detail = format!(
        "GPU compute {compute:.0}% of the window ({:.0}% overlapped with communication), \
         exposed communication {comm:.0}%, GPU idle {idle:.0}%; \
         critical path {cpu:.0}% through CPU threads and launches, {peers:.0}% through peers",
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
        assert_eq!(verdict(&b(0.0, 0.0, 0.0), &[]).bound, "idle-bound");
        // A CPU-only trace: its window has no GPU task at all.
        assert_eq!(verdict(&b(0.0, 0.0, 50.0), &cpu).bound, "no GPU work");
    }
}
