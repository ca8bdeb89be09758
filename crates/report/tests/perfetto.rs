//! Written timelines open complete in Perfetto: read back with lumos's own
//! reader, they hold the input's tasks, names, nesting (each task's chain
//! of enclosing operators and annotations), launch links, CPU operators and
//! annotations, track names and order, and no track breaks the rule
//! Perfetto's importer applies (a slice inside its parent, siblings
//! disjoint); for single ranks, predictions and a merged job.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

use std::collections::BTreeMap;

use lumos_graph::{build, DepKind, Graph, TaskId};
use lumos_predict::{Baseline, Edit, Input, TraceContext};
use lumos_report::{MergedTimeline, Timeline, TimelineSource};
use lumos_sim::{simulate, SimOptions};
use lumos_trace::{Category, Ident, Trace};

/// Each CPU task as (name, names of its enclosing scopes, innermost
/// first), sorted.
fn nesting(g: &Graph) -> Vec<(String, Vec<String>)> {
    let mut v: Vec<_> = (0..g.tasks.len())
        .map(|i| TaskId(i as u32))
        .filter(|&t| !g.processors[g.task(t).proc.idx()].is_stream())
        .map(|t| {
            let chain = g
                .scope_chain(t)
                .map(|s| g.names[g.scopes[s.0 as usize].name.0 as usize].clone())
                .collect();
            (g.name(t).to_owned(), chain)
        })
        .collect();
    v.sort();
    v
}

/// Each launch as (call, GPU task) names, sorted.
fn launches(g: &Graph) -> Vec<(String, String)> {
    let mut v: Vec<_> = g
        .edges
        .iter()
        .filter(|e| e.kind == DepKind::Launch)
        .map(|e| (g.name(e.from).to_owned(), g.name(e.to).to_owned()))
        .collect();
    v.sort();
    v
}

/// The elements of sorted `a` that sorted `b` lacks, counting repeats.
fn minus<T: Ord + Clone>(a: &[T], b: &[T]) -> Vec<T> {
    let mut rest = Vec::new();
    let mut j = 0;
    for x in a {
        while j < b.len() && b[j] < *x {
            j += 1;
        }
        if j < b.len() && b[j] == *x {
            j += 1;
        } else {
            rest.push(x.clone());
        }
    }
    rest
}

/// A slice: start, end, event index.
type Slice = (i64, i64, usize);

/// Slices that partially overlap another on the same track, as Perfetto's
/// importer would reject them.
fn partial_overlaps(t: &Trace) -> Vec<String> {
    let mut tracks: BTreeMap<(Ident, Ident), Vec<Slice>> = BTreeMap::new();
    for (i, e) in t.events.iter().enumerate() {
        tracks
            .entry((e.pid, e.tid))
            .or_default()
            .push((e.ts_ns, e.end_ns(), i));
    }
    let mut bad = Vec::new();
    for list in tracks.values_mut() {
        list.sort_by_key(|&(s, e, i)| (s, std::cmp::Reverse(e), i));
        let mut stack: Vec<Slice> = Vec::new();
        for &(s, e, i) in list.iter() {
            while stack
                .last()
                .is_some_and(|top| s >= top.1 && !(s == top.0 && e == s))
            {
                stack.pop();
            }
            if let Some(top) = stack.last() {
                if e > top.1 {
                    bad.push(format!(
                        "{} [{s}, {e}] crosses {} [{}, {}]",
                        t.name(&t.events[i]),
                        t.name(&t.events[top.2]),
                        top.0,
                        top.1
                    ));
                }
            }
            stack.push((s, e, i));
        }
    }
    bad
}

fn count(t: &Trace, c: Category) -> usize {
    t.events.iter().filter(|e| e.category == c).count()
}

/// `back` is `graph` written: same CPU tasks with their nesting, same
/// launches, no partial overlaps. Calls the builder splits on re-reading
/// (a zero-length issuing part before the wait) are the only extras.
fn same_graph(what: &str, graph: &Graph, back: &Trace) {
    assert_eq!(back.skipped.total(), 0, "{what}");
    let bad = partial_overlaps(back);
    assert!(
        bad.is_empty(),
        "{what}: {} partial overlaps: {:?}",
        bad.len(),
        &bad[..bad.len().min(5)]
    );
    let (g2, _, report) = build(back);
    assert_eq!(report.partial_overlaps, 0, "{what}");
    let (a, b) = (nesting(graph), nesting(&g2));
    assert_eq!(minus(&a, &b), [], "{what}: tasks or nesting lost");
    let extra = minus(&b, &a);
    assert_eq!(extra.len() as u64, report.split_calls, "{what}: {extra:?}");
    let (a, b) = (launches(graph), launches(&g2));
    assert_eq!(minus(&a, &b), [], "{what}: launches lost");
}

#[test]
fn replayed_timelines_keep_every_operator_annotation_track_and_launch() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let mut paths = corpus.traces("single-rank");
    paths.push(corpus.path("multi-rank/dlrm-8xv100/rank3.json.gz"));
    for path in paths {
        let trace = lumos_trace::read_path(&path).unwrap();
        let (graph, measured, _) = build(&trace);
        let schedule = simulate(&graph, &SimOptions::default()).unwrap();
        let source = TimelineSource::of(&trace);
        let timeline = Timeline::replayed(&source, &graph, &measured, &schedule);
        let back = lumos_trace::read_bytes(&path, &timeline.write(Vec::new()).unwrap()).unwrap();
        let what = path.display().to_string();
        same_graph(&what, &graph, &back);
        // Every CPU operator and annotation of the input (issue 14 counted
        // 40,506 operators and 288 annotations in the recsys trace).
        for c in [Category::CpuOp, Category::UserAnnotation] {
            assert_eq!(count(&back, c), count(&trace, c), "{what}: {c:?}");
        }
        assert_eq!(back.meta.rank, trace.meta.rank, "{what}");
        assert_eq!(back.meta.world_size, trace.meta.world_size, "{what}");
        assert_eq!(
            back.meta.process_groups, trace.meta.process_groups,
            "{what}"
        );
        assert_eq!(back.meta.devices, trace.meta.devices, "{what}");
        assert_eq!(back.meta.base_time_ns, trace.meta.base_time_ns, "{what}");
        let about = lumos_graph::TraceAbout::of(&back);
        assert_eq!(about.tracks, source.about.tracks, "{what}");
        // Every launch an arrow: a start and an end each.
        let arrows = back
            .flows
            .iter()
            .filter(|f| f.kind == lumos_trace::FlowKind::Launch)
            .count();
        assert_eq!(arrows, 2 * launches(&graph).len(), "{what}");
    }
}

#[test]
fn the_recsys_trace_keeps_its_40506_operators_and_288_annotations() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let path = corpus.path("single-rank/a100-recsys-rank3of8.json.gz");
    let trace = lumos_trace::read_path(&path).unwrap();
    let (graph, measured, _) = build(&trace);
    let schedule = simulate(&graph, &SimOptions::default()).unwrap();
    let timeline = Timeline::replayed(&TimelineSource::of(&trace), &graph, &measured, &schedule);
    let back = lumos_trace::read_bytes(&path, &timeline.write(Vec::new()).unwrap()).unwrap();
    assert_eq!(count(&back, Category::CpuOp), 40_506);
    assert_eq!(count(&back, Category::UserAnnotation), 288);
    // HTA reads the rank from distributedInfo: rank 3, not 0.
    assert_eq!(back.meta.rank, 3);
}

/// The scopes of `g` that are not one contiguous run of tasks on one
/// thread (a scope standing for several ranges cannot nest truthfully).
fn split_scopes(g: &Graph) -> Vec<String> {
    let n = g.scopes.len();
    let mut runs: Vec<Option<(usize, u32, u32, u32)>> = vec![None; n];
    let mut split = vec![false; n];
    for (pi, p) in g.processors.iter().enumerate() {
        if p.is_stream() {
            continue;
        }
        for (k, &t) in p.tasks.iter().enumerate() {
            for sc in g.scope_chain(t) {
                let r = runs[sc.0 as usize].get_or_insert((pi, k as u32, k as u32, 0));
                if r.0 != pi {
                    split[sc.0 as usize] = true;
                    continue;
                }
                r.1 = r.1.min(k as u32);
                r.2 = r.2.max(k as u32);
                r.3 += 1;
            }
        }
    }
    (0..n)
        .filter(|&s| split[s] || runs[s].is_some_and(|(_, a, b, c)| b - a + 1 != c))
        .map(|s| g.names[g.scopes[s].name.0 as usize].clone())
        .collect()
}

/// The baseline of `traces` (read from `paths`).
fn baseline(traces: &[Trace]) -> (Baseline, Vec<TimelineSource>) {
    let mut inputs = Vec::new();
    let mut sources = Vec::new();
    for trace in traces {
        let (graph, measured, _) = build(trace);
        let ctx = TraceContext::from_trace(trace, &measured);
        inputs.push(Input {
            name: trace.path.display().to_string(),
            graph,
            measured,
            ctx,
        });
        sources.push(TimelineSource::of(trace));
    }
    (Baseline::new(inputs).unwrap(), sources)
}

/// Every stage of the prediction `edits` of `traces` is a graph whose
/// scopes are one range each, and its timeline reads back to the same
/// tasks, nesting and launches, with no partial overlaps. Returns the
/// timelines read back.
fn predicted_nest(what: &str, traces: &[Trace], edits: Vec<Edit>) -> Vec<Trace> {
    let (base, sources) = baseline(traces);
    let pred = base.identity().with_edits(edits).unwrap();
    let (_, outcome) = lumos_report::predict(&base, &pred).unwrap();
    let timelines = Timeline::predicted(&pred, &outcome, &sources).timelines;
    assert_eq!(timelines.len(), pred.stages.len(), "{what}");
    let mut out = Vec::new();
    for (k, (t, st)) in timelines.iter().zip(&pred.stages).enumerate() {
        let what = format!("{what} stage {k}");
        let split = split_scopes(&st.graph);
        assert!(split.is_empty(), "{what}: scopes in pieces: {split:?}");
        let path = &traces[0].path;
        let back = lumos_trace::read_bytes(path, &t.write(Vec::new()).unwrap()).unwrap();
        same_graph(&what, &st.graph, &back);
        // Every scope with CPU tasks is written once.
        let written = count(&back, Category::CpuOp) + count(&back, Category::UserAnnotation);
        let cpu_tasks = st
            .graph
            .tasks
            .iter()
            .filter(|t| !st.graph.processors[t.proc.idx()].is_stream())
            .filter(|t| t.kind != lumos_graph::TaskKind::Runtime)
            .count();
        assert!(written >= cpu_tasks, "{what}: {written} < {cpu_tasks}");
        out.push(back);
    }
    out
}

/// The four ranks of a synthesized gpt-tiny job, TP 1 x PP 2 x DP 2 with
/// 4 micro-batches, read back as traces.
fn tiny_gpt_job() -> Vec<Trace> {
    let cfg = lumos_synth::SynthConfig::new(
        lumos_synth::ModelPreset::preset("gpt-tiny").unwrap(),
        lumos_synth::Parallelism::new(1, 2, 2, 4),
        lumos_models::GpuSpec::h100(),
    );
    (0..4)
        .map(|r| {
            let text = lumos_synth::synthesize_rank(&cfg, r).unwrap();
            let path = std::path::PathBuf::from(format!("rank{r}.json"));
            lumos_trace::read_bytes(&path, text.as_bytes()).unwrap()
        })
        .collect()
}

#[test]
fn predicted_timelines_of_a_synthesized_gpt_job_nest() {
    let traces = tiny_gpt_job();
    for (what, edit) in [
        ("--pp 4", Edit::Pp(4)),
        ("--layers 16", Edit::Layers(16)),
        ("--dp 4", Edit::Dp(4)),
    ] {
        let backs = predicted_nest(what, &traces, vec![edit]);
        // The step annotations stay where the steps are: one per step on
        // each stage.
        for back in &backs {
            let steps = back
                .events
                .iter()
                .filter(|e| back.name(e).starts_with("ProfilerStep#"))
                .count();
            assert!(steps > 0, "{what}");
        }
    }
}

#[test]
fn predicted_timelines_of_corpus_traces_nest() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let read = |p: &str| lumos_trace::read_path(&corpus.path(p)).unwrap();
    let recsys = [read("single-rank/a100-recsys-rank3of8.json.gz")];
    for back in predicted_nest("recsys identity", &recsys, Vec::new()) {
        for c in [Category::CpuOp, Category::UserAnnotation] {
            assert_eq!(count(&back, c), count(&recsys[0], c), "{c:?}");
        }
    }
    predicted_nest(
        "recsys gemm=0.5",
        &recsys,
        vec![Edit::KernelScale("gemm=0.5".parse().unwrap())],
    );
    let v100 = [read("single-rank/v100-ddp-rank1of2-allreduce.json.gz")];
    predicted_nest("v100 --dp 4", &v100, vec![Edit::Dp(4)]);
}

/// The first `ranks` ranks of the DLRM job (all with `usize::MAX`),
/// replayed jointly and written as one timeline, read back.
struct MergedDlrm {
    traces: Vec<Trace>,
    job: lumos_graph::Job,
    back: Trace,
}

/// [`MergedDlrm`] of the corpus's DLRM job; `None` without the corpus.
/// The file written rank by rank (`JobReplayed::write_merged_timeline`,
/// as `lumos replay --job --out --merge` writes it) is checked to be the
/// one `MergedTimeline` writes of every rank's timeline at once.
fn merged_dlrm(ranks: usize) -> Option<MergedDlrm> {
    let corpus = lumos_testkit::corpus()?;
    let paths = corpus.traces("multi-rank/dlrm-8xv100");
    let traces: Vec<Trace> = paths
        .iter()
        .take(ranks)
        .map(|p| lumos_trace::read_path(p).unwrap())
        .collect();
    let inputs = traces
        .iter()
        .map(lumos_graph::RankInput::from_trace)
        .collect();
    let job = lumos_graph::assemble(inputs).unwrap();
    let replayed = lumos_report::replay_jointly(&job, &SimOptions::default(), &[], false).unwrap();
    let own: Vec<_> = (0..replayed.rank_count())
        .map(|p| replayed.rank(p))
        .collect();
    let merged = MergedTimeline::new(
        own.iter()
            .enumerate()
            .map(|(p, r)| replayed.timeline(p, r))
            .collect(),
    );
    assert_eq!(merged.file_name(), "job.replayed.json.gz");
    assert_eq!(
        merged.file_name(),
        lumos_report::merged_file_name("replayed")
    );
    let bytes = merged.write(Vec::new()).unwrap();
    assert!(
        replayed.write_merged_timeline(Vec::new()).unwrap() == bytes,
        "the timeline written rank by rank differs"
    );
    drop(merged);
    // Read as the events it holds: every reader of ranks refuses it.
    let back = lumos_trace::read_bytes_merged(&paths[0], &bytes).unwrap();
    Some(MergedDlrm { traces, job, back })
}

#[test]
fn a_merged_job_is_one_process_per_rank_with_every_rank_complete() {
    let Some(MergedDlrm { traces, job, back }) = merged_dlrm(usize::MAX) else {
        return;
    };
    assert_eq!(back.skipped.total(), 0);
    let bad = partial_overlaps(&back);
    assert!(bad.is_empty(), "{:?}", &bad[..bad.len().min(5)]);
    // One process per rank, named for it.
    let mut names: Vec<(Ident, String)> = back
        .track_names
        .iter()
        .filter(|n| n.tid.is_none())
        .map(|n| (n.pid, n.name.clone()))
        .collect();
    names.sort();
    let want: Vec<(Ident, String)> = (0..8)
        .map(|r| (Ident::Num(r), format!("rank {r}")))
        .collect();
    assert_eq!(names, want);
    // Each rank's events on its own process: every operator, annotation,
    // and launch arrow of its trace.
    for trace in &traces {
        let pid = Ident::Num(i64::from(trace.meta.rank));
        let on = |c| {
            back.events
                .iter()
                .filter(|e| e.pid == pid && e.category == c)
                .count()
        };
        for c in [Category::CpuOp, Category::UserAnnotation] {
            assert_eq!(on(c), count(trace, c), "rank {} {c:?}", trace.meta.rank);
        }
    }
    let flows: usize = job
        .graphs
        .iter()
        .map(|g| 2 * launches(&g.graph).len())
        .sum();
    assert_eq!(back.flows.len(), flows);
    let mut ids: Vec<u64> = back.flows.iter().map(|f| f.id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len() * 2, flows, "flow ids are unique per arrow");
}

/// Each scope's (name, Input Dims, Input type), sorted; dims as text, and
/// left out where an input is not a flat list of sizes (a timeline does
/// not write those).
fn scope_inputs(g: &Graph) -> Vec<(String, String, Option<String>)> {
    let mut v: Vec<_> = g
        .scopes
        .iter()
        .filter(|s| s.input_dims.is_some() || s.input_type.is_some())
        .map(|s| {
            let flat = s
                .input_dims
                .as_ref()
                .filter(|d| d.iter().all(|x| matches!(x, lumos_trace::Input::Tensor(_))));
            (
                g.names[s.name.0 as usize].clone(),
                format!("{flat:?}"),
                s.input_type.as_ref().map(|t| t.replace(' ', "")),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn replayed_timelines_keep_gpu_annotations_labels_input_dims_and_fwdbwd_flows() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    for name in [
        "a100-ddp-rank0of2-event-record",
        "mi300x-resnet-ddp-rank0of8",
        "gp100-train-gpu-annotations",
    ] {
        let path = corpus.path(&format!("single-rank/{name}.json.gz"));
        let trace = lumos_trace::read_path(&path).unwrap();
        let (graph, measured, _) = build(&trace);
        let schedule = simulate(&graph, &SimOptions::default()).unwrap();
        let source = TimelineSource::of(&trace);
        let timeline = Timeline::replayed(&source, &graph, &measured, &schedule);
        let back = lumos_trace::read_bytes(&path, &timeline.write(Vec::new()).unwrap()).unwrap();
        same_graph(name, &graph, &back);
        // Process labels as the input had them.
        assert_eq!(back.process_labels, trace.process_labels, "{name}");
        // GPU-side annotations: each one that enclosed GPU work, on its
        // stream, around the replayed GPU tasks it enclosed.
        let gua = count(&trace, Category::GpuUserAnnotation);
        let written = count(&back, Category::GpuUserAnnotation);
        println!("{name}: {written} of {gua} gpu_user_annotation written");
        assert!(gua > 0, "{name}");
        assert_eq!(written, gua, "{name}: each enclosed GPU work");
        for e in back
            .events
            .iter()
            .filter(|e| e.category == Category::GpuUserAnnotation)
        {
            let inside = back.events.iter().any(|k| {
                k.category.is_gpu_work()
                    && (k.pid, k.tid) == (e.pid, e.tid)
                    && k.ts_ns >= e.ts_ns
                    && k.end_ns() <= e.end_ns()
            });
            assert!(inside, "{name}: {} encloses no GPU task", back.name(e));
        }
        // Operators' Input Dims and Input type, read back into the scopes.
        let (g2, _, _) = build(&back);
        let (a, b) = (scope_inputs(&graph), scope_inputs(&g2));
        let (lost, extra) = (minus(&a, &b), minus(&b, &a));
        assert!(
            lost.is_empty() && extra.is_empty(),
            "{name}: {} of {} lost: {:?}; {} extra: {:?}",
            lost.len(),
            a.len(),
            &lost[..lost.len().min(3)],
            extra.len(),
            &extra[..extra.len().min(3)]
        );
        // Forward-to-backward flows whose both ends were written, each end
        // where a slice of its track starts.
        let fwdbwd = |t: &Trace| {
            t.flows
                .iter()
                .filter(|f| f.kind == lumos_trace::FlowKind::FwdBwd)
                .count()
        };
        let (had, kept) = (fwdbwd(&trace), fwdbwd(&back));
        println!("{name}: {kept} of {had} fwdbwd flow ends written");
        assert_eq!(kept, had, "{name}: every end binds to a written slice");
        for f in back
            .flows
            .iter()
            .filter(|f| f.kind == lumos_trace::FlowKind::FwdBwd)
        {
            let bound = back
                .events
                .iter()
                .any(|e| (e.pid, e.tid) == (f.pid, f.tid) && e.ts_ns == f.ts_ns);
            assert!(bound, "{name}: a fwdbwd flow end binds to nothing");
        }
    }
}

#[test]
fn a_merged_job_says_what_is_true_of_the_whole_job() {
    let Some(MergedDlrm { traces, back, .. }) = merged_dlrm(3) else {
        return;
    };
    // No rank of its own; the job's world size and backend; the three
    // ranks written, of eight.
    assert_ne!(
        back.meta.rank_source,
        lumos_trace::RankSource::DistributedInfo
    );
    assert_eq!(back.meta.world_size, traces[0].meta.world_size);
    assert_eq!(back.meta.backend, traces[0].meta.backend);
    let mut written: Vec<u32> = traces.iter().map(|t| t.meta.rank).collect();
    written.sort_unstable();
    assert_eq!(back.meta.written_ranks, written);
    for t in &traces {
        for g in &t.meta.process_groups {
            assert!(back.meta.process_groups.contains(g), "{g:?}");
        }
    }
}

/// Each predicted stage's timeline is labelled as the stage it predicts:
/// named after its rank in the target job (it was named after the trace
/// it was built from, `rank2-stage1` for rank 2), stating that trace (the
/// one kept for its stage when several ranks were traced), and written
/// with its own rank in the target job, the target's world size, the
/// stages' ranks as the ranks written, its rank's process groups in the
/// target layout (Megatron's, as the synthesizer writes them) and each
/// collective in one of them: before, the groups were the traced job's
/// (the last stage's data-parallel group [2, 3] on rank 6 of 8).
#[test]
fn predicted_timelines_carry_the_predicted_stage_and_rank() {
    // TP 1 x PP 2 x DP 2: ranks 0 and 1 trace stage 0, ranks 2 and 3
    // stage 1; the baseline keeps ranks 0 and 2.
    let traces = tiny_gpt_job();
    let (base, sources) = baseline(&traces);
    assert_eq!(base.given, vec![0, 2]);
    let pred = base.identity().with_edits(vec![Edit::Pp(4)]).unwrap();
    let (_, outcome) = lumos_report::predict(&base, &pred).unwrap();
    let timelines = Timeline::predicted(&pred, &outcome, &sources).timelines;
    let names: Vec<std::ffi::OsString> = timelines.iter().map(|t| t.file_name()).collect();
    assert_eq!(
        names,
        ["rank0", "rank2", "rank4", "rank6"]
            .map(|s| std::ffi::OsString::from(format!("{s}.predicted.json.gz")))
    );
    // Known before the replay, as `lumos predict --out` checks them.
    assert_eq!(Timeline::predicted_file_names(&pred), names);
    for (k, t) in timelines.iter().enumerate() {
        let from = t.predicted_from().unwrap();
        let traced = if k == 0 { &traces[0] } else { &traces[2] };
        assert_eq!(from.trace, traced.path, "stage {k}");
        assert_eq!(from.rank, traced.meta.rank, "stage {k}");
        assert_eq!(from.stage, u32::from(k > 0), "stage {k}");
        assert_eq!(from.predicted_stage, k as u32);
    }
    let layout = lumos_models::RankLayout::new(1, 2, 4);
    for (k, t) in timelines.iter().enumerate() {
        let back = lumos_trace::read_bytes(&traces[0].path, &t.write(Vec::new()).unwrap()).unwrap();
        let rank = 2 * k as u32;
        assert_eq!(back.meta.rank, rank, "stage {k}");
        assert_eq!(back.meta.world_size, Some(8), "stage {k}");
        assert_eq!(back.meta.written_ranks, vec![0, 2, 4, 6], "stage {k}");
        let want: Vec<(String, Vec<i64>)> = (layout.groups_of(rank as usize).into_iter())
            .map(|g| (g.name, g.ranks.iter().map(|&r| r as i64).collect()))
            .collect();
        let got: Vec<(String, Vec<i64>)> = (back.meta.process_groups.iter())
            .map(|g| (g.name.clone(), g.ranks.clone()))
            .collect();
        assert_eq!(got, want, "stage {k}");
        let mut collectives = 0;
        for e in &back.events {
            let Some(c) = e.extra.as_ref().and_then(|x| x.collective.as_deref()) else {
                continue;
            };
            collectives += 1;
            let name = c.pg_name.as_deref().unwrap();
            let g = back.meta.process_groups.iter().find(|g| g.name == name);
            let g = g.unwrap_or_else(|| panic!("stage {k}: group {name} is not in pg_config"));
            let ranks = c.pg_ranks.as_ref().unwrap().expand(g.ranks.len());
            assert_eq!(ranks, g.ranks, "stage {k}: group {name}");
            assert!(ranks.contains(&i64::from(rank)), "stage {k}: group {name}");
            if let (Some(src), Some(dst)) = (c.src_rank, c.dst_rank) {
                // A transfer between neighbouring stages: 2 ranks apart.
                assert!(src == i64::from(rank) || dst == i64::from(rank));
                assert_eq!((src - dst).abs(), 2, "stage {k}");
            }
        }
        assert!(collectives > 0, "stage {k}");
    }
}

/// Where the stages cannot state the predicted job (here: collectives
/// whose group the layout does not hold, as an expert group's, taken for
/// every data-parallel one), each timeline states none: its rank, but
/// no world size, process groups or collective arguments, so a reader
/// takes the files one by one; the notes say why.
#[test]
fn predicted_timelines_that_cannot_state_the_job_state_none() {
    let traces = tiny_gpt_job();
    let (mut base, sources) = baseline(&traces);
    for s in &mut base.structures {
        for c in &mut s.comms {
            if c.class == lumos_predict::GroupClass::Data {
                c.class = lumos_predict::GroupClass::Other;
            }
        }
    }
    let pred = base.identity().with_edits(vec![Edit::Pp(4)]).unwrap();
    let (_, outcome) = lumos_report::predict(&base, &pred).unwrap();
    let predicted = Timeline::predicted(&pred, &outcome, &sources);
    assert!(
        predicted.notes.iter().any(|n| n.contains("state no job")),
        "{:?}",
        predicted.notes
    );
    for (k, t) in predicted.timelines.iter().enumerate() {
        let back = lumos_trace::read_bytes(&traces[0].path, &t.write(Vec::new()).unwrap()).unwrap();
        assert_eq!(back.meta.rank, 2 * k as u32, "stage {k}");
        assert_eq!(back.meta.world_size, None, "stage {k}");
        assert!(back.meta.process_groups.is_empty(), "stage {k}");
        assert!(back.meta.written_ranks.is_empty(), "stage {k}");
        let args = back
            .events
            .iter()
            .filter(|e| e.extra.as_ref().is_some_and(|x| x.collective.is_some()))
            .count();
        assert_eq!(args, 0, "stage {k}");
    }
}

/// A predicted timeline marks each task with the source of the duration
/// it was replayed for: the job's, so the transfers that couple stages
/// (modelled when the stages are joined) say `modelled`, in the same
/// number as the job has them.
#[test]
fn predicted_timelines_mark_the_coupled_transfers_as_modelled() {
    let traces = tiny_gpt_job();
    let (base, sources) = baseline(&traces);
    let pred = base.identity().with_edits(vec![Edit::Pp(4)]).unwrap();
    let (_, outcome) = lumos_report::predict(&base, &pred).unwrap();
    assert!(outcome.job.coupled);
    let timelines = Timeline::predicted(&pred, &outcome, &sources).timelines;
    let mut marked = 0;
    for (k, t) in timelines.iter().enumerate() {
        let part = outcome.job.parts[k].clone();
        let modelled = outcome.job.source[part.start as usize..part.end as usize]
            .iter()
            .filter(|s| **s == lumos_predict::Source::Modelled)
            .count();
        let text = String::from_utf8(t.write(Vec::new()).unwrap()).unwrap();
        let written = text.matches(r#""source":"modelled""#).count();
        assert_eq!(written, modelled, "stage {k}");
        marked += written;
    }
    assert!(
        marked > 0,
        "no transfer between the four stages was modelled"
    );
}
