//! The launch queue: a CPU runs at most `depth` launches ahead of its
//! stream.

use lumos_sim::{Bound, SimOptions};

use crate::builder::{span, Builder};

/// One thread launching `n` kernels of 1 ms each with 1 us calls, onto one
/// stream.
fn launches(n: usize) -> (Builder, Vec<lumos_graph::TaskId>, Vec<lumos_graph::TaskId>) {
    let mut b = Builder::new();
    let (p, s) = (b.thread(), b.stream(0));
    let mut calls = Vec::new();
    let mut kernels = Vec::new();
    for _ in 0..n {
        let c = b.call(p, 1_000);
        let k = b.kernel(s, 1_000_000);
        b.launch(c, k, 0);
        calls.push(c);
        kernels.push(k);
    }
    (b, calls, kernels)
}

#[test]
fn without_a_depth_the_cpu_runs_ahead() {
    let (b, calls, _) = launches(6);
    let s = b.run();
    assert_eq!(span(&s, calls[5]), (5_000, 6_000));
}

#[test]
fn a_full_queue_holds_the_call_until_a_kernel_ends() {
    let (b, calls, kernels) = launches(6);
    let s = b.run_with(&SimOptions::default().launch_queue(2));
    // Calls 0 and 1 find room; call 2 waits for kernel 0's end (1 ms after
    // it started at 0), call 3 for kernel 1's, and so on.
    assert_eq!(span(&s, calls[1]), (1_000, 2_000));
    assert_eq!(span(&s, calls[2]).0, span(&s, kernels[0]).1);
    assert_eq!(
        s.bound_by[calls[2].idx()],
        Bound::LaunchQueue { on: kernels[0] }
    );
    assert_eq!(span(&s, calls[5]).0, span(&s, kernels[3]).1);
    // The GPU never idles: the queue is refilled as soon as it drains.
    for w in kernels.windows(2) {
        assert_eq!(span(&s, w[1]).0, span(&s, w[0]).1);
    }
}

#[test]
fn a_deep_queue_changes_nothing() {
    let (b, _, _) = launches(6);
    let free = b.run();
    let deep = b.run_with(&SimOptions::default().launch_queue(6));
    assert_eq!(free.start_ns, deep.start_ns);
    assert_eq!(free.end_ns, deep.end_ns);
}

#[test]
fn one_call_launching_many_kernels_never_waits_for_itself() {
    let mut b = Builder::new();
    let (p, s) = (b.thread(), b.stream(0));
    let graph_launch = b.call(p, 1_000);
    let kernels: Vec<_> = (0..5).map(|_| b.kernel(s, 1_000)).collect();
    for &k in &kernels {
        b.launch(graph_launch, k, 0);
    }
    let s = b
        .try_run_with(&SimOptions::default().launch_queue(2))
        .unwrap();
    assert_eq!(span(&s, graph_launch), (0, 1_000));
}
