//! An `.lgraph` file gives back what its trace gave, and a damaged one is
//! an error naming the file, never a panic.

use std::path::Path;

use lumos_store::{
    ingest_file, read_program, read_rank, read_stored, read_summary, Problem, Source, StoredRank,
};
use lumos_testkit::{corpus, TempDir};

const TRACES: &[&str] = &[
    "single-rank/a100-recsys-rank3of8.json.gz",
    "single-rank/a100-alexnet-cuda-sync.json.gz",
    "single-rank/mi300x-resnet-ddp-rank0of8.json.gz",
    "micro/a100-event-sync.json.gz",
    "multi-rank/dlrm-8xv100/rank3.json.gz",
];

/// Everything the file holds, as text: the model types implement `Debug`,
/// not `PartialEq`.
fn text(s: &StoredRank) -> String {
    format!("{s:?}")
}

#[test]
fn ingested_traces_read_back_as_built() {
    let Some(c) = corpus() else { return };
    let dir = TempDir::new("store-roundtrip");
    for rel in TRACES {
        let path = c.path(rel);
        let out = dir.join("rank.lgraph");
        let done = ingest_file(&path, &out).unwrap();
        let trace = lumos_trace::read_path(&path).unwrap();
        let mut built = StoredRank::from_trace(&trace, Source::of_file(&path));
        let read = read_stored(&out).unwrap();
        // What is read knows the file it was read from; errors name it.
        assert_eq!(read.compact.as_deref(), Some(out.as_path()));
        assert_eq!(read.file(), out);
        built.compact = Some(out.clone());
        assert_eq!(text(&read), text(&built), "{rel}");
        assert_eq!(done.bytes_written, std::fs::metadata(&out).unwrap().len());
        let summary = read_summary(&out).unwrap();
        assert_eq!(summary, built.summary);
        let (_, program) = read_program(&out).unwrap();
        assert_eq!(program, built.program);
        let input = read_rank(&out).unwrap();
        let mut direct = lumos_graph::RankInput::from_trace(&trace);
        // Format 1 keeps no track names, labels or sort order, GPU-side
        // annotations or non-launch flows (docs/LGRAPH.md): a timeline
        // written from an .lgraph file has the default tracks and neither.
        direct.meta.about.tracks.clear();
        direct.meta.about.gpu_annotations.clear();
        direct.meta.about.flows.clear();
        direct.meta.compact = Some(out.clone());
        assert_eq!(format!("{input:?}"), format!("{direct:?}"), "{rel}");
        assert_eq!(
            lumos_graph::dump(&input.graph.graph, Some(&input.report)),
            lumos_graph::dump(&direct.graph.graph, Some(&direct.report))
        );
    }
}

#[test]
fn the_same_trace_gives_the_same_bytes() {
    let Some(c) = corpus() else { return };
    let dir = TempDir::new("store-stable");
    let path = c.path(TRACES[0]);
    ingest_file(&path, &dir.join("a.lgraph")).unwrap();
    ingest_file(&path, &dir.join("b.lgraph")).unwrap();
    assert_eq!(
        std::fs::read(dir.join("a.lgraph")).unwrap(),
        std::fs::read(dir.join("b.lgraph")).unwrap()
    );
}

fn message(path: &Path) -> String {
    read_stored(path).map(|_| ()).unwrap_err().to_string()
}

#[test]
fn damaged_files_are_errors_naming_the_file() {
    let Some(c) = corpus() else { return };
    let dir = TempDir::new("store-damaged");
    let good = dir.join("good.lgraph");
    ingest_file(&c.path("micro/a100-event-sync.json.gz"), &good).unwrap();
    let bytes = std::fs::read(&good).unwrap();
    let bad = dir.join("bad.lgraph");
    // Every truncation.
    let step = (bytes.len() / 200).max(1);
    for len in (0..bytes.len()).step_by(step) {
        std::fs::write(&bad, &bytes[..len]).unwrap();
        let e = read_stored(&bad).unwrap_err();
        assert!(e.to_string().contains("bad.lgraph"), "{e}");
        if len >= 8 {
            assert!(matches!(e.problem, Problem::Truncated), "at {len}: {e}");
        }
        // The summary alone is read as long as its section is whole.
        let _ = read_summary(&bad);
    }
    // Every flipped byte, a few hundred places.
    for i in (0..bytes.len()).step_by(step) {
        let mut b = bytes.clone();
        b[i] ^= 0x5a;
        std::fs::write(&bad, &b).unwrap();
        let e = read_stored(&bad)
            .map(|_| ())
            .expect_err(&format!("flip at {i} went unnoticed"));
        assert!(e.to_string().contains("bad.lgraph"), "{e}");
    }
    // A huge section length is an error, not an allocation.
    let mut b = bytes.clone();
    b[64 + 16..64 + 24].copy_from_slice(&(u64::MAX / 2).to_le_bytes());
    std::fs::write(&bad, &b).unwrap();
    assert!(message(&bad).contains("corrupt"), "{}", message(&bad));
}

#[test]
fn other_versions_and_other_files_are_told_apart() {
    let Some(c) = corpus() else { return };
    let dir = TempDir::new("store-version");
    let good = dir.join("good.lgraph");
    ingest_file(&c.path("micro/a100-event-sync.json.gz"), &good).unwrap();
    let mut bytes = std::fs::read(&good).unwrap();
    // A later version; format 9, whose graphs lack the full launch
    // queue's waits; format 7, whose records lack the count of stream
    // waits satisfied at once (read as 0 it would be a silently wrong
    // number) and whose graphs hold edges inferred for some of them;
    // format 6, whose records lack the counts of events ending absurdly
    // late and of launch calls without their GPU task: the rule is one
    // version read (docs/LGRAPH.md).
    for v in [11u32, 9, 7] {
        bytes[8..12].copy_from_slice(&v.to_le_bytes());
        let other = dir.join(format!("v{v}.lgraph"));
        std::fs::write(&other, &bytes).unwrap();
        let e = read_summary(&other).unwrap_err();
        assert!(e.is_version());
        let m = e.to_string();
        assert!(
            m.contains(&format!("v{v}.lgraph"))
                && m.contains(&format!("version {v} "))
                && m.contains("reads version 10: ingest the trace again"),
            "{m}"
        );
    }

    let json = dir.join("trace.lgraph");
    std::fs::write(&json, b"{\"traceEvents\": []}").unwrap();
    assert!(matches!(
        read_summary(&json).unwrap_err().problem,
        Problem::NotLgraph
    ));
    let m = message(&dir.join("absent.lgraph"));
    assert!(m.contains("absent.lgraph"), "{m}");
}

#[test]
fn the_host_a_trace_names_reads_back() {
    let Some(c) = corpus() else { return };
    let dir = TempDir::new("store-host");
    let path = c.path("micro/a100-event-sync.json.gz");
    let mut trace = lumos_trace::read_path(&path).unwrap();
    trace.meta.hostname = Some("node7".into());
    let mut built = StoredRank::from_trace(&trace, Source::of_file(&path));
    assert_eq!(built.graph.host.as_deref(), Some("node7"));
    let out = dir.join("rank.lgraph");
    built.compact = Some(out.clone());
    lumos_store::write_stored_file(&built, &out).unwrap();
    let read = read_stored(&out).unwrap();
    assert_eq!(read.graph.host.as_deref(), Some("node7"));
    assert_eq!(read.facts.meta.hostname.as_deref(), Some("node7"));
    assert_eq!(text(&read), text(&built));
}

/// What the report does not store (GPU tasks before their launch, the
/// shortest delay after one, launches several GPU tasks share, syncs that
/// returned before the work they waited for ended) is derived again from
/// the graph read back: a trace with its GPU clock hours behind or hours
/// or seconds ahead, or with GPU tasks repeating a kernel launch's
/// correlation id, is flagged read back as built.
#[test]
fn launch_facts_not_stored_read_back_as_built() {
    let Some(c) = corpus() else { return };
    let dir = TempDir::new("store-launch-facts");
    let path = c.path("single-rank/rtx2080ti-linear-train.json.gz");
    let clean = lumos_trace::read_path(&path).unwrap();
    let mut skewed = clean.clone();
    for e in skewed
        .events
        .iter_mut()
        .filter(|e| e.category.is_gpu_work())
    {
        e.ts_ns -= 3 * 3_600_000_000_000;
    }
    let mut ahead = clean.clone();
    for e in (ahead.events.iter_mut()).filter(|e| e.category.is_gpu_work()) {
        e.ts_ns += 3 * 3_600_000_000_000;
    }
    // Under the minute that launch delays tell: only the syncs do.
    let mut seconds_ahead = clean.clone();
    for e in (seconds_ahead.events.iter_mut()).filter(|e| e.category.is_gpu_work()) {
        e.ts_ns += 2_000_000_000;
    }
    let mut shared = clean;
    let mut gpu = (shared.events.iter_mut()).filter(|e| e.category.is_gpu_work());
    let first = gpu.next().unwrap().correlation();
    gpu.take(3).for_each(|e| {
        e.set_correlation(first);
    });
    for (label, trace) in [
        ("skewed", skewed),
        ("ahead", ahead),
        ("seconds ahead", seconds_ahead),
        ("shared", shared),
    ] {
        let mut built = StoredRank::from_trace(&trace, Source::of_file(&path));
        assert!(built.report.flagged(), "{label}");
        let out = dir.join("rank.lgraph");
        built.compact = Some(out.clone());
        lumos_store::write_stored_file(&built, &out).unwrap();
        let read = read_stored(&out).unwrap();
        assert_eq!(
            read.report.flag_reasons(),
            built.report.flag_reasons(),
            "{label}"
        );
        assert_eq!(
            read.report.shortest_launch_delay_ns, built.report.shortest_launch_delay_ns,
            "{label}"
        );
        let syncs = |r: &lumos_graph::BuildReport| (r.syncs_returned_early, r.longest_sync_lead_ns);
        assert_eq!(syncs(&read.report), syncs(&built.report), "{label}");
        assert_eq!(text(&read), text(&built), "{label}");
    }
}

/// A file written before a gross delay after the launches, or syncs
/// returning before the work they waited for, were warned about (the GPU
/// clock hours or seconds ahead; same format) lacks those warnings: read
/// back, the trace is flagged and the reasons are among its warnings, as
/// built now.
#[test]
fn gross_clock_skews_are_warned_about_read_from_an_older_file() {
    let Some(c) = corpus() else { return };
    let dir = TempDir::new("store-launch-delay");
    let path = c.path("single-rank/rtx2080ti-linear-train.json.gz");
    let clean = lumos_trace::read_path(&path).unwrap();
    let launches = "every launched GPU task starts 10800.0";
    let syncs = "1 synchronizing call returns before the GPU work";
    for (ahead_ns, said) in [
        (3 * 3_600_000_000_000, &[launches, syncs][..]),
        (2_000_000_000, &[syncs][..]),
    ] {
        let mut ahead = clean.clone();
        for e in (ahead.events.iter_mut()).filter(|e| e.category.is_gpu_work()) {
            e.ts_ns += ahead_ns;
        }
        let built = StoredRank::from_trace(&ahead, Source::of_file(&path));
        let reasons = built.report.flag_reasons();
        let of = |w: &String| said.iter().any(|s| w.starts_with(s));
        assert!(
            reasons.len() == said.len() && reasons.iter().all(of),
            "{ahead_ns}: {reasons:?}"
        );
        let mut older = built.clone();
        older.report.warnings.retain(|w| !of(w));
        let out = dir.join("rank.lgraph");
        older.compact = Some(out.clone());
        lumos_store::write_stored_file(&older, &out).unwrap();
        let read = read_stored(&out).unwrap();
        assert_eq!(read.report.flag_reasons(), reasons, "{ahead_ns}");
        assert_eq!(read.report.warnings, built.report.warnings, "{ahead_ns}");
    }
}

/// Values a trace could not have given, written into well-formed files
/// (their checksums right), are errors naming the file: each was a hang,
/// an abort or an error without the file's name further on.
#[test]
fn impossible_values_are_errors_naming_the_file() {
    let Some(c) = corpus() else { return };
    let dir = TempDir::new("store-impossible");
    let path = c.path("multi-rank/dlrm-8xv100/rank3.json.gz");
    let trace = lumos_trace::read_path(&path).unwrap();
    let good = StoredRank::from_trace(&trace, Source::of_file(&path));
    assert!(!good.graph.comms.is_empty() && !good.graph.graph.steps.is_empty());
    let thread = (good.graph.graph.processors.iter())
        .position(|p| !p.is_stream())
        .unwrap();
    type Damage = Box<dyn Fn(&mut StoredRank)>;
    let cases: Vec<(&str, Damage)> = vec![
        ("world size 4294967295 is above 1048576", {
            Box::new(|s| s.facts.meta.world_size = Some(u32::MAX))
        }),
        ("world size 4294967295 is above 1048576", {
            Box::new(|s| s.summary.world_size = Some(u32::MAX))
        }),
        ("a measured time starts at", {
            Box::new(|s| s.graph.measured.tasks[1].end_ns = i64::MIN)
        }),
        ("which is not a GPU stream", {
            Box::new(move |s| {
                s.graph.graph.runtime_deps.push(lumos_graph::RuntimeDep {
                    task: lumos_graph::TaskId(0),
                    target: lumos_graph::WaitTarget::StreamTail(lumos_graph::ProcId(thread as u32)),
                    latency_ns: 0,
                    inferred: false,
                })
            })
        }),
        ("listed twice among the communication tasks", {
            Box::new(|s| {
                let first = s.graph.comms[0].clone();
                s.graph.comms.push(first);
                let timing = s.program.comms[0];
                s.program.comms.push(timing);
                s.summary.comm_tasks += 1;
            })
        }),
        ("has a lead of -1 ns", {
            Box::new(|s| s.graph.graph.steps[0].lead_ns = -1)
        }),
        ("the summary does not match", {
            Box::new(|s| s.summary.rank += 1)
        }),
        ("the summary does not match", {
            Box::new(|s| s.summary.world_size = Some(7))
        }),
        // What representatives read alone of a file (the summary's
        // signature and steps group ranks and measure a group; the
        // program's timings model its peers) is checked when the file is
        // read whole: made up, it moved the rank to a group of its own or
        // changed its group's measured steps without a word.
        ("the summary does not match", {
            Box::new(|s| {
                s.summary.signature =
                    lumos_graph::ProgramSignature::from_u64(s.summary.signature.as_u64() ^ 1)
            })
        }),
        ("the summary does not match", {
            Box::new(|s| s.summary.steps_ns[0] += 1)
        }),
        ("the summary does not match", {
            Box::new(|s| s.summary.devices += 1)
        }),
        ("the summary does not match", {
            Box::new(|s| s.summary.json_bytes += 1)
        }),
        ("the summary does not match", {
            Box::new(|s| s.summary.rank_source = lumos_trace::RankSource::Default)
        }),
        ("the program's communication timings do not match", {
            Box::new(|s| s.program.comms[0].end_ns += 1)
        }),
        ("a measured step of -5 ns", {
            Box::new(|s| s.summary.steps_ns[0] = -5)
        }),
    ];
    for (want, damage) in cases {
        let mut s = StoredRank::from_trace(&trace, Source::of_file(&path));
        damage(&mut s);
        let bad = dir.join("bad.lgraph");
        lumos_store::write_stored_file(&s, &bad).unwrap();
        let m = message(&bad);
        assert!(m.contains("bad.lgraph") && m.contains(want), "{want}: {m}");
    }
    // A step that runs backwards is refused by the summary alone too, as
    // representatives read it.
    let mut s = StoredRank::from_trace(&trace, Source::of_file(&path));
    s.summary.steps_ns[0] = -5;
    let bad = dir.join("bad.lgraph");
    lumos_store::write_stored_file(&s, &bad).unwrap();
    let m = read_summary(&bad).unwrap_err().to_string();
    assert!(
        m.contains("bad.lgraph") && m.contains("a measured step of -5 ns"),
        "{m}"
    );
}

/// A file whose summary puts its rank in a program of its own (its
/// checksums right) is the representative of that group, so its graph is
/// read whole, and the made-up summary is an error naming the file rather
/// than a group of one replayed as the job.
#[test]
fn representatives_refuse_a_summary_the_graph_does_not_have() {
    let Some(c) = corpus() else { return };
    let dir = TempDir::new("store-forged-summary");
    let (a, b) = (dir.join("rank0.lgraph"), dir.join("rank3.lgraph"));
    ingest_file(&c.path("multi-rank/dlrm-8xv100/rank0.json.gz"), &a).unwrap();
    let path = c.path("multi-rank/dlrm-8xv100/rank3.json.gz");
    let mut s = StoredRank::from_trace(
        &lumos_trace::read_path(&path).unwrap(),
        Source::of_file(&path),
    );
    s.summary.signature = lumos_graph::ProgramSignature::from_u64(s.summary.signature.as_u64() ^ 1);
    lumos_store::write_stored_file(&s, &b).unwrap();
    let r = lumos_store::load_representatives(&[a, b.clone()], &|| {});
    let messages: Vec<String> = r.errors.iter().map(ToString::to_string).collect();
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert!(
        messages[0].starts_with(&b.display().to_string())
            && messages[0].contains("the summary does not match the graph"),
        "{messages:?}"
    );
}

/// Two files of one rank are not a job to replay from representatives,
/// as they are not for `lumos replay --job`: both would be counted in the
/// rank's group (a forged summary rank does the same).
#[test]
fn representatives_refuse_two_files_of_one_rank() {
    let Some(c) = corpus() else { return };
    let dir = TempDir::new("store-same-rank");
    let (a, b) = (dir.join("a.lgraph"), dir.join("b.lgraph"));
    ingest_file(&c.path("multi-rank/dlrm-8xv100/rank3.json.gz"), &a).unwrap();
    std::fs::copy(&a, &b).unwrap();
    let r = lumos_store::load_representatives(&[a.clone(), b.clone()], &|| {});
    assert!(matches!(r.job, Err(lumos_graph::JobError::NoRanks)) && r.groups.is_empty());
    let messages: Vec<String> = r.errors.iter().map(ToString::to_string).collect();
    let want = format!(
        "{} and {} both claim rank 3: a job takes one file per rank",
        a.display(),
        b.display()
    );
    assert_eq!(messages, [want]);
    // As a job's ranks (`--job`), the error names the files given, not the
    // trace both were ingested from.
    let ranks = vec![read_rank(&a).unwrap(), read_rank(&b).unwrap()];
    let m = lumos_graph::assemble(ranks).unwrap_err().to_string();
    assert!(
        m.contains(&format!(
            "{} (distributedInfo) and {}",
            a.display(),
            b.display()
        )),
        "{m}"
    );
    assert!(!m.contains("rank3.json.gz"), "{m}");
}

/// A file that records no rank (and has none in its name), among
/// several, defaults to rank 0 but claims none: the error says so, as
/// `--job`'s does.
#[test]
fn representatives_name_a_file_without_a_rank() {
    let Some(c) = corpus() else { return };
    let dir = TempDir::new("store-no-rank");
    let (a, b) = (dir.join("first.json.gz"), dir.join("second.json.gz"));
    std::fs::copy(c.path("single-rank/h100-vit-inference.json.gz"), &a).unwrap();
    std::fs::copy(&a, &b).unwrap();
    // With another file of a recorded rank too: no clash, the same refusal.
    let ranked = c.path("multi-rank/dlrm-8xv100/rank3.json.gz");
    for inputs in [vec![a.clone(), b], vec![ranked, a.clone()]] {
        let r = lumos_store::load_representatives(&inputs, &|| {});
        assert!(matches!(r.job, Err(lumos_graph::JobError::NoRanks)));
        let messages: Vec<String> = r.errors.iter().map(ToString::to_string).collect();
        assert_eq!(messages.len(), 1, "{messages:?}");
        assert!(
            messages[0].starts_with(&format!(
                "{}: cannot tell which rank this file is",
                a.display()
            )),
            "{messages:?}"
        );
    }
}

/// The trace's path is kept as its bytes (format 5): a name that is not
/// UTF-8 was stored as `tr\u{FFFD}.json.gz` (format 4), so what is named
/// after the trace from its `.lgraph` file named no file.
#[cfg(unix)]
#[test]
fn a_trace_path_that_is_not_utf8_reads_back_as_its_bytes() {
    use std::os::unix::ffi::OsStrExt;
    let Some(c) = corpus() else { return };
    let dir = TempDir::new("store-not-utf8");
    let trace = dir.join(std::ffi::OsStr::from_bytes(b"tr\xff.json.gz"));
    std::fs::copy(c.path("micro/a100-event-sync.json.gz"), &trace).unwrap();
    let out = dir.join("rank.lgraph");
    ingest_file(&trace, &out).unwrap();
    let stored = read_stored(&out).unwrap();
    assert_eq!(stored.facts.path, trace);
    assert_eq!(stored.summary.source.path, trace);
    assert_eq!(read_summary(&out).unwrap().source.path, trace);
    assert_eq!(read_rank(&out).unwrap().meta.path, trace);
    // Read back whole, as the trace gives it.
    let built = StoredRank::from_trace(
        &lumos_trace::read_path(&trace).unwrap(),
        Source::of_file(&trace),
    );
    assert_eq!(
        text(&StoredRank {
            compact: None,
            ..stored
        }),
        text(&built)
    );
}

/// The DLRM job's `.lgraph` files, rank 0's written from its trace with
/// every timestamp 3 hours ahead: `load_representatives` gives the job
/// assembled, its clocks tested once. Rank 0, standing for ranks 0-7, was
/// kept by that assembly and named far ([`lumos_graph::Job::far_representatives`]):
/// the job is assembled again with rank 0 apart, which the second assembly
/// leaves out as `--job` does, rank 1 standing for ranks 1-7. The inputs
/// are read once (`done` called once each; they were read twice, the
/// second time without a word to the Python package's count): the second
/// assembly decodes only rank 1's graph, rank 0's being at hand. The job
/// as recorded is assembled once, one graph decoded.
#[test]
fn representatives_are_assembled_once_and_again_only_for_a_far_representative() {
    let Some(c) = corpus() else { return };
    let dir = TempDir::new("store-far-representative");
    let mut files = Vec::new();
    for r in 0..8 {
        let path = c.path(&format!("multi-rank/dlrm-8xv100/rank{r}.json.gz"));
        let out = dir.join(format!("rank{r}.lgraph"));
        ingest_file(&path, &out).unwrap();
        files.push(out);
    }
    let calls = std::sync::atomic::AtomicUsize::new(0);
    let done = || {
        calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    };
    let r = lumos_store::load_representatives(&files, &done);
    assert_eq!(calls.swap(0, std::sync::atomic::Ordering::Relaxed), 8);
    let job = r.job.as_ref().unwrap();
    assert!(job.far_representatives.is_empty() && job.left_out.is_empty());
    assert_eq!(job.rank_numbers(), [0]);
    assert_eq!(r.graphs_loaded, 1);

    let path = c.path("multi-rank/dlrm-8xv100/rank0.json.gz");
    let mut ahead = lumos_trace::read_path(&path).unwrap();
    for e in &mut ahead.events {
        e.ts_ns += 3 * 3_600_000_000_000;
    }
    let s = StoredRank::from_trace(&ahead, Source::of_file(&path));
    lumos_store::write_stored_file(&s, &files[0]).unwrap();
    let r = lumos_store::load_representatives(&files, &done);
    assert_eq!(calls.load(std::sync::atomic::Ordering::Relaxed), 8);
    assert!(r.errors.is_empty());
    let job = r.job.as_ref().unwrap();
    assert!(job.far_representatives.is_empty());
    assert_eq!(job.left_out.len(), 1);
    assert_eq!(job.left_out[0].rank, 0);
    assert!(
        matches!(
            job.left_out[0].reason,
            lumos_graph::LeftOutReason::FarClock { offset_ns } if offset_ns > 10_000_000_000_000
        ),
        "{:?}",
        job.left_out
    );
    assert_eq!(job.rank_numbers(), [1]);
    let groups: Vec<Vec<u32>> = r.groups.iter().map(|g| g.ranks.clone()).collect();
    assert_eq!(groups, [vec![0], (1..8).collect::<Vec<u32>>()]);
    // Rank 0's graph for the first assembly, rank 1's for the second.
    assert_eq!(r.graphs_loaded, 2);
}
