//! A file that gives every event a thread or a stream of its own: the
//! build keeps the tracks with the smallest ids, the same ones however it
//! reads the events, says what it left out, and takes memory for the kept
//! tracks only. The corpus has no such file (its traces have at most a few
//! threads and streams), so it is written here.

use std::path::Path;

use lumos_graph::{
    build, build_owned, build_streamed, check, dump, ProcKind, TrackSink, MAX_TRACKS,
};

/// Tracks past the limit in the file.
const EXTRA: usize = 300;

/// One CPU op per thread and one kernel per stream, `MAX_TRACKS + EXTRA`
/// of each, their ids in a scrambled order (a multiplicative permutation),
/// so that smaller ids keep arriving after the limit is reached; thread 0
/// and stream 0 have a second event, at the end of the file, followed by a
/// sync on the last stream.
fn trace_json() -> String {
    let n = (MAX_TRACKS + EXTRA) as u64;
    let mut events = Vec::new();
    for i in 0..n {
        let id = (i * 40_503) % n;
        events.push(format!(
            r#"{{"ph":"X","cat":"cpu_op","name":"op","pid":1,"tid":{id},"ts":{i},"dur":1}}"#
        ));
        events.push(format!(
            r#"{{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":{id},"ts":{i},"dur":1,"args":{{"device":0,"stream":{id}}}}}"#
        ));
    }
    events.push(
        r#"{"ph":"X","cat":"cpu_op","name":"op","pid":1,"tid":0,"ts":999999,"dur":1}"#.into(),
    );
    // A sync on a stream left out goes with it.
    events.push(format!(
        r#"{{"ph":"X","cat":"cuda_sync","name":"Stream Sync","pid":0,"tid":{last},"ts":999999,"dur":1,"args":{{"device":0,"stream":{last},"correlation":1}}}}"#,
        last = n - 1
    ));
    events.push(
        r#"{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":0,"ts":999999,"dur":1,"args":{"device":0,"stream":0}}"#
            .into(),
    );
    format!(r#"{{"traceEvents":[{}]}}"#, events.join(","))
}

#[test]
fn issue_12_tracks_past_the_limit_are_left_out_the_same_way_by_every_build() {
    let dir = lumos_testkit::TempDir::new("many-tracks");
    let path = dir.join("many_tracks.json");
    std::fs::write(&path, trace_json()).unwrap();
    let t = lumos_trace::read_path(&path).unwrap();
    assert_eq!(t.events.len(), 2 * (MAX_TRACKS + EXTRA) + 3);
    let (g, _, report) = build(&t);
    assert!(check(&g).is_empty());
    let (mut threads, mut streams) = (Vec::new(), Vec::new());
    for p in &g.processors {
        match p.kind {
            ProcKind::Thread { tid, .. } => threads.push(tid),
            ProcKind::Stream { stream, .. } => streams.push(stream),
        }
    }
    threads.sort_unstable();
    streams.sort_unstable();
    // The smallest ids are kept, each with all its events.
    let kept: Vec<i64> = (0..MAX_TRACKS as i64).collect();
    assert_eq!(threads, kept);
    assert_eq!(streams, kept);
    assert_eq!(g.tasks.len(), 2 * MAX_TRACKS + 2);
    for (what, events) in [("threads", EXTRA), ("streams", EXTRA + 1)] {
        let line = format!(
            "{events} events left out with their {what}: a build keeps the 65,536 {what} with \
             the smallest ids"
        );
        assert!(
            report.warnings.iter().any(|w| w.starts_with(&line)),
            "{:?}",
            report.warnings
        );
    }
    assert_eq!(report.events_on_left_out_threads, EXTRA as u64);
    assert_eq!(report.events_on_left_out_streams, EXTRA as u64 + 1);
    // The owned build reads the events last to first, the streamed one as
    // the reader folds them: the same graph and report.
    let want = dump(&g, Some(&report));
    let (g2, _, r2) = build_owned(t);
    assert_eq!(dump(&g2, Some(&r2)), want);
    let mut sink = TrackSink::new();
    let t3 = lumos_trace::read_path_into(Path::new(&path), &|_| {}, &mut sink).unwrap();
    let (g3, _, r3) = build_streamed(t3, sink);
    assert_eq!(dump(&g3, Some(&r3)), want);
}
