//! The joint replay that takes the job and frees each rank's graph as it
//! is merged (`replay_jointly_owned`, what `lumos replay --job` runs)
//! against the one that borrows it: each rank's own graph read back from
//! the job graph exactly, the same report, and each rank's timeline the
//! same bytes as one written from the rank's own graph, the way reports
//! were made before the ranks' graphs were given up. On the DLRM corpus
//! job and on a synthesized pipeline job with skewed host clocks (so that
//! windows move on the job timeline).
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

use lumos_graph::{assemble, Graph, Job, Measured, RankInput, TaskId};
use lumos_report::{
    replay_jointly_owned, replay_jointly_scaled, JobReplayed, RankScale, Timeline, TimelineSource,
};
use lumos_sim::{SimOptions, TaskTimes};
use lumos_synth::{write_job, HostClocks, ModelPreset, Parallelism, Ranks, SynthConfig};
use lumos_testkit::TempDir;

fn dlrm() -> Option<Job> {
    let corpus = lumos_testkit::corpus()?;
    let inputs = corpus
        .traces("multi-rank/dlrm-8xv100")
        .iter()
        .map(|p| RankInput::from_trace(&lumos_trace::read_path(p).unwrap()))
        .collect();
    Some(assemble(inputs).unwrap())
}

/// 8 ranks: TP 2, PP 2, DP 2, two ranks per host, the hosts' clocks apart.
fn synthesized() -> Job {
    let mut cfg = SynthConfig::new(
        ModelPreset::preset("gpt-tiny").unwrap(),
        Parallelism::new(2, 2, 2, 4),
        lumos_models::GpuSpec::h100(),
    );
    cfg.ranks = Ranks::All;
    cfg.hosts = Some(HostClocks {
        ranks_per_host: 2,
        skew_ns: vec![0, 3_700_000, -12_300_000, 250_000_000],
    });
    let dir = TempDir::new("joint-owned");
    let inputs = write_job(&cfg, dir.path())
        .unwrap()
        .iter()
        .map(|p| RankInput::from_trace(&lumos_trace::read_path(p).unwrap()))
        .collect();
    assemble(inputs).unwrap()
}

/// A rank's replayed times, moved back to its own window origin.
struct Shifted<'a> {
    start_ns: &'a [i64],
    end_ns: &'a [i64],
    shift: i64,
}

impl TaskTimes for Shifted<'_> {
    fn task_count(&self) -> usize {
        self.start_ns.len()
    }
    fn start_of(&self, t: TaskId) -> i64 {
        self.start_ns[t.idx()].saturating_sub(self.shift)
    }
    fn end_of(&self, t: TaskId) -> i64 {
        self.end_ns[t.idx()].saturating_sub(self.shift)
    }
}

/// Each rank's timeline from its own graph and measured times, `own`.
fn timelines_from(r: &JobReplayed, own: &dyn Fn(usize) -> (Graph, Measured)) -> Vec<Vec<u8>> {
    (0..r.rank_count())
        .map(|pos| {
            let (graph, measured) = own(pos);
            let part = &r.graph.ranks[pos];
            let range = part.tasks.start as usize..part.tasks.end as usize;
            let times = Shifted {
                start_ns: &r.schedule.start_ns[range.clone()],
                end_ns: &r.schedule.end_ns[range],
                shift: part.start_ns,
            };
            let source = TimelineSource::of_rank(&r.job.ranks[pos]);
            let bytes = Timeline::replayed(&source, &graph, &measured, &times)
                .write(Vec::new())
                .unwrap();
            bytes
        })
        .collect()
}

fn the_owned_replay_gives_what_the_borrowed_one_gives(job: Job, scales: &[RankScale]) {
    let opts = SimOptions::default();
    for cpu in [false, true] {
        let borrowed = replay_jointly_scaled(&job, &opts, &[], scales, cpu).unwrap();
        for (pos, r) in job.graphs.iter().enumerate() {
            let (g, m) = borrowed.rank(pos);
            assert_eq!(
                format!("{g:?}\n{m:?}"),
                format!("{:?}\n{:?}", r.graph, r.measured),
                "rank {}",
                r.rank
            );
        }
        let before = serde_json::to_string(&borrowed.report()).unwrap();
        let own_graphs = |pos: usize| {
            let r = &job.graphs[pos];
            (r.graph.clone(), r.measured.clone())
        };
        let timelines_before = timelines_from(&borrowed, &own_graphs);

        let owned = replay_jointly_owned(job.clone(), &opts, &[], scales, cpu).unwrap();
        assert!(owned.job.graphs.iter().all(|r| r.graph.tasks.is_empty()));
        assert_eq!(serde_json::to_string(&owned.report()).unwrap(), before);
        let own_back = |pos: usize| {
            let (g, m) = owned.rank(pos);
            (g.into_owned(), m.into_owned())
        };
        assert_eq!(timelines_from(&owned, &own_back), timelines_before);
        // The merged timeline, written rank by rank from the emptied job,
        // is the borrowed job's.
        assert!(
            owned.write_merged_timeline(Vec::new()).unwrap()
                == borrowed.write_merged_timeline(Vec::new()).unwrap()
        );
        let written: Vec<Vec<u8>> = (0..owned.rank_count())
            .map(|pos| {
                let rank = owned.rank(pos);
                let bytes = owned.timeline(pos, &rank).write(Vec::new()).unwrap();
                bytes
            })
            .collect();
        assert_eq!(written, timelines_before);
    }
}

#[test]
fn dlrm_replayed_without_its_ranks_graphs_reports_the_same() {
    let Some(job) = dlrm() else {
        return;
    };
    let scales = [RankScale {
        rank: 3,
        factor: 1.5,
    }];
    the_owned_replay_gives_what_the_borrowed_one_gives(job.clone(), &[]);
    the_owned_replay_gives_what_the_borrowed_one_gives(job, &scales);
}

#[test]
fn a_synthesized_job_replayed_without_its_ranks_graphs_reports_the_same() {
    let job = synthesized();
    assert!(job.clock.hosts.len() == 4, "{:?}", job.clock.hosts);
    let scales = [RankScale {
        rank: 5,
        factor: 0.7,
    }];
    the_owned_replay_gives_what_the_borrowed_one_gives(job, &scales);
}
