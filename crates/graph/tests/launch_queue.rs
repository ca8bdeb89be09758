//! A launch that waited for a slot in its stream's full launch queue is a
//! wait on the GPU (`Rule::FullLaunchQueue`), not CPU work: a CPU far ahead
//! of its GPU (hundreds of kernels queued) blocks in each launch until a
//! kernel ends, for as long as that kernel runs, often well under the
//! 100 us that a long blocking call needs.
//!
//! No corpus trace shows a full queue (the rule finds none there: their
//! deepest queues are far from full when a launch happens to return as a
//! kernel ends), so the traces are generated here: one thread launching
//! onto one stream faster than its kernels run.

use std::path::Path;

use lumos_graph::{build, check, DepKind, Rule};

/// A trace of launches of 5 us, 1 us apart, onto one stream, in phases of
/// (launches, kernel length in us, queue, CPU pause after, in us): kernels
/// run back to back, and
/// with a phase's `queue` launches pending a launch blocks until the
/// oldest pending kernel starts (as the one before it ends) and returns
/// 3 us later. Returns the JSON and, per phase, how many launches blocked
/// for at least 15 us (three times the usual launch).
fn queued_trace(phases: &[(usize, f64, usize, f64)]) -> (String, Vec<usize>) {
    let mut events = Vec::new();
    let (mut cpu, mut gpu_free) = (1000.0f64, 0.0f64);
    let mut starts: Vec<f64> = Vec::new();
    let mut blocked = vec![0; phases.len()];
    for (phase, &(n, kernel_us, queue, pause)) in phases.iter().enumerate() {
        for _ in 0..n {
            let mut dur = 5.0;
            // Launches not yet started when this one is issued.
            let pending = starts.iter().rev().take_while(|&&s| s > cpu).count();
            if pending >= queue {
                let slot = starts[starts.len() - queue];
                dur = (slot + 3.0 - cpu).max(dur);
            }
            if dur >= 15.0 {
                blocked[phase] += 1;
            }
            let corr = starts.len() + 1;
            events.push(format!(
                r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{cpu:.3},"dur":{dur:.3},"args":{{"correlation":{corr}}}}}"#
            ));
            let start = (cpu + 5.0).max(gpu_free);
            gpu_free = start + kernel_us;
            starts.push(start);
            events.push(format!(
                r#"{{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":{start:.3},"dur":{kernel_us:.3},"args":{{"correlation":{corr},"device":0,"stream":7}}}}"#
            ));
            cpu += dur + 1.0;
        }
        cpu += pause;
    }
    let json = format!(r#"{{"traceEvents":[{}]}}"#, events.join(","));
    (json, blocked)
}

fn full_queue_waits(json: &str) -> u64 {
    let t = lumos_trace::read_bytes(Path::new("queue.json"), json.as_bytes()).unwrap();
    let (g, _, report) = build(&t);
    assert!(check(&g).is_empty());
    report
        .inferred
        .get(&(DepKind::Sync, Rule::FullLaunchQueue))
        .copied()
        .unwrap_or(0)
}

#[test]
fn launches_blocked_by_a_full_queue_wait_for_the_gpu() {
    // The GPU keeps up with 1 us kernels, then falls behind with 40 us ones.
    let (json, blocked) = queued_trace(&[(3000, 1.0, 1000, 0.0), (2500, 40.0, 1000, 0.0)]);
    assert!(blocked[1] > 100, "{blocked:?}");
    assert_eq!(full_queue_waits(&json), blocked[1] as u64);
}

#[test]
fn a_shallow_queue_is_no_evidence() {
    // Launches blocked with 100 pending: a CPU that slows down for another
    // reason as a kernel ends is not taken for blocked.
    let (json, blocked) = queued_trace(&[(1500, 1.0, 100, 0.0), (600, 40.0, 100, 0.0)]);
    assert!(blocked[1] > 100, "{blocked:?}");
    assert_eq!(full_queue_waits(&json), 0);
}

#[test]
fn only_a_queue_at_its_deepest_is_full() {
    // Blocked with 300 pending, then, after the GPU caught up, with 1,000:
    // only the launches at the stream's capacity waited for a slot.
    let phases = [
        (3000, 1.0, 300, 0.0),
        (800, 40.0, 300, 20_000.0),
        (3000, 1.0, 1000, 0.0),
        (2500, 40.0, 1000, 0.0),
    ];
    let (json, blocked) = queued_trace(&phases);
    assert!(
        blocked[1] > 100 && blocked[2] == 0 && blocked[3] > 100,
        "{blocked:?}"
    );
    assert_eq!(full_queue_waits(&json), blocked[3] as u64);
}
