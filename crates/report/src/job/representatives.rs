//! A large job replayed from one representative per group of ranks that
//! run the same communication program (`lumos replay --representatives`):
//! the representatives replay jointly (collectives between groups are
//! rendezvous), and each one's collectives inside its group wait for
//! peers modelled from the group's measurement
//! ([`lumos_graph::model_group_peers`]).

use std::collections::BTreeMap;

use lumos_graph::{
    merge, missing_ranks_warning, model_group_peers, rank_ranges, Job, JobGraph, ProgramGroup,
    MISSING_RANKS_TAIL,
};
use lumos_sim::{simulate_job, Schedule, SimOptions};
use serde::Serialize;

use super::replay::{slowest_rank_steps, JobReplayed};
use crate::replay::ReplayOutput;
use crate::units::{err_pct, us};
use crate::ReportError;

/// `representatives` in `lumos replay --representatives --json`.
#[derive(Debug, Clone, Serialize)]
pub struct RepresentativesReport {
    /// Ranks in the job (every group's).
    pub ranks: usize,
    /// Ranks replayed: one per group.
    pub replayed_ranks: usize,
    /// Collective tasks of the representatives replayed against modelled
    /// peers (inside their group).
    pub modelled_collectives: usize,
    /// The groups, by representative.
    pub groups: Vec<ProgramGroupReport>,
}

/// One group of ranks running the same program.
#[derive(Debug, Clone, Serialize)]
pub struct ProgramGroupReport {
    /// The rank replayed for the group.
    pub representative: u32,
    /// Its members, as ranges (`0-7, 16-23`).
    pub ranks: String,
    /// How many.
    pub size: usize,
    /// Per step, the members' measured lengths.
    pub measured_steps_us: Vec<StepSpread>,
}

/// The measured lengths of one step over a group's members.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct StepSpread {
    /// The shortest.
    pub min: f64,
    /// The median (the upper one of an even count).
    pub median: f64,
    /// The longest.
    pub max: f64,
    /// The rank with the longest.
    pub slowest_rank: u32,
}

fn step_spread(g: &ProgramGroup, k: usize) -> Option<StepSpread> {
    let mut v: Vec<(i64, u32)> = g
        .steps_ns
        .iter()
        .zip(&g.ranks)
        .map(|(s, &r)| s.get(k).map(|&ns| (ns, r)))
        .collect::<Option<_>>()?;
    v.sort_unstable_by_key(|&(ns, r)| (ns, std::cmp::Reverse(r)));
    let (max, slowest_rank) = *v.last()?;
    Some(StepSpread {
        min: us(v[0].0),
        median: us(v[v.len() / 2].0),
        max: us(max),
        slowest_rank,
    })
}

/// Replays a job from its representatives: `job` holds one rank per
/// group of `groups` (each group's [`ProgramGroup::representative`]),
/// assembled each counting as its group
/// ([`lumos_graph::assemble_representatives`];
/// `lumos_store::load_representatives` gives it), `groups` every rank of
/// the job, and `peers` each representative's modelled collective
/// durations, by rank ([`lumos_graph::PeerModel::durations`]).
/// The output is that of [`replay_job`](crate::replay_job) on the
/// representatives, except that the job's measured steps are the slowest
/// of every rank's (replayed: the slowest representative's), its missing
/// ranks those in no group, and `representatives` says what was replayed
/// for whom. The representatives' assembly leaves out what the assembly
/// of every rank would; a group whose representative is
/// left out (see [`lumos_graph::LeftOut`]) is left out whole, its members
/// missing, and a member left out alone (its own clock or rank, from
/// [`ProgramGroup::facts`]) leaves its group.
pub fn replay_representatives(
    job: Job,
    groups: &[ProgramGroup],
    peers: &BTreeMap<u32, Vec<Option<i64>>>,
    opts: &SimOptions,
) -> Result<ReplayOutput, ReportError> {
    Ok(replay_representatives_kept(job, groups, peers, opts)?.output)
}

/// A replay from representatives with what it was made from, for the
/// tables beyond the report ([`crate::job_tables`]).
#[derive(Debug)]
pub struct RepresentativesReplayed {
    /// The report, as [`replay_representatives`] gives it.
    pub output: ReplayOutput,
    /// The job of the representatives.
    pub job: Job,
    /// Their merged graph, peers modelled.
    pub graph: JobGraph,
    /// The joint replay.
    pub schedule: Schedule,
}

/// [`replay_representatives`], keeping the job, graph and schedule.
pub fn replay_representatives_kept(
    mut job: Job,
    groups: &[ProgramGroup],
    peers: &BTreeMap<u32, Vec<Option<i64>>>,
    opts: &SimOptions,
) -> Result<RepresentativesReplayed, ReportError> {
    // A representative that the assembly leaves out (a rank of another
    // run, one without tasks, a clock hours away) takes its group along:
    // the members run its program, so they are not the job's either, and
    // their measured steps must not become the job's.
    let left: Vec<u32> = job.left_out.iter().map(|l| l.rank).collect();
    let (kept, dropped): (Vec<&ProgramGroup>, Vec<&ProgramGroup>) = groups
        .iter()
        .partition(|g| !left.contains(&g.representative()));
    for g in &dropped {
        if let [rep, others @ ..] = &g.ranks[..] {
            if !others.is_empty() {
                job.warnings.push(format!(
                    "rank {} left out with rank {rep}, whose communication program they run",
                    rank_ranges(others)
                ));
            }
        }
    }
    // A member the assembly left out on its own (its clock, its rank
    // outside the world size) leaves its group.
    let kept: Vec<ProgramGroup> = kept
        .into_iter()
        .map(|g| {
            let out: Vec<usize> = (1..g.ranks.len())
                .filter(|&k| left.contains(&g.ranks[k]))
                .collect();
            g.without(&out)
        })
        .collect();
    let groups: Vec<&ProgramGroup> = kept.iter().collect();
    let ranks_of = |gs: &[&ProgramGroup]| -> Vec<u32> {
        let mut v: Vec<u32> = gs.iter().flat_map(|g| g.ranks.iter().copied()).collect();
        v.sort_unstable();
        v
    };
    let all = ranks_of(&groups);
    // The ranks that are not replayed are present (in their groups), not
    // missing: only ranks in no group kept are.
    let world = job.world_size.unwrap_or(0);
    job.missing = (0..world)
        .filter(|r| all.binary_search(r).is_err())
        .collect();
    // The assembly's warning on the missing ranks counted the
    // representatives only: it is said again of every rank.
    job.warnings.retain(|w| !w.ends_with(MISSING_RANKS_TAIL));
    if let Some(w) = missing_warning(&job, &dropped, all.len()) {
        job.warnings.push(w);
    }
    let (mut graph, measured, merge_warnings) = merge(&job.graphs, &job.matching, &job.clock);
    let durations: Vec<Vec<Option<i64>>> = job
        .graphs
        .iter()
        .map(|g| peers.get(&g.rank).cloned().unwrap_or_default())
        .collect();
    let modelled = model_group_peers(&mut graph, &job.graphs, &job.matching, &durations);
    ReportError::refuse_empty(&graph.graph, || "the job".to_owned())?;
    let schedule =
        simulate_job(&graph, opts).map_err(|e| ReportError::job_replay(&job, &graph, e))?;
    let replayed = JobReplayed {
        job: std::borrow::Cow::Borrowed(&job),
        graph,
        measured,
        schedule,
        what_if: Vec::new(),
        merge_warnings,
    };
    let mut out = replayed.report();
    if let Some(report) = out.job.as_mut() {
        // A member's steps are named as its representative's: equal
        // programs have as many steps, and a member's names are not in
        // its summary.
        let step_name = |rep: u32, k: usize| -> String {
            let g = &replayed.graph;
            job.position(rep)
                .and_then(|pos| g.ranks[pos].steps.clone().nth(k))
                .map_or_else(
                    || "window".to_owned(),
                    |s| g.graph.steps[s as usize].name.clone(),
                )
        };
        measured_over_all_ranks(report, &groups, step_name);
    }
    out.representatives = Some(RepresentativesReport {
        ranks: all.len(),
        replayed_ranks: job.ranks.len(),
        modelled_collectives: modelled,
        groups: groups
            .iter()
            .map(|g| ProgramGroupReport {
                representative: g.representative(),
                ranks: rank_ranges(&g.ranks),
                size: g.ranks.len(),
                measured_steps_us: (0..g.steps_ns.first().map_or(0, Vec::len))
                    .filter_map(|k| step_spread(g, k))
                    .collect(),
            })
            .collect(),
    });
    let JobReplayed {
        graph, schedule, ..
    } = replayed;
    Ok(RepresentativesReplayed {
        output: out,
        job,
        graph,
        schedule,
    })
}

/// The warning on the job's missing ranks over every rank of its groups
/// (the assembly's counted the representatives only), worded by the
/// assembly's own [`missing_ranks_warning`]: a rank is left out (alone,
/// or with its group's representative, for the reason the representative
/// was); its file unreadable; or it has no file.
fn missing_warning(job: &Job, dropped: &[&ProgramGroup], present: usize) -> Option<String> {
    let world = job.world_size?;
    if job.missing.is_empty() {
        return None;
    }
    let mut why: BTreeMap<u32, String> = (job.left_out.iter())
        .map(|l| (l.rank, l.short_reason().to_owned()))
        .collect();
    for u in &job.unreadable {
        if let Some(r) = u.rank {
            why.insert(r, format!("unreadable ({})", u.error));
        }
    }
    for g in dropped {
        let rep = g.representative();
        if let Some(l) = job.left_out.iter().find(|l| l.rank == rep) {
            for &r in &g.ranks {
                why.insert(r, l.short_reason().to_owned());
            }
        }
    }
    Some(missing_ranks_warning(
        &job.missing,
        Some(world),
        &why,
        None,
        present,
    ))
}

/// The job's measured steps become the slowest of every rank's, not only
/// the representatives', each named as `--job` names it: by the slowest
/// rank's step (`step_name` of its representative and the step's index;
/// "window" for a rank without steps).
fn measured_over_all_ranks(
    report: &mut super::JobReport,
    groups: &[&ProgramGroup],
    step_name: impl Fn(u32, usize) -> String,
) {
    // By rank, as `--job` orders them: among equal steps the lowest rank
    // is the slowest.
    let mut all: Vec<(u32, u32, &Vec<i64>)> = groups
        .iter()
        .flat_map(|g| {
            let rep = g.representative();
            g.ranks
                .iter()
                .zip(&g.steps_ns)
                .map(move |(&r, s)| (r, rep, s))
        })
        .collect();
    all.sort_unstable_by_key(|&(r, _, _)| r);
    let steps: Vec<Vec<i64>> = all.iter().map(|&(_, _, s)| s.clone()).collect();
    let slowest = slowest_rank_steps(&steps);
    if let Some(job_steps) = report.steps.as_mut() {
        for (k, (s, m)) in job_steps.iter_mut().zip(&slowest).enumerate() {
            let (rank, rep, _) = all[m.pos];
            s.name = step_name(rep, k);
            s.measured_us = us(m.ns);
            s.slowest_rank_measured = rank;
            // `replayed_us` is rounded the same way: recover its ns.
            s.error_pct = err_pct(m.ns, (s.replayed_us * 1e3).round() as i64);
        }
    }
}
