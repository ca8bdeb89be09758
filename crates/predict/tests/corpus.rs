//! Data-parallel scaling on real DDP traces: by the end of each step, the
//! timeline moves by no more than the communication the model added to (or
//! removed from) that step and the ones before it (a step's GPU work can
//! wait for the previous step's), and in the right direction; a trace whose
//! gradient all-reduce is exposed does slow down.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

mod common;

use common::*;
use lumos_predict::{Baseline, Confidence, GroupClass, Outcome, Prediction};
use lumos_testkit::Corpus;

/// Per step of stage 0: (how much later the step ends than in the replay,
/// the data-parallel collectives' duration changes in this step and the
/// ones before it).
fn deltas(corpus: &Corpus, rel: &str, dp: u32) -> Vec<(i64, i64)> {
    let trace = lumos_trace::read_path(&corpus.path(rel)).unwrap();
    let base = Baseline::new(vec![input(&trace)]).unwrap();
    let id = base.identity();
    let replayed = id.simulate().unwrap();
    let p = id.with_dp(dp).unwrap();
    let out = p.simulate().unwrap();
    check_confidence(rel, &p, &out, &replayed, dp);
    let st = &p.stages[0];
    let s = &base.structures[0];
    let traced = &base.inputs[0].graph;
    assert!(
        s.comms.iter().any(|c| c.class == GroupClass::Data),
        "{rel}: no data-parallel collectives"
    );
    let ends = |o: &lumos_predict::Outcome| -> Vec<i64> {
        lumos_sim::step_spans(&st.graph, &o.schedule, None)
            .iter()
            .map(|x| x.end_ns)
            .collect()
    };
    let (before, after) = (ends(&replayed), ends(&out));
    let change = |t: &lumos_graph::TaskId| {
        st.durations[t.idx()] - traced.tasks[st.origin[t.idx()].1.idx()].duration_ns
    };
    // Collectives launched before the capture (no step's) run before the
    // first step's GPU work on their stream: their change comes first.
    let mut cumulative: i64 = (0..st.graph.tasks.len() as u32)
        .map(lumos_graph::TaskId)
        .filter(|t| {
            s.comm(st.origin[t.idx()].1)
                .is_some_and(|c| c.class == GroupClass::Data && !c.launched)
        })
        .map(|t| change(&t))
        .sum();
    st.graph
        .steps
        .iter()
        .enumerate()
        .map(|(k, step)| {
            cumulative += step
                .tasks
                .iter()
                .filter(|t| {
                    s.comm(st.origin[t.idx()].1)
                        .is_some_and(|c| c.class == GroupClass::Data)
                })
                .map(change)
                .sum::<i64>();
            (after[k] - before[k], cumulative)
        })
        .collect()
}

/// What every data-parallel prediction of a real trace must say of its
/// confidence: the data-parallel collectives re-timed (not measured), the
/// steps' steadiness known, and a larger group than the trace's never
/// high.
fn check_confidence(rel: &str, p: &Prediction, out: &Outcome, replayed: &Outcome, dp: u32) {
    let steadiness = out.steadiness(replayed);
    assert!(steadiness.is_some(), "{rel}: fewer than three steps");
    let c = p.confidence(out, steadiness);
    println!("{rel} dp {dp}: {c:?}");
    let g = c.gpu_time;
    assert!(
        (g.measured + g.scaled + g.modelled - 1.0).abs() < 1e-9,
        "{g:?}"
    );
    assert!(g.scaled + g.modelled > 0.0, "{rel}: nothing re-timed");
    assert_eq!(c.inferred_path.len(), out.step_ns.len());
    assert!(c
        .inferred_path
        .iter()
        .all(|x| x.is_some_and(|x| (0.0..=1.0).contains(&x))));
    assert!(c
        .models
        .iter()
        .any(|m| m.model.starts_with("network") && m.used));
    if dp > p.base.config.dp {
        assert_ne!(c.level, Confidence::High, "{rel}: {c:?}");
        assert!(
            c.extrapolations
                .iter()
                .any(|e| e.starts_with(&format!("data-parallel group of {dp} ranks"))),
            "{rel}: {:?}",
            c.extrapolations
        );
    }
    if steadiness.is_some_and(|s| s.drifting) {
        assert_eq!(c.level, Confidence::Low, "{rel}: drifting but {c:?}");
    }
    assert_eq!(c.reasons.is_empty(), c.level == Confidence::High);
}

#[test]
fn doubling_dp_adds_at_most_the_modelled_communication() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    for (rel, from, to) in [
        ("single-rank/mi300x-resnet-ddp-rank0of8.json.gz", 8, 16),
        ("single-rank/a100-ddp-rank0of2-event-record.json.gz", 2, 4),
        ("single-rank/v100-ddp-rank1of2-allreduce.json.gz", 2, 4),
    ] {
        let d = deltas(&corpus, rel, to);
        let mut grew = false;
        for (k, &(delta, added)) in d.iter().enumerate() {
            println!(
                "{rel} dp {from} -> {to} step {k}: ends {:.3} ms later, {:.3} ms of communication added so far",
                delta as f64 / 1e6,
                added as f64 / 1e6
            );
            assert!(added > 0, "{rel}: nothing added");
            assert!(delta >= 0, "{rel} step {k}: faster with more ranks");
            assert!(
                delta <= added,
                "{rel} step {k}: {delta} ns > {added} ns added"
            );
            grew |= delta > 0;
        }
        // The ResNet trace waits for its all-reduces at the end of the step.
        if rel.contains("mi300x") {
            assert!(grew, "{rel}: exposed communication but no effect");
        }
    }
}

#[test]
fn halving_dp_saves_at_most_the_modelled_communication() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let rel = "single-rank/mi300x-resnet-ddp-rank0of8.json.gz";
    for (k, (delta, added)) in deltas(&corpus, rel, 4).into_iter().enumerate() {
        println!(
            "{rel} dp 8 -> 4 step {k}: ends {:.3} ms earlier, {:.3} ms of communication removed so far",
            -delta as f64 / 1e6,
            -added as f64 / 1e6
        );
        assert!(added < 0);
        assert!(delta <= 0 && delta >= added, "step {k}: {delta} vs {added}");
    }
}

/// The V100 trace's all-reduces, modelled 12x slower than measured (preset
/// network), leave its GPU behind its CPU: without a launch queue every
/// predicted step was longer than the last (898 to 3528 ms). With one the
/// CPU runs at most a queue ahead: the steps between the first (the queue
/// filling) and the last (the backlog draining) repeat, and the drift is
/// reported with the step a longer run settles to.
#[test]
fn a_gpu_behind_its_cpu_settles_instead_of_running_away() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let rel = "single-rank/v100-ddp-rank1of2-allreduce.json.gz";
    let trace = lumos_trace::read_path(&corpus.path(rel)).unwrap();
    let base = Baseline::new(vec![input(&trace)]).unwrap();
    let identity = base.identity();
    let replayed = identity.simulate().unwrap();
    let pred = base.identity().with_dp(4).unwrap();
    let out = pred.simulate().unwrap();
    let queue = out.launch_queue.expect("replayed with a launch queue");
    assert_eq!(queue.depth, lumos_sim::DEFAULT_LAUNCH_QUEUE);
    assert!(queue.deepest_measured > 0 && queue.deepest_measured < queue.depth);
    let steps = &out.step_ns;
    println!("{rel} dp 4: predicted steps {steps:?}");
    let middle = &steps[1..steps.len() - 1];
    let (lo, hi) = (middle.iter().min().unwrap(), middle.iter().max().unwrap());
    assert!(
        (hi - lo) as f64 / *lo as f64 <= 0.05,
        "middle steps differ: {middle:?}"
    );
    let s = out.steadiness(&replayed).unwrap();
    assert!(s.drifting, "{s:?}");
    // Steady: about the communication stream's modelled work per step.
    assert!(s.steady_step_ns > replayed.mean_step_ns() as i64);
    assert!(s.steady_step_ns < *hi);
    // The traced run itself is steady.
    let itself = replayed.steadiness(&replayed).unwrap();
    assert!(!itself.drifting, "{itself:?}");
    // Issue 10: drifting, mostly modelled, a group twice the trace's over a
    // link the trace never calibrated: not to be trusted, and it says why.
    let p = base.identity().with_dp(4).unwrap();
    let c = p.confidence(&out, Some(s));
    assert_eq!(c.level, Confidence::Low, "{c:?}");
    assert!(c.gpu_time.modelled > 0.5, "{:?}", c.gpu_time);
    assert!(c.reasons[0].contains("drift"), "{:?}", c.reasons);
    for what in [
        "group of 4 ranks",
        "not calibrated on the trace: preset values",
    ] {
        assert!(
            c.extrapolations.iter().any(|e| e.contains(what)),
            "{what}: {:?}",
            c.extrapolations
        );
    }
}

/// Every corpus DDP trace's own replay, predicted as is, is steady, and its
/// launch queue (at least as deep as the trace's deepest) leaves its steps
/// as `lumos replay` replays them.
#[test]
fn identity_predictions_are_steady() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    for rel in [
        "single-rank/mi300x-resnet-ddp-rank0of8.json.gz",
        "single-rank/a100-ddp-rank0of2-event-record.json.gz",
        "single-rank/v100-ddp-rank1of2-allreduce.json.gz",
    ] {
        let trace = lumos_trace::read_path(&corpus.path(rel)).unwrap();
        let base = Baseline::new(vec![input(&trace)]).unwrap();
        let identity = base.identity();
        let out = identity.simulate().unwrap();
        assert!(out.launch_queue.is_some(), "{rel}");
        let g = &base.inputs[0].graph;
        let free = lumos_sim::simulate(g, &Default::default()).unwrap();
        let free_steps: Vec<i64> = lumos_sim::step_spans(g, &free, None)
            .iter()
            .map(|s| s.end_ns - s.start_ns)
            .collect();
        assert_eq!(out.step_ns, free_steps, "{rel}: {:?}", out.launch_queue);
        let s = out.steadiness(&out).expect("five steps or more");
        assert!(!s.drifting, "{rel}: {s:?}");
        // Issue 10: the identity prediction of a steady trace is high,
        // every GPU time measured, no model used, nothing extrapolated.
        let c = base.identity().confidence(&out, Some(s));
        assert_eq!(c.level, Confidence::High, "{rel}: {c:?}");
        assert!(c.reasons.is_empty() && c.extrapolations.is_empty(), "{c:?}");
        assert_eq!(c.gpu_time.measured, 1.0, "{rel}");
        assert!(c.models.iter().all(|m| !m.used), "{rel}: {:?}", c.models);
        assert_eq!(c.inferred_path.len(), out.step_ns.len(), "{rel}");
    }
}

/// Issue 10: a pipeline edit of a synthesized job models the transfers
/// between its new stages, and its confidence says so.
#[test]
fn a_pipeline_edit_has_modelled_gpu_time() {
    let mut cfg = config(&model("gpt-tiny", None, None), 1, 2, 1, 4);
    // Three steps, for the steadiness.
    cfg.steps = 3;
    let base = Baseline::new(inputs(&cfg)).unwrap();
    let identity = base.identity();
    let replayed = identity.simulate().unwrap();
    let p = base.identity().with_pp(4).unwrap();
    let out = p.simulate().unwrap();
    let s = out.steadiness(&replayed);
    let c = p.confidence(&out, s);
    println!("gpt-tiny pp 2 -> 4: {s:?} {c:?}");
    assert!(s.is_some_and(|s| !s.drifting), "{s:?}");
    assert!(c.gpu_time.modelled > 0.0, "{:?}", c.gpu_time);
    assert_eq!(c.inferred_path.len(), out.step_ns.len());
    assert_eq!(c.reasons.is_empty(), c.level == Confidence::High);
}

/// Per step of the V100 trace: the data-parallel all-reduces' durations
/// in the order they ran (traced graph and measured starts).
fn traced_slots(base: &Baseline) -> Vec<Vec<i64>> {
    let (s, inp) = (&base.structures[0], &base.inputs[0]);
    let mut by_step: Vec<Vec<(i64, i64)>> = vec![Vec::new(); s.steps.len()];
    for c in s.comms.iter().filter(|c| c.class == GroupClass::Data) {
        if let lumos_predict::Role::Pass { step, .. }
        | lumos_predict::Role::Prologue { step }
        | lumos_predict::Role::Epilogue { step } = s.role_of_task(c.task)
        {
            by_step[step as usize].push((
                inp.measured.tasks[c.task.idx()].start_ns,
                inp.graph.tasks[c.task.idx()].duration_ns,
            ));
        }
    }
    by_step
        .into_iter()
        .map(|mut v| {
            v.sort();
            v.into_iter().map(|(_, d)| d).collect()
        })
        .collect()
}

/// Per step of stage 0 of `p`: its data-parallel collectives' predicted
/// time.
fn predicted_comm(p: &Prediction) -> Vec<i64> {
    let st = &p.stages[0];
    let s = &p.base.structures[0];
    st.graph
        .steps
        .iter()
        .map(|step| {
            step.tasks
                .iter()
                .filter(|t| {
                    s.comm(st.origin[t.idx()].1)
                        .is_some_and(|c| c.class == GroupClass::Data)
                })
                .map(|t| st.durations[t.idx()])
                .sum()
        })
        .collect()
}

/// Issue 10 item 2: the V100 trace records no all-reduce size. Each one is
/// sized from its slot's least-waiting occurrence over the steps (the k-th
/// all-reduce of every step is the same gradient), not from its own time,
/// waiting included. On the trace's own link (nodes of four GPUs) the
/// predicted all-reduces then take about the ring factor's ratio of that
/// envelope (`2(4-1)/4` over `2(2-1)/2`, 1.5) and the prediction is steady;
/// across nodes (the trace lists two GPUs, so dp 4 spans two nodes) the
/// preset's NVLink-to-NIC bandwidth ratio comes on top, and the prediction
/// says it is low confidence and why.
#[test]
fn unsized_all_reduces_are_sized_from_their_slot_envelopes() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let rel = "single-rank/v100-ddp-rank1of2-allreduce.json.gz";
    let trace = lumos_trace::read_path(&corpus.path(rel)).unwrap();
    let base = Baseline::new(vec![input(&trace)]).unwrap();
    let slots = traced_slots(&base);
    assert!(slots.len() >= 3 && slots.iter().all(|s| s.len() == slots[0].len()));
    // The measured envelope of a step: each slot's least-waiting time.
    let envelope: i64 = (0..slots[0].len())
        .map(|k| slots.iter().map(|s| s[k]).min().unwrap())
        .sum();
    let ring = (2.0 * 3.0 / 4.0) / (2.0 * 1.0 / 2.0);
    let identity = base.identity();
    let replayed = identity.simulate().unwrap();
    let mut net = base.network.model();
    net.gpus_per_node = 4;
    for (what, p, limit) in [
        (
            "nodes of four",
            base.identity()
                .with_dp(4)
                .unwrap()
                .with_network(net, "calibrated, nodes of 4".into())
                .unwrap(),
            3.0,
        ),
        ("nodes of two", base.identity().with_dp(4).unwrap(), {
            let m = base.network.model();
            let rate = |l: lumos_models::Link| l.bandwidth_gbps * l.efficiency;
            3.0 * rate(m.intra_node) / rate(m.inter_node)
        }),
    ] {
        let comm = predicted_comm(&p);
        // The least-waiting step: its waiting is kept as measured.
        let least = *comm.iter().min().unwrap();
        let ratio = least as f64 / (envelope as f64 * ring);
        println!(
            "{rel} dp 4, {what}: all-reduces per step {:?} ms, envelope {:.3} ms x {ring}: {ratio:.2}x",
            comm.iter().map(|&c| c as f64 / 1e6).collect::<Vec<_>>(),
            envelope as f64 / 1e6
        );
        assert!(
            (1.0 / 3.0..=limit).contains(&ratio),
            "{what}: {ratio} outside 1/3..{limit}"
        );
        assert_eq!(p.sizes_from_envelope, slots.len() * slots[0].len());
        assert_eq!(p.sizes_from_own_time, 0);
        let out = p.simulate().unwrap();
        let s = out.steadiness(&replayed).expect("five steps");
        println!("{what}: steps {:?}, {s:?}", out.step_ns);
        let c = p.confidence(&out, Some(s));
        println!("{what}: {c:?}");
        assert!(c.gpu_time.modelled > 0.0, "{c:?}");
        assert!(
            c.extrapolations
                .iter()
                .any(|e| e.contains("2020 re-timed collectives inferred from their timing")),
            "{:?}",
            c.extrapolations
        );
        assert!(p
            .notes
            .iter()
            .any(|n| n.contains("lower envelope") && n.contains("not measured")));
        assert_ne!(c.level, Confidence::High);
        if what == "nodes of four" {
            assert!(!s.drifting, "{what}: {s:?}");
        }
    }
}

/// The baseline of one corpus trace.
fn corpus_base(corpus: &Corpus, rel: &str) -> Baseline {
    let trace = lumos_trace::read_path(&corpus.path(rel)).unwrap();
    Baseline::new(vec![input(&trace)]).unwrap()
}

/// A kernel speed-up alone scales the traced durations by the user's
/// factor: no collective goes through the network model, so none has its
/// size inferred and nothing is extrapolated (the V100 trace records no
/// all-reduce size; before, its 2,020 all-reduces counted as "message
/// sizes inferred", one extrapolation, medium). A group of one issues no
/// collective, whatever its size: `--dp 1` infers nothing either, but it
/// rests on the data-parallel group discovery only guessed (an all-reduce
/// outside any pass found), which makes it low and says so.
#[test]
fn only_collectives_sized_through_the_model_count_as_inferred() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let rel = "single-rank/v100-ddp-rank1of2-allreduce.json.gz";
    let base = corpus_base(&corpus, rel);
    let identity = base.identity();
    let replayed = identity.simulate().unwrap();
    let k: lumos_predict::KernelScale = "class:comm=0.5".parse().unwrap();
    let p = base.identity().with_kernel_scale(k).unwrap();
    assert_eq!((p.sizes_from_envelope, p.sizes_from_own_time), (0, 0));
    // Each all-reduce is exactly half its traced time: scaled, not modelled.
    let (st, traced) = (&p.stages[0], &base.inputs[0].graph);
    for c in base.structures[0].comms.iter() {
        let i = st.origin.iter().position(|o| o.1 == c.task).unwrap();
        let want = (traced.tasks[c.task.idx()].duration_ns as f64 * 0.5).round() as i64;
        assert_eq!(st.durations[i], want);
        assert_eq!(st.source[i], lumos_predict::Source::Scaled);
    }
    let out = p.simulate().unwrap();
    let c = p.confidence(&out, out.steadiness(&replayed));
    assert!(c.extrapolations.is_empty(), "{c:?}");
    assert_eq!(c.gpu_time.modelled, 0.0, "{c:?}");
    assert!(c.models.iter().all(|m| !m.used), "{c:?}");
    assert!(!p
        .notes
        .iter()
        .any(|n| n.contains("re-timed collectives record no message size")));

    let p = base.identity().with_dp(1).unwrap();
    assert_eq!((p.sizes_from_envelope, p.sizes_from_own_time), (0, 0));
    let out = p.simulate().unwrap();
    let c = p.confidence(&out, out.steadiness(&replayed));
    assert!(c.extrapolations.is_empty(), "{c:?}");
    assert_eq!(c.level, Confidence::Low, "{c:?}");
    assert_eq!(c.guessed_groups.len(), 1, "{c:?}");
    assert!(
        c.guessed_groups[0].contains("an all-reduce outside every forward layer"),
        "{c:?}"
    );
    assert!(c.reasons[0].contains("classified by a guess"), "{c:?}");
}

/// The a100-recsys trace (DP 8 on one node) ran its all-reduces over the
/// node's link, which could not be fitted: `--dp 2` stays on that link, so
/// the prediction is no extrapolation to an unseen link; it says that the
/// link was used but not calibrated, and why.
#[test]
fn a_link_used_but_not_calibrated_is_said_so() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let base = corpus_base(&corpus, "single-rank/a100-recsys-rank3of8.json.gz");
    let p = base.identity().with_dp(2).unwrap();
    let note = p
        .notes
        .iter()
        .find(|n| n.starts_with("data parallel 8 -> 2"))
        .unwrap();
    assert!(
        note.contains("a link used but not calibrated on the trace: its 18 collectives"),
        "{note}"
    );
    assert!(!note.contains("not seen"), "{note}");
    let out = p.simulate().unwrap();
    let c = p.confidence(&out, None);
    assert!(
        !c.extrapolations
            .iter()
            .any(|e| e.contains("not calibrated")),
        "{c:?}"
    );
    assert!(
        c.reasons
            .iter()
            .any(|r| r.contains("intra_node model not calibrated on the trace: its 18")),
        "{c:?}"
    );
}

/// Issue A: the vLLM TP8 inference trace's tensor-parallel all-reduces
/// were read as a data-parallel world group (a guess) and `--dp 2`
/// re-timed them at medium confidence. An inference trace (no backward
/// pass) reduces no gradients: a data-parallel edit is refused, as it is
/// for the two-event trace whose one all-reduce has no group and no world
/// size. Both traces list no backward operator.
#[test]
fn data_parallel_edits_of_inference_traces_are_refused() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    for rel in [
        "single-rank/b200-vllm-tp8-rank0.json.gz",
        "micro/two-events-large-integers.json.gz",
    ] {
        let base = corpus_base(&corpus, rel);
        let e = base.identity().with_dp(2).err().expect(rel);
        assert!(e.is_usage(), "{rel}: {e}");
        assert!(e.to_string().contains("no backward pass"), "{rel}: {e}");
    }
    // The two-event trace lists no devices: its node size is assumed.
    let base = corpus_base(&corpus, "micro/two-events-large-integers.json.gz");
    assert!(
        base.notes
            .iter()
            .any(|n| n.starts_with("8 GPUs per node (assumed: the trace lists no devices)")),
        "{:?}",
        base.notes
    );
}

/// The MI300X DDP trace's GPU runs 30 ms behind its CPU: when the capture
/// begins it is still running the step before's work, whose launches are
/// not in the trace. Three all-reduces and two broadcasts of the data-
/// parallel group are among them, named by no launch. Each is the same
/// collective as the one a step later on its stream (the stream runs two
/// broadcasts and two all-reduces every step), so an edit of the group
/// re-times them with the rest: at DP 1 no collective is left (before,
/// these three kept their DP-8 time, 24.3 ms, so removing data
/// parallelism gained less than halving every collective), and at DP 16
/// every all-reduce is re-timed.
#[test]
fn collectives_launched_before_the_capture_are_retimed_with_their_group() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let rel = "single-rank/mi300x-resnet-ddp-rank0of8.json.gz";
    let trace = lumos_trace::read_path(&corpus.path(rel)).unwrap();
    let base = Baseline::new(vec![input(&trace)]).unwrap();
    let (g, s) = (&base.inputs[0].graph, &base.structures[0]);
    let launched: std::collections::HashSet<lumos_graph::TaskId> = (g.edges.iter())
        .filter(|e| e.kind == lumos_graph::DepKind::Launch)
        .map(|e| e.to)
        .collect();
    let unlaunched: Vec<_> = (s.comms.iter())
        .filter(|c| !launched.contains(&c.task))
        .collect();
    assert_eq!(unlaunched.len(), 5, "{rel}: collectives without a launch");
    let mut all_reduces = 0;
    for c in &unlaunched {
        assert_eq!(c.class, GroupClass::Data, "{rel}: {c:?}");
        assert!(!c.launched, "{c:?}");
        let like = c.taken_for.expect("taken for a launched collective");
        assert!(launched.contains(&like));
        assert_eq!(g.task(like).name, g.task(c.task).name);
        assert_eq!(g.task(like).proc, g.task(c.task).proc);
        let other = s.comm(like).unwrap();
        assert_eq!((c.kind, c.bytes), (other.kind, other.bytes));
        if c.kind == Some(lumos_models::CollectiveKind::AllReduce) {
            all_reduces += 1;
            assert!(c.bytes.is_some(), "{c:?}");
        }
    }
    assert_eq!(all_reduces, 3, "{rel}");
    // DP 1: a group of one issues no collective, launched or not. Every
    // collective of this trace is the data-parallel group's.
    let p = base.identity().with_dp(1).unwrap();
    let st = &p.stages[0];
    for (i, t) in st.graph.tasks.iter().enumerate() {
        if t.is_comm() {
            let name = st.graph.name(lumos_graph::TaskId(i as u32));
            assert_eq!(st.durations[i], 0, "{rel} dp 1: {name}");
        }
    }
    assert!(
        p.notes
            .iter()
            .any(|n| n.starts_with("5 data-parallel collectives")
                && n.contains("launched before the capture began")),
        "{:?}",
        p.notes
    );
    // DP 16: every all-reduce re-timed over the new group, none measured.
    let p = base.identity().with_dp(16).unwrap();
    let st = &p.stages[0];
    let mut retimed = 0;
    for (i, &(_, tt)) in st.origin.iter().enumerate() {
        let Some(c) = s.comm(tt) else { continue };
        if c.kind == Some(lumos_models::CollectiveKind::AllReduce) {
            assert_ne!(st.source[i], lumos_predict::Source::Measured, "{c:?}");
            assert!(st.durations[i] > g.task(tt).duration_ns, "{c:?}");
            retimed += 1;
        }
    }
    assert_eq!(
        retimed, 9,
        "{rel}: 3 before the capture and 2 in each of 3 steps"
    );
}

/// At DP 1 the MI300X DDP trace's GPU, which lags its CPU by 30 ms when
/// the capture begins, catches up: the predicted steps end 7.8 ms apart
/// while the CPU starts one every 16 ms. A longer run repeats the CPU's
/// step, so the steady state is the longer of the two periods, never
/// shorter than a step's CPU annotation (before: 7.785 ms, less than half
/// of it). Removing data parallelism also gains at least as much as
/// halving every collective.
#[test]
fn a_gpu_catching_up_with_its_cpu_settles_at_the_cpu_s_step() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let rel = "single-rank/mi300x-resnet-ddp-rank0of8.json.gz";
    let trace = lumos_trace::read_path(&corpus.path(rel)).unwrap();
    let base = Baseline::new(vec![input(&trace)]).unwrap();
    let identity = base.identity();
    let replayed = identity.simulate().unwrap();
    let p = base.identity().with_dp(1).unwrap();
    let out = p.simulate().unwrap();
    let s = out.steadiness(&replayed).unwrap();
    println!("{rel} dp 1: steps {:?}, {s:?}", out.step_ns);
    let annotations = &base.inputs[0].measured.step_annotations;
    let shortest = annotations.iter().map(|a| a.len_ns()).min().unwrap();
    assert!(
        s.steady_step_ns >= shortest,
        "{rel}: steady {} ns < the CPU's step {shortest} ns",
        s.steady_step_ns
    );
    // The steps start as often as the CPU issues them.
    let starts: Vec<i64> = lumos_sim::step_spans(&p.stages[0].graph, &out.schedule, None)
        .iter()
        .map(|x| x.start_ns)
        .collect();
    let mut periods: Vec<i64> = starts.windows(2).map(|w| w[1] - w[0]).collect();
    periods.sort_unstable();
    assert!(s.steady_step_ns >= periods[(periods.len() - 1) / 2]);
    // Still faster than with the all-reduces, and the ramp is reported.
    assert!(s.steady_step_ns <= s.replayed_steady_step_ns, "{s:?}");
    assert!(s.drifting, "{s:?}");
    assert_eq!(p.confidence(&out, Some(s)).level, Confidence::Low);
    // The traced steady state is the replay's own.
    let itself = replayed.steadiness(&replayed).unwrap();
    assert_eq!(s.replayed_steady_step_ns, itself.steady_step_ns);
    assert!(!itself.drifting, "{itself:?}");
    // Halving every collective removes less than removing them all.
    let half = base
        .identity()
        .with_kernel_scale("class:comm=0.5".parse().unwrap())
        .unwrap();
    let half = half.simulate().unwrap().steps_only();
    assert!(
        out.mean_step_ns() <= half.mean_step_ns(),
        "{rel}: dp 1 {} ns > comm x0.5 {} ns",
        out.mean_step_ns(),
        half.mean_step_ns()
    );
    assert!(s.steady_step_ns <= half.steadiness(&replayed).unwrap().steady_step_ns);
}

/// Broadcasts (DDP's buffer broadcasts, two a step and two of the
/// previous step's before the capture on the MI300X trace) are re-timed
/// over a new group as NCCL's ring broadcast: traced + T(new) - T(traced),
/// the message once per rank and a hop latency per ring member. Before,
/// they kept their traced time over any group larger than one. DP 2 has
/// six hops fewer than the traced 8: shorter; DP 16 has eight more and
/// crosses nodes: longer. The notes say so, and count the broadcasts
/// among the collectives launched before the capture.
#[test]
fn broadcasts_are_retimed_over_a_new_group() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let rel = "single-rank/mi300x-resnet-ddp-rank0of8.json.gz";
    let base = corpus_base(&corpus, rel);
    let (g, s) = (&base.inputs[0].graph, &base.structures[0]);
    let is_broadcast = |tt: lumos_graph::TaskId| {
        let c = s.comm(tt).unwrap();
        let named = c.taken_for.unwrap_or(tt);
        g.task(named)
            .collective
            .is_some_and(|k| g.collectives[k as usize].name == "broadcast")
    };
    for (dp, longer) in [(2, false), (16, true)] {
        let p = base.identity().with_dp(dp).unwrap();
        let st = &p.stages[0];
        let mut n = 0;
        for (i, &(_, tt)) in st.origin.iter().enumerate() {
            if s.comm(tt).is_none() || !is_broadcast(tt) {
                continue;
            }
            n += 1;
            let traced = g.task(tt).duration_ns;
            assert_ne!(st.source[i], lumos_predict::Source::Measured, "dp {dp}");
            assert_eq!(
                st.durations[i] > traced,
                longer,
                "dp {dp}: {} ns against {traced} traced",
                st.durations[i]
            );
        }
        assert_eq!(
            n, 8,
            "{rel} dp {dp}: 2 before the capture, 2 in each of 3 steps"
        );
        let notes = p.notes.join("\n");
        assert!(
            notes.contains(
                "8 data-parallel broadcasts (2 of them launched before the capture, above; \
                 0.084 ms traced) re-timed as NCCL's ring broadcast"
            ),
            "{notes}"
        );
        assert!(
            notes.contains("5 data-parallel collectives (3 allreduce, 2 broadcast;")
                && notes.contains("and timed as it (re-timed with it where the edit changes"),
            "{notes}"
        );
        assert!(!notes.contains("kept at their traced durations"), "{notes}");
    }
}

/// A `--network` edit re-times every collective the link model knows,
/// those launched before the capture with the ones they are taken for,
/// and the note says so; before, it said they were re-timed only where
/// the edit changed their group or message, which a network edit does
/// not. On the MI300X trace (5 data-parallel collectives launched before
/// the capture, 3 all-reduces and 2 broadcasts), a slower network makes
/// each of them longer.
#[test]
fn a_network_edit_says_it_retimes_collectives_launched_before_the_capture() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let rel = "single-rank/mi300x-resnet-ddp-rank0of8.json.gz";
    let base = corpus_base(&corpus, rel);
    let (g, s) = (&base.inputs[0].graph, &base.structures[0]);
    let slow = lumos_models::NetworkModel {
        base_latency_us: 1000.0,
        ..base.network.model()
    };
    let p = base.identity().with_network(slow, "slow".into()).unwrap();
    let st = &p.stages[0];
    let mut n = 0;
    for (i, &(_, tt)) in st.origin.iter().enumerate() {
        if s.comm(tt).is_some_and(|c| c.taken_for.is_some()) {
            n += 1;
            let traced = g.task(tt).duration_ns;
            assert!(
                st.durations[i] > traced,
                "{rel}: {} ns against {traced} traced",
                st.durations[i]
            );
        }
    }
    assert_eq!(n, 5, "{rel}: 5 launched before the capture");
    let notes = p.notes.join("\n");
    assert!(
        notes.contains(
            "5 data-parallel collectives (3 allreduce, 2 broadcast; 24.316 ms traced) were \
             launched before the capture"
        ) && notes.contains("and timed as it (re-timed with it over the target network's links)"),
        "{notes}"
    );
    assert!(
        !notes.contains("where the edit changes its group"),
        "{notes}"
    );
}

/// `a100-recsys-rank3of8` at DP 1 no longer issues its gradient
/// all-reduces, which ran beside the compute stream: the blocking copy
/// that ends each step stops waiting for them (6.2 ms -> 1.7 ms), so the
/// CPU starts the next steps up to 13 ms earlier while the compute stream
/// still bounds the GPU. The steps repeat faster (steady state 76.28
/// against 76.80 ms), but each spans longer from its CPU start to its GPU
/// end (mean 77.98 against 77.53 ms). Before, the prediction printed the
/// longer mean as a 0.6% slowdown without a word; now an assumption line
/// says why the two disagree. The identity prediction has no such line.
#[test]
fn a_loop_repeating_faster_whose_steps_span_longer_says_so() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let rel = "single-rank/a100-recsys-rank3of8.json.gz";
    let base = corpus_base(&corpus, rel);
    let identity = base.identity();
    let replayed = identity.simulate().unwrap();
    assert_eq!(replayed.span_note(&replayed), None);
    let p = base.identity().with_dp(1).unwrap();
    let out = p.simulate().unwrap();
    let s = out.steadiness(&replayed).unwrap();
    println!("{rel} dp 1: steps {:?}, {s:?}", out.step_ns);
    assert!(out.mean_step_ns() > replayed.mean_step_ns());
    assert!(s.steady_step_ns < s.replayed_steady_step_ns, "{s:?}");
    let note = out.span_note(&replayed).expect("a note");
    assert!(
        note.starts_with("mean step +0.6% (77.976 against 77.525 ms replayed) but steady-state step -0.7% (76.278 against 76.800 ms)")
            && note.contains("runs further ahead of its GPU")
            && note.contains("steps start 4.349 ms earlier and end 3.898 ms earlier"),
        "{note}"
    );
}

/// Tensor parallelism asked of real traces recorded at TP 1 (no
/// tensor-parallel collective): each gives a prediction or a refusal that
/// says what is missing, never a panic. None of the corpus's is a
/// Megatron-style dense transformer: the Hugging Face models project Q, K
/// and V separately (three products into the hidden width per forward
/// layer, not two), the inference traces have no backward, and the
/// convolutional networks no layer GEMM of a hidden size.
#[test]
fn tensor_parallelism_from_tp_one_predicts_or_says_what_is_missing() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    for rel in [
        "single-rank/h100-qwen-0.5b-inference.json.gz",
        "single-rank/h100-vit-inference.json.gz",
        "single-rank/a100-ddp-rank0of2-event-record.json.gz",
        "single-rank/mi300x-resnet-ddp-rank0of8.json.gz",
        "single-rank/a100-alexnet-cuda-sync.json.gz",
        "single-rank/rtx2080ti-linear-train.json.gz",
    ] {
        let trace = lumos_trace::read_path(&corpus.path(rel)).unwrap();
        let base = match Baseline::new(vec![input(&trace)]) {
            Ok(b) => b,
            Err(e) => {
                println!("{rel}: no baseline: {e}");
                continue;
            }
        };
        if base.config.tp != 1 {
            println!("{rel}: traced at tp {}", base.config.tp);
            continue;
        }
        match base.identity().with_tp(2) {
            Ok(p) => {
                let out = p.simulate().unwrap();
                let step = mean_ms(&out.step_ns);
                println!("{rel}: tp 2 predicted, {step:.2} ms a step");
                assert!(step.is_finite() && step > 0.0, "{rel}: {step}");
            }
            Err(e) => {
                println!("{rel}: {e}");
                assert!(e.is_usage(), "{rel}: {e}");
                assert!(e.to_string().len() > 40, "{rel}: {e}");
            }
        }
    }
}

/// The CPU time of issuing a collective that a prediction adding
/// collectives to a trace that issued none takes
/// (`DEFAULT_COLLECTIVE_ISSUE_NS`) is what the corpus's real jobs with
/// NCCL or RCCL collectives measure: the median over the jobs of each
/// job's median (an 8-rank job's ranks pooled as one job), within 5%.
/// Prints the table docs/PREDICTION.md gives.
#[test]
fn the_default_collective_issue_time_is_the_corpus_median() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let ranks: Vec<String> = (0..8)
        .map(|r| format!("multi-rank/dlrm-8xv100/rank{r}.json.gz"))
        .collect();
    let jobs: Vec<(&str, Vec<String>)> = vec![
        (
            "single-rank/v100-ddp-rank1of2-allreduce.json.gz",
            vec!["single-rank/v100-ddp-rank1of2-allreduce.json.gz".into()],
        ),
        (
            "single-rank/a100-ddp-rank0of2-event-record.json.gz",
            vec!["single-rank/a100-ddp-rank0of2-event-record.json.gz".into()],
        ),
        (
            "single-rank/a100-recsys-rank3of8.json.gz",
            vec!["single-rank/a100-recsys-rank3of8.json.gz".into()],
        ),
        (
            "single-rank/mi300x-resnet-ddp-rank0of8.json.gz",
            vec!["single-rank/mi300x-resnet-ddp-rank0of8.json.gz".into()],
        ),
        (
            "single-rank/recsys-rank0of128-sampled-no-flows.json.gz",
            vec!["single-rank/recsys-rank0of128-sampled-no-flows.json.gz".into()],
        ),
        (
            "single-rank/b200-vllm-tp8-rank0.json.gz",
            vec!["single-rank/b200-vllm-tp8-rank0.json.gz".into()],
        ),
        ("multi-rank/dlrm-8xv100 (8 ranks)", ranks),
    ];
    let mut medians = Vec::new();
    for (name, files) in &jobs {
        let traces: Vec<_> = (files.iter())
            .map(|f| lumos_trace::read_path(&corpus.path(f)).unwrap())
            .collect();
        let base = match Baseline::new(traces.iter().map(input).collect()) {
            Ok(b) => b,
            Err(e) => {
                println!("| {name} | no baseline: {e} |");
                continue;
            }
        };
        match lumos_predict::collective_issue_spans(&base) {
            Some(spans) => {
                let median = spans[spans.len() / 2] as f64 / 1e3;
                println!(
                    "| {name} | {} | {median:.1} us | {:.1} .. {:.1} us |",
                    spans.len(),
                    spans[0] as f64 / 1e3,
                    spans[spans.len() - 1] as f64 / 1e3
                );
                medians.push(median);
            }
            None => println!("| {name} | 0 | - | no collective launched under a collective op |"),
        }
    }
    assert!(medians.len() >= 3, "{medians:?}");
    medians.sort_by(f64::total_cmp);
    let n = medians.len();
    let median = match n % 2 {
        1 => medians[n / 2],
        _ => (medians[n / 2 - 1] + medians[n / 2]) / 2.0,
    };
    let default = lumos_predict::DEFAULT_COLLECTIVE_ISSUE_NS / 1e3;
    println!("median of {n} jobs' medians: {median:.1} us; default {default:.1} us");
    assert!(
        (default - median).abs() <= 0.05 * median,
        "default {default} us, corpus {median} us"
    );
}
