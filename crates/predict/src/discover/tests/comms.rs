//! Step 4: communication classes.

use super::super::comms::{
    attribute_unlaunched, class_from_desc, classify, classify_comms, collective_kind,
    is_all_to_all, p2p_of, place_of, Place,
};
use super::*;
use crate::context::GroupInfo;
use lumos_models::CollectiveKind;

#[test]
fn names_and_descriptions() {
    assert_eq!(
        collective_kind("_allgather_base"),
        Some(CollectiveKind::AllGather)
    );
    assert_eq!(
        collective_kind("all_reduce"),
        Some(CollectiveKind::AllReduce)
    );
    assert_eq!(
        collective_kind("_reduce_scatter_base"),
        Some(CollectiveKind::ReduceScatter)
    );
    assert_eq!(collective_kind("recv"), Some(CollectiveKind::SendRecv));
    assert_eq!(collective_kind("all_to_allv"), None);
    assert_eq!(p2p_of("isend"), Some(P2p::Send));
    assert_eq!(p2p_of("RECV"), Some(P2p::Recv));
    assert_eq!(p2p_of("sendrecv"), None);
    for (desc, class) in [
        ("TENSOR_MODEL_PARALLEL_GROUP", Some(GroupClass::Tensor)),
        ("DATA_PARALLEL_GROUP", Some(GroupClass::Data)),
        ("TENSOR_AND_DATA_PARALLEL_GROUP", Some(GroupClass::Data)),
        ("PIPELINE_MODEL_PARALLEL_GROUP", Some(GroupClass::Pipeline)),
        ("MODEL_PARALLEL_GROUP", Some(GroupClass::ModelParallel)),
        ("EXPERT_MODEL_PARALLEL_GROUP", Some(GroupClass::Other)),
        ("EMBEDDING_GROUP", Some(GroupClass::Other)),
        ("default_pg", None),
    ] {
        assert_eq!(class_from_desc(desc), class, "{desc}");
    }
}

#[test]
fn rules_apply_in_order() {
    let described = GroupInfo {
        name: "3".into(),
        desc: Some("TENSOR_MODEL_PARALLEL_GROUP".into()),
        ranks: vec![0, 1],
    };
    let world = GroupInfo {
        name: "0".into(),
        desc: Some("default_pg".into()),
        ranks: Vec::new(),
    };
    use GroupClass::{Data, ModelParallel, Pipeline, Tensor};
    use Place::{Epilogue, ForwardLayer, LastBackward};
    // The class and confidence; the rules' words are the rules' own.
    let class = |name, size, group, place| {
        let (class, confidence, _) = classify(name, size, group, place, Some(8), false);
        (class, confidence)
    };
    // A description beats everything, even a send.
    assert_eq!(
        class("send", None, Some(&described), Epilogue),
        (Tensor, Confidence::High)
    );
    assert_eq!(
        class("recv", None, None, ForwardLayer),
        (Pipeline, Confidence::Medium)
    );
    assert_eq!(
        class("allreduce", None, None, ForwardLayer),
        (Tensor, Confidence::Medium)
    );
    assert_eq!(
        class("allreduce", None, None, LastBackward),
        (Data, Confidence::Medium)
    );
    // The world group (by description or size) before the epilogue.
    assert_eq!(
        class("allreduce", None, Some(&world), Epilogue),
        (Data, Confidence::Low)
    );
    assert_eq!(
        class("allreduce", Some(8), None, Epilogue),
        (Data, Confidence::Low)
    );
    assert_eq!(
        class("allreduce", Some(4), None, Epilogue),
        (ModelParallel, Confidence::Low)
    );
    assert_eq!(
        class("allreduce", None, None, Place::Other),
        (Data, Confidence::Low)
    );
    // DDP's bucket reductions, launched from the gradient hooks, before the
    // world group; other collectives there are no gradient reduction.
    assert_eq!(
        class("allreduce", None, Some(&world), Place::GradientHook),
        (Data, Confidence::Medium)
    );
    assert_eq!(
        class("reduce_scatter", Some(8), None, Place::GradientHook),
        (Data, Confidence::Medium)
    );
    assert_eq!(
        class("broadcast", None, Some(&world), Place::GradientHook),
        (Data, Confidence::Low)
    );
    assert_eq!(
        class("_allgather_base", None, None, Place::Other),
        (GroupClass::Other, Confidence::Low)
    );
}

/// Issue 15: NCCL runs an all-to-all as `SendRecv` kernels; the operator's
/// name (`nccl:all_to_all`, or a `Collective name` of `all_to_allv`) says
/// what it is, and it is no pipeline transfer, nor tensor parallel where a
/// forward layer runs it (experts).
#[test]
fn all_to_alls_are_not_pipeline_or_tensor_parallel() {
    for name in ["all_to_all", "all_to_allv", "alltoall_base", "AllToAll"] {
        assert!(is_all_to_all(name), "{name}");
        for place in [Place::ForwardLayer, Place::LastBackward, Place::Other] {
            assert_eq!(
                classify(name, None, None, place, Some(8), false),
                (
                    GroupClass::Other,
                    Confidence::Medium,
                    "an all-to-all (by operator or recorded name)"
                ),
                "{name} at {place:?}"
            );
        }
        assert_eq!(collective_kind(name), None, "{name}: no ring model");
        assert_eq!(p2p_of(name), None, "{name}");
    }
    for name in ["SendRecv", "send", "all_reduce", "_allgather_base"] {
        assert!(!is_all_to_all(name), "{name}");
    }
    // A process group's description still comes first.
    let described = GroupInfo {
        name: "5".into(),
        desc: Some("EXPERT_MODEL_PARALLEL_GROUP".into()),
        ranks: vec![0, 1],
    };
    assert_eq!(
        classify(
            "all_to_all",
            None,
            Some(&described),
            Place::ForwardLayer,
            Some(8),
            false
        ),
        (
            GroupClass::Other,
            Confidence::High,
            "the process group's description"
        )
    );
}

#[test]
fn places_follow_passes_and_layers() {
    let mut fwd = pass(PassKind::Forward, 0);
    fwd.layers = vec![vec![1]];
    let steps = vec![StepStructure {
        main: ProcId(0),
        backward: vec![ProcId(1)],
        prologue: Vec::new(),
        passes: vec![
            fwd,
            pass(PassKind::Backward, 0),
            pass(PassKind::Backward, 1),
        ],
        epilogue: Vec::new(),
        units: 0..0,
    }];
    let at = |pass, part| {
        place_of(
            Role::Pass {
                step: 0,
                pass,
                part,
            },
            &steps,
        )
    };
    assert_eq!(at(0, Part::Layer(0)), Place::ForwardLayer);
    assert_eq!(at(0, Part::Pre), Place::Other);
    assert_eq!(at(1, Part::Layer(0)), Place::Other);
    assert_eq!(at(2, Part::Post), Place::LastBackward);
    assert_eq!(
        place_of(Role::Epilogue { step: 0 }, &steps),
        Place::Epilogue
    );
    assert_eq!(place_of(Role::Prologue { step: 0 }, &steps), Place::Other);
}

#[test]
fn without_descriptions_the_structure_decides() {
    let trace = synth("gpt-tiny", 2, 2, 2, 4, 0);
    let (g, _, mut ctx, s) = discovered(&trace);
    // With the process groups' descriptions, every group is known.
    assert!(s.comms.iter().all(|c| c.confidence == Confidence::High));
    ctx.groups.clear();
    let bare = classify_comms(&g, &ctx, &s.units, &s.roles, &s.steps, s.shows_backward);
    assert_eq!(bare.len(), s.comms.len());
    let mut tensor_in_forward_layers = 0;
    for (c, d) in bare.iter().zip(&s.comms) {
        assert_eq!((c.task, c.kind, c.p2p), (d.task, d.kind, d.p2p));
        assert!(c.ranks.is_empty(), "no group, no ranks");
        if d.class == GroupClass::Pipeline {
            assert_eq!(
                (c.class, c.confidence),
                (GroupClass::Pipeline, Confidence::Medium)
            );
        }
        let place = place_of(s.role_of_task(c.task), &s.steps);
        if d.class == GroupClass::Tensor && place == Place::ForwardLayer {
            assert_eq!(
                (c.class, c.confidence),
                (GroupClass::Tensor, Confidence::Medium)
            );
            tensor_in_forward_layers += 1;
        }
        // A group serves one parallelism: the tensor-parallel group's
        // collectives are tensor parallel wherever they run (before, its
        // last backward's were taken for gradient buckets, its earlier
        // backwards' for no class).
        if d.class == GroupClass::Tensor {
            assert_eq!(c.class, GroupClass::Tensor, "{place:?}: {}", c.basis);
        }
        if place == Place::LastBackward && c.p2p.is_none() && d.class != GroupClass::Tensor {
            assert_eq!(c.class, GroupClass::Data);
        }
    }
    assert!(tensor_in_forward_layers > 0);
    // Nor are its reduce-scatters a distributed optimizer's, on either
    // stage, once the trace lists no process groups.
    for rank in [0, 4] {
        let mut trace = synth("gpt-tiny", 2, 2, 2, 4, rank);
        trace.meta.process_groups.clear();
        let (_, _, _, s) = discovered(&trace);
        assert!(s.config.degrees_guessed.is_some());
        assert_eq!(s.config.distributed_optimizer, Some(false), "rank {rank}");
    }
}

/// A synthesized data-parallel rank whose first step's data-parallel
/// collectives lost their launches (as work launched before a capture
/// began does) and their class with them: each is taken for the same
/// collective a step later on its stream, class, kind and size included.
#[test]
fn collectives_without_a_launch_are_taken_for_the_same_one_a_step_later() {
    // Three steps: the second and third repeat (or, below, do not).
    let mut cfg = lumos_synth::SynthConfig::new(
        lumos_synth::ModelPreset::preset("gpt-tiny").unwrap(),
        lumos_synth::Parallelism::new(1, 1, 2, 2),
        lumos_models::GpuSpec::h100(),
    );
    cfg.steps = 3;
    let text = lumos_synth::synthesize_rank(&cfg, 0).unwrap();
    let trace = lumos_trace::read_bytes(std::path::Path::new("t.json"), text.as_bytes()).unwrap();
    let (mut g, _, _, s) = discovered(&trace);
    assert_eq!(g.steps.len(), 3);
    assert!(s.comms.iter().all(|c| c.launched && c.taken_for.is_none()));
    let first: Vec<usize> = (s.comms.iter().enumerate())
        .filter(|(_, c)| c.class == GroupClass::Data && g.steps[0].tasks.contains(&c.task))
        .map(|(i, _)| i)
        .collect();
    assert!(!first.is_empty(), "no data-parallel collective in step 0");
    let lost: Vec<TaskId> = first.iter().map(|&i| s.comms[i].task).collect();
    g.edges
        .retain(|e| !(e.kind == lumos_graph::DepKind::Launch && lost.contains(&e.to)));
    // What classification gives a kernel no launch names.
    let bare = |mut comms: Vec<CommInfo>| {
        for &i in &first {
            let c = &mut comms[i];
            (c.class, c.confidence, c.bytes, c.elements) =
                (GroupClass::Other, Confidence::Low, None, None);
            (c.kind, c.ranks, c.group) = (None, Vec::new(), None);
        }
        comms
    };
    let mut comms = bare(s.comms.clone());
    attribute_unlaunched(&g, &mut comms);
    for (i, (c, d)) in comms.iter().zip(&s.comms).enumerate() {
        if !first.contains(&i) {
            assert_eq!(c, d, "a launched collective changed");
            continue;
        }
        assert!(!c.launched);
        let like = c.taken_for.expect("taken for a launched collective");
        assert!(g.steps[1].tasks.contains(&like), "not the next step's");
        assert_eq!(g.task(like).name, g.task(c.task).name);
        assert_eq!(
            (c.class, c.kind, c.bytes, &c.ranks, &c.group),
            (d.class, d.kind, d.bytes, &d.ranks, &d.group)
        );
        assert_eq!(c.basis, super::super::comms::UNLAUNCHED_BASIS);
    }
    // The groups they join are classified as before, on the rule that
    // classified the launched ones: a group first met through a tied
    // collective does not give the tie as its rule (inspect's evidence,
    // a prediction's guessed groups).
    let mut tied = s.clone();
    tied.comms = comms.clone();
    let groups = |s: &Structure| -> Vec<(String, GroupClass, Confidence, &'static str)> {
        (super::super::report::groups(&g, s).into_iter())
            .map(|gr| (gr.name, gr.class, gr.confidence, gr.basis))
            .collect()
    };
    assert_eq!(groups(&tied), groups(&s));
    // Where the launched collectives do not repeat step by step (here one
    // size differs between the second step and the third), nothing is
    // tied: the unlaunched keep what classification gave them.
    let mut odd = bare(s.comms.clone());
    let later = (odd.iter_mut())
        .find(|c| c.class == GroupClass::Data && g.steps[2].tasks.contains(&c.task))
        .unwrap();
    later.bytes = later.bytes.map(|b| b + 1).or(Some(1));
    let before = odd.clone();
    attribute_unlaunched(&g, &mut odd);
    for (i, (c, d)) in odd.iter().zip(&before).enumerate() {
        assert_eq!(c.launched, !first.contains(&i));
        assert_eq!((c.class, c.taken_for), (d.class, None));
    }
    // A kernel that records its own collective (its arguments on the GPU
    // event) is taken for the one at its place only where they agree: one
    // recording another size keeps what it records, one recording the
    // same is tied as the bare ones are.
    let mut own = bare(s.comms.clone());
    let (differs, same) = (first[0], *first.last().unwrap());
    for i in [differs, same] {
        let d = &s.comms[i];
        (own[i].kind, own[i].p2p, own[i].group) = (d.kind, d.p2p, d.group.clone());
        own[i].bytes = Some(d.bytes.unwrap_or(0));
    }
    own[differs].bytes = own[differs].bytes.map(|b| b + 1);
    attribute_unlaunched(&g, &mut own);
    assert_eq!(own[differs].taken_for, None, "{:?}", own[differs]);
    assert_eq!(own[differs].class, GroupClass::Other);
    assert_eq!(
        own[differs].bytes,
        s.comms[differs].bytes.map(|b| b + 1).or(Some(1))
    );
    if differs != same {
        assert!(own[same].taken_for.is_some(), "{:?}", own[same]);
        assert_eq!(own[same].class, s.comms[same].class);
    }
    for &i in first.iter().filter(|&&i| i != differs && i != same) {
        assert!(own[i].taken_for.is_some(), "{:?}", own[i]);
    }
}

/// A trace without a backward pass has no gradients to reduce and no
/// optimizer: the collectives that the world-group, epilogue and
/// kind-alone rules would take for data parallelism or the gradient norm
/// are taken for tensor parallelism (vLLM's all-reduces); the rules
/// before them still decide first.
#[test]
fn collectives_of_an_inference_trace_are_not_gradient_reductions() {
    let world = GroupInfo {
        name: "0".into(),
        desc: Some("default_pg".into()),
        ranks: (0..8).collect(),
    };
    for (group, place) in [
        (None, Place::Other),
        (Some(&world), Place::Other),
        (None, Place::Epilogue),
    ] {
        let (training, _, _) = classify("all_reduce", None, group, place, Some(8), false);
        assert_ne!(training, GroupClass::Tensor, "{place:?}");
        let (class, confidence, _) = classify("all_reduce", None, group, place, Some(8), true);
        assert_eq!(
            (class, confidence),
            (GroupClass::Tensor, Confidence::Low),
            "{place:?}"
        );
    }
    let (class, _, _) = classify("send", None, None, Place::Other, Some(8), true);
    assert_eq!(class, GroupClass::Pipeline);
    let dp = GroupInfo {
        name: "3".into(),
        desc: Some("DATA_PARALLEL_GROUP".into()),
        ranks: vec![0, 4],
    };
    let (class, _, _) = classify("all_reduce", None, Some(&dp), Place::Other, Some(8), true);
    assert_eq!(class, GroupClass::Data);
}
