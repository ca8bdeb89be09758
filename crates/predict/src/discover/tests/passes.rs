//! Step 3: steps cut into passes.

use super::super::layers::LayerBlocks;
use super::super::passes::*;
use super::*;

#[test]
fn bursts_end_on_the_main_thread_only() {
    // main 0, backward 1, another thread 2.
    let us = units(
        [0, 1, 1, 2, 1, 0, 1]
            .iter()
            .map(|&th| unit(th, 0, &[], &[]))
            .collect(),
        &["x"],
    );
    let all: Vec<u32> = (0..7).collect();
    assert_eq!(
        bursts(&us, &all, ProcId(0), &[ProcId(1)]),
        vec![vec![1, 2, 4], vec![6]]
    );
}

#[test]
fn backward_threads_are_autograd_or_the_busiest_launcher() {
    let tokens = ["op", "autograd::engine::evaluate_function: MmBackward#"];
    let all: Vec<u32> = (0..4).collect();
    let us = units(
        vec![
            unit(0, 0, &[], &[1]),
            unit(1, 0, &[], &[1, 2, 3]),
            unit(2, 1, &[], &[]),
            unit(3, 0, &[], &[4, 5]),
        ],
        &tokens,
    );
    assert_eq!(backward_threads(&us, ProcId(0), &all), vec![ProcId(2)]);
    let us = units(
        vec![
            unit(0, 0, &[], &[1]),
            unit(1, 0, &[], &[1, 2, 3]),
            unit(2, 0, &[], &[]),
            unit(3, 0, &[], &[4, 5]),
        ],
        &tokens,
    );
    assert_eq!(backward_threads(&us, ProcId(0), &all), vec![ProcId(1)]);
    let us = units(vec![unit(0, 0, &[], &[]), unit(1, 0, &[], &[])], &tokens);
    assert!(backward_threads(&us, ProcId(0), &[0, 1]).is_empty());
}

fn blocks(per_pass: Option<usize>) -> LayerBlocks {
    LayerBlocks {
        forward: vec![1, 2],
        backward: vec![3],
        per_pass,
        method: LayerMethod::ScopePattern,
    }
}

#[test]
fn forward_chains_are_cut_into_passes_of_the_layer_count() {
    // P a b a b a b a b Q: one chain of four layers.
    let toks = [0, 1, 2, 1, 2, 1, 2, 1, 2, 9];
    let cut = forward_chains(&toks, &blocks(Some(2)));
    assert_eq!(
        cut,
        vec![
            ForwardChain {
                starts: vec![1, 3],
                end: 5
            },
            ForwardChain {
                starts: vec![5, 7],
                end: 9
            },
        ]
    );
    // A count that does not divide the chain, or none: one pass.
    for per_pass in [Some(3), Some(4), None] {
        let cut = forward_chains(&toks, &blocks(per_pass));
        assert_eq!(cut.len(), 1, "{per_pass:?}");
        assert_eq!(cut[0].starts, vec![1, 3, 5, 7]);
    }
    let mut none = blocks(Some(2));
    none.forward.clear();
    assert!(forward_chains(&toks, &none).is_empty());
}

#[test]
fn backward_chains_take_the_longest_chain_of_each_burst() {
    // Tokens: 3 is the backward block, 7 foreign work.
    let us = units(
        [0, 3, 3, 7, 3, 3, 3, 7]
            .iter()
            .map(|&t| unit(1, t, &[], &[]))
            .collect(),
        &[],
    );
    let bursts = vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]];
    let c = backward_chains(&us, &bursts, &[3]);
    assert_eq!(
        c,
        vec![
            BackwardChain {
                burst: 0,
                starts: vec![1, 2],
                end: 4
            },
            BackwardChain {
                burst: 1,
                starts: vec![0, 1, 2],
                end: 4
            },
        ]
    );
    assert!(backward_chains(&us, &bursts, &[]).is_empty());
}

/// A step: main-thread units 0-5 and 10-11, one burst 6-9.
fn threads() -> StepThreads {
    StepThreads {
        main: ProcId(0),
        backward: vec![ProcId(1)],
        all: (0..12).collect(),
        main_units: vec![0, 1, 2, 3, 4, 5, 10, 11],
        bursts: vec![vec![6, 7, 8, 9]],
    }
}

#[test]
fn core_passes_come_in_time_order_with_their_roles() {
    let r = threads();
    let mut roles = vec![Role::Outside; 12];
    // The backward chain is listed first but ran second.
    let fwd = [ForwardChain {
        starts: vec![1, 3],
        end: 5,
    }];
    let bwd = [BackwardChain {
        burst: 0,
        starts: vec![1, 2],
        end: 3,
    }];
    let (passes, cores) = core_passes(4, &r, &fwd, &bwd, &mut roles);
    assert_eq!(cores, vec![(1, 4), (6, 9)]);
    assert_eq!(passes[0].kind, PassKind::Forward);
    assert_eq!(passes[0].layers, vec![vec![1, 2], vec![3, 4]]);
    assert_eq!(passes[1].kind, PassKind::Backward);
    assert_eq!(
        (&passes[1].pre, &passes[1].layers, &passes[1].post),
        (&vec![6], &vec![vec![7], vec![8]], &vec![9])
    );
    let pass = |pass, part| Role::Pass {
        step: 4,
        pass,
        part,
    };
    assert_eq!(roles[3], pass(0, Part::Layer(1)));
    assert_eq!(roles[6], pass(1, Part::Pre));
    assert_eq!(roles[8], pass(1, Part::Layer(1)));
    assert_eq!(roles[9], pass(1, Part::Post));
    for u in [0, 5, 10, 11] {
        assert_eq!(roles[u], Role::Outside);
    }
}

#[test]
fn sends_end_the_pass_before_them() {
    let r = threads();
    // Unit 10 launched a send (task 0), unit 11 is the stream wait
    // after it (task 1).
    let g = Graph {
        names: vec!["nccl:send".into(), "cudaStreamWaitEvent".into()],
        tasks: vec![
            task(TaskKind::Kernel, 0, Some(0)),
            task(TaskKind::Runtime, 1, None),
        ],
        collectives: vec![collective("send")],
        ..Graph::default()
    };
    let mut us: Vec<Unit> = (0..12).map(|_| unit(0, 0, &[], &[])).collect();
    us[10] = unit(0, 0, &[], &[0]);
    us[11] = unit(0, 0, &[1], &[]);
    us[11].scope = None;
    let us = units(us, &["x"]);
    let mut roles = vec![Role::Outside; 12];
    for u in [1, 2, 3, 4, 6, 7, 8, 9] {
        roles[u] = Role::Pass {
            step: 0,
            pass: 0,
            part: Part::Pre,
        };
    }
    let b = between_passes(&g, &us, &r, &roles, &[(1, 4), (6, 9)]);
    assert_eq!(
        b,
        Between {
            pre: vec![vec![0], vec![5]],
            post: vec![vec![], vec![10, 11]],
            epilogue: vec![],
        }
    );
    // Without the send, both are the epilogue.
    let mut g = g;
    g.collectives[0].name = "allreduce".into();
    let b = between_passes(&g, &us, &r, &roles, &[(1, 4), (6, 9)]);
    assert_eq!(b.epilogue, vec![10, 11]);
}

#[test]
fn the_first_pass_keeps_what_precedes_every_pass_of_its_kind() {
    // Tokens: x 0, r 1, d 2, q 3.
    let us = units(
        [0, 1, 2, 1, 2, 3, 1, 2]
            .iter()
            .map(|&t| unit(0, t, &[], &[]))
            .collect(),
        &["x", "r", "d", "q"],
    );
    let passes = [
        pass(PassKind::Forward, 0),
        pass(PassKind::Backward, 0),
        pass(PassKind::Forward, 1),
        pass(PassKind::Backward, 1),
        pass(PassKind::Forward, 2),
    ];
    let pre = vec![vec![0, 1, 2], vec![], vec![3, 4], vec![], vec![5, 6, 7]];
    assert_eq!(first_pass_own(&us, &passes, &pre), 2);
    // Nothing in common with the others: all of it is the prologue.
    let pre = vec![vec![0, 1, 2], vec![], vec![5], vec![], vec![3, 4, 5]];
    assert_eq!(first_pass_own(&us, &passes, &pre), 0);
    // The only pass of its kind keeps nothing.
    assert_eq!(first_pass_own(&us, &passes[..2], &pre), 0);
    // With model chunks, only the passes of the first one's chunk count:
    // the last forward, of another chunk, opens with `q` alone (the last
    // virtual stage's first receive, where the last chunk's forwards load
    // data after theirs).
    let pre = vec![vec![0, 1, 2], vec![], vec![3, 4], vec![], vec![5]];
    assert_eq!(first_pass_own(&us, &passes, &pre), 0);
    let mut chunked = passes.clone();
    chunked[4].chunk = 1;
    assert_eq!(first_pass_own(&us, &chunked, &pre), 2);
}

#[test]
fn leftovers_go_with_the_unit_before_them() {
    let layer = Role::Pass {
        step: 0,
        pass: 0,
        part: Part::Layer(0),
    };
    let mut roles = vec![
        Role::Outside,
        layer,
        Role::Outside,
        Role::Epilogue { step: 0 },
        Role::Outside,
    ];
    let mut passes = [pass(PassKind::Forward, 0)];
    passes[0].layers = vec![vec![1]];
    let (mut prologue, mut epilogue) = (Vec::new(), vec![3]);
    absorb_leftovers(
        0,
        &[0, 1, 2, 3, 4],
        &mut roles,
        &mut passes,
        &mut prologue,
        &mut epilogue,
    );
    assert_eq!(roles[0], Role::Prologue { step: 0 });
    assert_eq!(roles[2], layer);
    assert_eq!(roles[4], Role::Epilogue { step: 0 });
    assert_eq!(prologue, vec![0]);
    assert_eq!(passes[0].layers, vec![vec![1, 2]]);
    assert_eq!(epilogue, vec![3, 4]);
}

#[test]
fn synthesized_steps_are_cut_into_1f1b_passes() {
    // Stage 0 of 2, four micro-batches, two layers per stage.
    let trace = synth("gpt-tiny", 2, 2, 2, 4, 0);
    let (g, meas, _) = graph_of(&trace);
    let us = Units::build(&g, &meas);
    let threads = step_threads(&g, &us);
    assert_eq!(threads.len(), 2, "two steps");
    for r in &threads {
        assert_eq!(r.backward.len(), 1);
        assert_eq!(r.bursts.len(), 4, "a backward burst per micro-batch");
        assert!(r
            .main_units
            .iter()
            .all(|&u| us.units[u as usize].thread == r.main));
    }
    let mut findings = Vec::new();
    let cut = passes_and_layers(&g, &us, None, &mut findings);
    assert!(findings.is_empty());
    assert_eq!(cut.method, LayerMethod::ScopePattern);
    for (si, st) in cut.steps.iter().enumerate() {
        assert_eq!(st.order(), "F1 F2 B1 F3 B2 F4 B3 B4");
        assert!(st.passes.iter().all(|p| p.layers.len() == 2));
        // Every unit of the step is in exactly the list its role names.
        let si = si as u32;
        for u in st.units.clone() {
            let listed = match cut.roles[u as usize] {
                Role::Prologue { step } => step == si && st.prologue.contains(&u),
                Role::Epilogue { step } => step == si && st.epilogue.contains(&u),
                Role::Pass { step, pass, part } => {
                    let p = &st.passes[pass as usize];
                    step == si
                        && match part {
                            Part::Pre => p.pre.contains(&u),
                            Part::Post => p.post.contains(&u),
                            Part::Layer(j) => p.layers[j as usize].contains(&u),
                        }
                }
                Role::Outside => false,
            };
            assert!(listed, "unit {u}: {:?}", cut.roles[u as usize]);
        }
    }
}

/// `trace` with each step's main-thread work inside `names`, outermost
/// first, one annotation in the next (as `## forward ##` holds DDP's
/// `DistributedDataParallel.forward`, which holds the model's operators).
fn wrapped(mut trace: lumos_trace::Trace, names: &[&str]) -> lumos_trace::Trace {
    use lumos_trace::{Category, Event, StrId};
    let steps: Vec<Event> = (trace.events.iter())
        .filter(|e| trace.name(e).starts_with("ProfilerStep#"))
        .cloned()
        .collect();
    for s in steps {
        let inside = (trace.events.iter()).filter(|e| {
            (e.pid, e.tid) == (s.pid, s.tid) && e.ts_ns > s.ts_ns && e.end_ns() <= s.end_ns()
        });
        let first = inside.clone().map(|e| e.ts_ns).min().unwrap();
        let last = inside.map(Event::end_ns).max().unwrap();
        for (depth, text) in (1..).zip(names) {
            // Each inside the one before, all inside the step and around
            // its work (which starts and ends microseconds inside it).
            let (ts, end) = (s.ts_ns + depth, s.end_ns() - depth);
            assert!(ts < first && end >= last);
            let name = StrId(trace.strings.len() as u32);
            trace.strings.push(text.to_string());
            let e = Event::new(Category::UserAnnotation, name, s.pid, s.tid, ts, end - ts);
            trace.events.push(e);
        }
    }
    trace
}

/// Annotations around whole passes (user code's `## forward ##`, DDP's
/// forward) made each step one unit, so the structure could not be
/// edited: the units are taken inside them, and the structure is the
/// plain trace's.
#[test]
fn annotations_around_whole_steps_are_looked_inside() {
    let plain = synth("gpt-tiny", 1, 1, 2, 2, 0);
    let (_, _, _, want) = discovered(&plain);
    assert_eq!(super::super::report::edits_blocked(&want), None);
    for names in [&["## train_step ##"][..], &["## outer ##", "## inner ##"]] {
        let (_, _, _, got) = discovered(&wrapped(plain.clone(), names));
        assert_eq!(super::super::report::edits_blocked(&got), None, "{names:?}");
        assert_eq!(got.config, want.config, "{names:?}");
        assert_eq!(got.layer_method, want.layer_method);
        let shape = |s: &Structure| {
            (s.steps.iter())
                .map(|st| {
                    (
                        st.passes.len(),
                        st.passes.iter().map(|p| p.layers.len()).sum::<usize>(),
                    )
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(shape(&got), shape(&want), "{names:?}");
        let units = (got.report.findings.iter())
            .find(|f| f.what == "units")
            .expect("a finding says where the units were taken");
        for n in names {
            assert!(units.value.contains(&format!("`{n}`")), "{}", units.value);
        }
    }
}

/// The tokens of the prologue and of what precedes the first pass's
/// layers, in the first step of `s`.
fn prologue_and_first_pre(s: &Structure) -> (Vec<String>, Vec<String>) {
    let st = &s.steps[0];
    let names = |us: &[u32]| -> Vec<String> {
        (us.iter())
            .filter(|&&u| s.units.units[u as usize].thread == st.main)
            .map(|&u| s.units.token(u as usize).to_owned())
            .collect()
    };
    (names(&st.prologue), names(&st.passes[0].pre))
}

/// A step of one micro-batch has no second forward to tell its forward's
/// own work by: the work before the first layer is the pass's own from
/// the first unit that is per-micro-batch in kind (data loading here;
/// host-to-device copies, the embedding), and gradient zeroing before it
/// stays in the prologue. Where no unit is of such a kind, a user
/// annotation around the pass (`microbatch0` of a PyTorch loop) tells it;
/// without either, all of it is the prologue.
#[test]
fn a_lone_forward_keeps_its_data_loading_and_embedding() {
    let trace = synth("gpt-tiny", 1, 1, 2, 1, 0);
    let (.., s) = discovered(&trace);
    let (prologue, pre) = prologue_and_first_pre(&s);
    assert_eq!(prologue, ["aten::zero_"]);
    assert!(pre[0].contains("DataLoader"), "{pre:?}");
    assert!(pre.iter().any(|t| t == "aten::to"), "{pre:?}");
    assert!(pre.iter().any(|t| t == "aten::embedding"), "{pre:?}");
    // Gradient zeroing after the batch's loading (`zero_grad()` in the
    // loop's body) stays the step's, with everything before it.
    let mut zeroing = trace.clone();
    for text in zeroing.strings.iter_mut() {
        if text == "aten::to" {
            *text = "Optimizer.zero_grad#Adam.zero_grad".into();
        }
    }
    let (.., s) = discovered(&zeroing);
    let (prologue, pre) = prologue_and_first_pre(&s);
    assert!(
        (prologue.iter()).any(|t| t.contains("DataLoader")),
        "{prologue:?}"
    );
    assert!(!pre.iter().any(|t| t.contains("zero_grad")), "{pre:?}");
    assert!(pre.iter().any(|t| t == "aten::embedding"), "{pre:?}");
    // The same work under names and copies of no such kind.
    let mut plain = trace.clone();
    for text in plain.strings.iter_mut() {
        if text.contains("DataLoader") {
            *text = "fetch".into();
        } else if text == "aten::embedding" {
            *text = "aten::index_select".into();
        } else if text.starts_with("Memcpy HtoD") {
            *text = "Memcpy DtoD (Device -> Device)".into();
        }
    }
    let (.., s) = discovered(&plain);
    let (prologue, pre) = prologue_and_first_pre(&s);
    assert!(pre.is_empty(), "{pre:?}");
    assert_eq!(prologue[..2], ["aten::zero_", "fetch"]);
    // `microbatch0` around the forward, from its data loading on.
    use lumos_trace::{Category, Event, StrId};
    let mut annotated = plain.clone();
    let main = |e: &Event| (e.pid, e.tid);
    let steps: Vec<Event> = (plain.events.iter())
        .filter(|e| plain.name(e).starts_with("ProfilerStep#"))
        .cloned()
        .collect();
    let name = StrId(annotated.strings.len() as u32);
    annotated.strings.push("microbatch0".into());
    for st in steps {
        let inside = |n: &str| {
            (plain.events.iter())
                .find(|e| {
                    main(e) == main(&st)
                        && e.ts_ns > st.ts_ns
                        && e.end_ns() <= st.end_ns()
                        && plain.name(e) == n
                })
                .cloned()
                .unwrap()
        };
        let (from, to) = (inside("fetch"), inside("aten::ones_like"));
        let (ts, end) = (from.ts_ns - 1, to.end_ns() + 1);
        let e = Event::new(Category::UserAnnotation, name, st.pid, st.tid, ts, end - ts);
        annotated.events.push(e);
    }
    let (.., s) = discovered(&annotated);
    assert_eq!(s.config.microbatches, Some(1));
    let (prologue, pre) = prologue_and_first_pre(&s);
    assert_eq!(prologue, ["aten::zero_"]);
    assert_eq!(pre[0], "fetch", "{pre:?}");
    assert!(pre.iter().any(|t| t == "aten::index_select"), "{pre:?}");
}

/// GPT tiny (4 layers) on four pipeline stages, one layer each, read one
/// stage's trace at a time: nothing repeats inside a pass, so the block
/// that repeats most on the main thread was a whole forward, and chains
/// of back-to-back forwards were taken for passes of "5/7/8 layers"
/// (order `F1`, the first stage read as the only one, the third as the
/// first) beside the verdict "one layer per pass". Each stage's passes
/// are now cut with its own pass blocks: one layer each, 8 micro-batches
/// in its 1F1B order, its place in the pipeline, and still refused alone
/// with no blocks to lend another stage.
#[test]
fn a_stage_of_one_layer_per_pass_counts_one_layer() {
    for (stage, role) in ["first", "middle", "middle", "last"]
        .into_iter()
        .enumerate()
    {
        let (.., s) = discovered(&synth("gpt-tiny", 1, 4, 1, 8, stage));
        assert_eq!(s.report.stage_role, role, "stage {stage}");
        assert_eq!(s.config.layers, Some(1), "stage {stage}");
        assert_eq!(s.report.layers_per_pass, Some(1), "stage {stage}");
        assert_eq!(s.config.microbatches, Some(8), "stage {stage}");
        assert_eq!(s.report.one_f_one_b, Some(true), "stage {stage}");
        for st in &s.steps {
            assert_eq!(st.backward_passes(), 8, "stage {stage}");
            assert!(
                st.passes.iter().all(|p| p.layers.len() == 1),
                "stage {stage}"
            );
        }
        let why = super::super::report::structure_blocked(&s).unwrap_or_default();
        assert!(why.contains("one layer per pass"), "stage {stage}: {why}");
        assert_eq!(s.layer_hint(), None, "stage {stage}");
        assert!(s.own_pass_blocks, "stage {stage}");
        let block = s.report.findings.iter().find(|f| f.what == "layer block");
        let block = block.map(|f| f.evidence.as_str()).unwrap_or_default();
        assert!(block.starts_with("each forward pass's own work"), "{block}");
    }
}

/// The last of two pipeline stages, one micro-batch: its only forward
/// opens with the receive of the activations stage 0 sent (and the
/// stream wait and device synchronization after it), then the labels'
/// loading. The receive is the micro-batch's own, like the loading; it
/// was left in the step's prologue, so `lumos inspect` read the stage as
/// the "only" one (no receive before its forward) and a prediction
/// paired that receive with no send (`--out`: "2 recv written without a
/// process group").
#[test]
fn a_lone_forward_owns_its_pipeline_receive() {
    let (.., s) = discovered(&synth("gpt-tiny", 1, 2, 1, 1, 1));
    for st in &s.steps {
        assert_eq!(st.order(), "F1 B1");
        let recv = |us: &[u32]| us.iter().any(|&u| s.unit_p2p(u) == Some(P2p::Recv));
        assert!(!recv(&st.prologue), "{:?}", st.prologue);
        assert!(recv(&st.passes[0].pre));
    }
    assert_eq!(s.report.stage_role, "last");
    assert!(!s.own_pass_blocks);
}
