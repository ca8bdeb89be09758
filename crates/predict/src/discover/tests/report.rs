//! Step 6: the report.

use super::super::report::*;
use super::*;

#[test]
fn stage_roles_and_the_schedule() {
    let layout = [1, 3, 1, 3];
    for (rank, role) in [(0, "first"), (1, "middle"), (2, "last")] {
        let (.., s) = discovered(&synth_layers("gpt-tiny", Some(6), layout, rank));
        assert_eq!(stage_role(&s), role);
        assert_eq!(one_f_one_b(&s), Some(true));
        assert_eq!(s.report.stage_role, role);
        assert_eq!(s.report.pass_order, s.steps[0].order());
    }
    let (.., s) = discovered(&synth("gpt-tiny", 1, 1, 2, 2, 0));
    assert_eq!(stage_role(&s), "only");
    // Another order than 1F1B is reported as such.
    let mut s = s;
    s.steps[0].passes.swap(0, 1);
    assert_eq!(one_f_one_b(&s), Some(false));
    s.steps.clear();
    assert_eq!((stage_role(&s), one_f_one_b(&s)), ("unknown", None));
}

#[test]
fn phases_share_out_every_task_of_a_unit() {
    let (g, _, _, s) = discovered(&synth("gpt-tiny", 2, 2, 2, 4, 4));
    let p = phases(&g, &s);
    let names: Vec<&str> = p.keys().map(|k| k.as_str()).collect();
    assert_eq!(names, ["backward", "forward", "optimizer", "prologue"]);
    let sum = |gpu: bool| -> f64 {
        s.units
            .units
            .iter()
            .flat_map(|u| if gpu { u.gpu() } else { u.cpu() })
            .map(|&t| g.task(t).duration_ns as f64)
            .sum::<f64>()
            / 1e6
            / s.steps.len() as f64
    };
    let cpu: f64 = p.values().map(|t| t.cpu_ms).sum();
    let gpu: f64 = p.values().map(|t| t.gpu_ms).sum();
    assert!((cpu - sum(false)).abs() < 1e-6 * cpu);
    assert!((gpu - sum(true)).abs() < 1e-6 * gpu);
    assert!(p["backward"].gpu_ms > p["forward"].gpu_ms);
}

#[test]
fn groups_count_the_first_step_s_bytes() {
    let (g, _, _, s) = discovered(&synth("gpt-tiny", 2, 2, 2, 4, 0));
    let groups = groups(&g, &s);
    let classes: Vec<GroupClass> = groups.iter().map(|gr| gr.class).collect();
    for c in [
        GroupClass::Data,
        GroupClass::Tensor,
        GroupClass::Pipeline,
        GroupClass::ModelParallel,
    ] {
        assert!(classes.contains(&c), "{c:?} in {classes:?}");
    }
    assert_eq!(
        groups.iter().map(|gr| gr.tasks).sum::<usize>(),
        s.comms.len()
    );
    // Two identical steps: each group's bytes in one step are half of
    // all of its bytes.
    for gr in &groups {
        let all: u64 = s
            .comms
            .iter()
            .filter(|c| c.class == gr.class && c.group.as_deref() == Some(gr.name.as_str()))
            .filter_map(|c| c.bytes)
            .sum();
        assert_eq!(2 * gr.bytes_per_step, all, "{}", gr.name);
    }
}

#[test]
fn why_structural_edits_are_blocked() {
    let (.., s) = discovered(&synth("gpt-tiny", 1, 1, 2, 2, 0));
    assert_eq!(edits_blocked(&s), None);
    let mut t = s.clone();
    t.steps[1].passes.pop();
    assert_eq!(
        edits_blocked(&t).as_deref(),
        Some("forward and backward pass counts differ (2 forward, 1 backward in step 2)")
    );
    let mut t = s.clone();
    for st in &mut t.steps {
        st.passes.retain(|p| p.kind == PassKind::Forward);
    }
    assert!(
        edits_blocked(&t)
            .unwrap()
            .starts_with("forward passes but no backward pass found in any step"),
        "{:?}",
        edits_blocked(&t)
    );
    let mut t = s.clone();
    t.layer_method = LayerMethod::KernelPattern;
    assert_eq!(
        edits_blocked(&t).as_deref(),
        Some("no repeated layer block among the CPU operators")
    );
    let mut t = s.clone();
    t.steps.clear();
    assert_eq!(
        edits_blocked(&t).as_deref(),
        Some("no ProfilerStep annotations")
    );
    let mut t = s;
    t.units.inconsistency = Some("out of order".into());
    assert_eq!(edits_blocked(&t).as_deref(), Some("out of order"));
    // One micro-batch of one stage: the units are sound (settled: no
    // other cut is searched for), and the verdict refuses pipeline and
    // virtual-stage edits only, in the report that `lumos inspect` shows
    // as in a prediction.
    let (.., one) = discovered(&synth("gpt-tiny", 1, 1, 2, 1, 0));
    assert_eq!(one.config.microbatches, Some(1));
    assert_eq!(structure_blocked(&one), None);
    assert!(one_stage_of_one_micro_batch(&one));
    let want = "1 micro-batch traced: the pipeline and virtual stages cannot change; layers and \
                micro-batches can, at lower confidence";
    let got = edits_blocked(&one).unwrap();
    assert!(got.starts_with(want), "{got}");
    assert_eq!(one.report.structural_edits_blocked.as_deref(), Some(&*got));
    // A stage of a longer pipeline is refused every structural edit, for
    // the receive its prologue holds.
    let (.., two) = discovered(&synth("gpt-tiny", 1, 2, 1, 1, 1));
    assert!(!one_stage_of_one_micro_batch(&two));
    let got = edits_blocked(&two).unwrap();
    assert!(
        got.starts_with("1 micro-batch traced on a stage of a pipeline of 2 stages")
            && got.contains("first receive opens its step's prologue"),
        "{got}"
    );
    // The structure's own reason comes first.
    let mut t = one;
    t.steps.clear();
    assert_eq!(
        edits_blocked(&t).as_deref(),
        Some("no ProfilerStep annotations")
    );
}

#[test]
fn findings_run_in_step_order() {
    let (.., s) = discovered(&synth("gpt-tiny", 2, 2, 2, 4, 0));
    let whats: Vec<&str> = s.report.findings.iter().map(|f| f.what.as_str()).collect();
    let at = |w: &str| whats.iter().position(|x| x.starts_with(w)).unwrap();
    assert!(at("tensor-parallel degree") < at("micro-batches"));
    assert!(at("micro-batches") < at("hidden size"));
    assert!(at("hidden size") < at("pipeline schedule"));
    assert!(at("pipeline schedule") < at("layer block"));
    assert!(at("layer block") < at("process group"));
}
