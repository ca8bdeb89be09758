//! Reports computed from library values: a job's step is its slowest
//! rank's, the JSON shapes of the mirrors of the predictor's types, the
//! summary's treatment of flagged traces.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

use lumos_graph::{assemble, RankInput};
use lumos_report::{replay_job, slowest_rank_steps, RankScale, ReportError, Slowest};
use lumos_sim::SimOptions;

fn dlrm() -> Option<Vec<RankInput>> {
    let corpus = lumos_testkit::corpus()?;
    let ranks = corpus.traces("multi-rank/dlrm-8xv100");
    Some(
        ranks
            .iter()
            .map(|p| RankInput::from_trace(&lumos_trace::read_path(p).unwrap()))
            .collect(),
    )
}

#[test]
fn the_slowest_rank_sets_each_job_step() {
    let steps = [vec![5, 9, 2], vec![7, 9], vec![6, 1, 8]];
    assert_eq!(
        slowest_rank_steps(&steps),
        [Slowest { pos: 1, ns: 7 }, Slowest { pos: 0, ns: 9 }]
    );
    assert!(slowest_rank_steps(&[]).is_empty());
}

#[test]
fn a_joint_replay_reports_every_rank_and_the_job() {
    let Some(ranks) = dlrm() else {
        return;
    };
    let job = assemble(ranks).unwrap();
    let out = replay_job(&job, &SimOptions::default(), &[], false).unwrap();
    assert_eq!(out.traces.len(), 8);
    let j = out.job.as_ref().unwrap();
    assert_eq!(j.ranks, (0..8).collect::<Vec<_>>());
    let steps = j.steps.as_ref().unwrap();
    assert!(!steps.is_empty());
    for s in steps {
        // The job's step is the slowest rank's, on each side.
        let measured = out.traces.iter().map(|t| t.steps[s.index].measured_us);
        assert_eq!(measured.fold(0.0, f64::max), s.measured_us);
        let slowest = &out.traces[s.slowest_rank_replayed as usize];
        assert_eq!(slowest.steps[s.index].replayed_us, s.replayed_us);
    }
    assert_eq!(j.waiting.as_ref().unwrap().len(), 8);
    assert!(j.what_if.is_empty());

    let scaled = [RankScale {
        rank: 3,
        factor: 1.5,
    }];
    let out = replay_job(&job, &SimOptions::default(), &scaled, false).unwrap();
    assert_eq!(out.job.unwrap().what_if, ["rank 3: GPU compute x1.5"]);
    let absent = [RankScale {
        rank: 9,
        factor: 1.5,
    }];
    let e = replay_job(&job, &SimOptions::default(), &absent, false).unwrap_err();
    assert!(matches!(e, ReportError::RankNotInJob { rank: 9, .. }));
    assert_eq!(e.to_string(), "rank 9 is not in the job (ranks 0-7)");
}

#[test]
fn structure_mirrors_serialize_enumerations_by_name() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let trace =
        lumos_trace::read_path(&corpus.path("single-rank/a100-recsys-rank3of8.json.gz")).unwrap();
    let report = lumos_report::inspect(&trace);
    let v = serde_json::to_value(&report.structure).unwrap();
    let method = v["layer_method"].as_str().unwrap();
    let methods = [
        "annotation",
        "scope_pattern",
        "other_stage",
        "kernel_pattern",
        "none",
    ];
    assert!(methods.contains(&method), "{method}");
    for f in v["findings"].as_array().unwrap() {
        let c = f["confidence"].as_str().unwrap();
        assert!(["low", "medium", "high"].contains(&c), "{c}");
    }
    let v = serde_json::to_value(&report).unwrap();
    assert_eq!(v["rank"], 3);
    assert_eq!(v["rank_source"], "distributedInfo");
}

/// `inspect_path` (the trace read into the build as it is read) reports
/// each corpus trace exactly as `inspect` of the trace read whole does.
#[test]
fn the_streamed_inspect_reports_as_the_whole_trace_does() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    for path in corpus.traces("single-rank") {
        let whole = lumos_report::inspect(&lumos_trace::read_path(&path).unwrap());
        let (streamed, _) = lumos_report::inspect_path(&path, &|_| {}).unwrap();
        assert_eq!(
            serde_json::to_string(&streamed).unwrap(),
            serde_json::to_string(&whole).unwrap(),
            "{}",
            path.display()
        );
    }
}
