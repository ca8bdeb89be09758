//! Times the stages of a pipeline together (a lockstep plan), so that the
//! ranks of a synthesized job agree about each other: a receive ends when
//! the matching send in the peer's own timeline started plus the
//! transfer, and the gradient-norm all-reduce waits for the stage that
//! reaches it last, exactly as a joint replay of the written traces does.
//!
//! One "column" is the ranks of every stage at one tensor- and
//! data-parallel index. Every rank of a stage draws the same noise, so all
//! columns share one timeline and their collectives start together; a
//! column is timed by running its stages' generators pass by pass, each
//! pass as soon as the transfer it receives has been issued (the 1F1B
//! orders never deadlock), and the barrier from a probe of each stage run
//! ahead to it.

use crate::config::{RankCoord, SynthConfig};
use crate::megatron::{PassNeed, Rank};
use crate::SynthError;

/// Runs `cfg.steps` iterations of the column at tensor index `tp` and
/// data index `dp`; `emit[stage]` says which stages write their trace,
/// and `setup` runs on each rank before anything happens (to write the
/// trace's header).
pub(crate) fn run_column<'c>(
    cfg: &'c SynthConfig,
    tp: usize,
    dp: usize,
    emit: &[bool],
    setup: &dyn Fn(&mut Rank<'c>),
) -> Result<Vec<Rank<'c>>, SynthError> {
    let p = cfg.parallel;
    let mut ranks: Vec<Rank<'c>> = (0..p.pp)
        .map(|s| {
            let rank = p.rank_of(RankCoord { tp, dp, pp: s });
            let mut r = Rank::new(cfg, rank, emit.get(s).copied().unwrap_or(false), cfg.noise);
            setup(&mut r);
            // The profiler starts recording a few milliseconds before the
            // first profiled step; stages do not start in lockstep.
            r.g.t = 5_000_000 + r.g.cpu.between(0, 200_000);
            r
        })
        .collect();
    for i in 0..cfg.steps {
        for r in &mut ranks {
            r.begin_iteration(cfg.first_step + i);
        }
        run_passes(&mut ranks)?;
        for r in &mut ranks {
            r.before_barrier();
        }
        let barrier = ranks
            .iter()
            .map(|r| r.probe().barrier_collective(0))
            .max()
            .unwrap_or(0);
        for r in &mut ranks {
            r.finish_iteration(barrier);
        }
    }
    Ok(ranks)
}

/// Runs every stage's pipeline passes, each as soon as what it receives
/// has been sent.
fn run_passes(ranks: &mut [Rank<'_>]) -> Result<(), SynthError> {
    loop {
        let mut moved = false;
        let mut waiting = false;
        for s in 0..ranks.len() {
            loop {
                let ready = match ranks[s].next_need() {
                    PassNeed::Done => break,
                    PassNeed::Nothing => Some(0),
                    PassNeed::Send {
                        stage,
                        forward,
                        chunk,
                        mb,
                    } => ranks[stage].sent(forward, chunk, mb),
                };
                let Some(t) = ready else {
                    waiting = true;
                    break;
                };
                ranks[s].run_pass(t);
                moved = true;
            }
        }
        if !waiting {
            return Ok(());
        }
        if !moved {
            return Err(SynthError::InvalidConfig(
                "the pipeline schedule deadlocks".into(),
            ));
        }
    }
}

/// When each stage's `ProfilerStep` annotations begin and end, in ns on
/// the trace's clock: what the written traces show, read from the
/// synthesizer's own timing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepTimes {
    /// `stages[s][i]`: `(start, end)` of step `i` on stage `s`.
    pub stages: Vec<Vec<(i64, i64)>>,
}

impl StepTimes {
    /// The slowest stage's span of step `i` (0-based), ns.
    pub fn step_ns(&self, i: usize) -> i64 {
        self.stages
            .iter()
            .filter_map(|st| st.get(i).map(|&(a, b)| b - a))
            .max()
            .unwrap_or(0)
    }

    /// The last step's span on the slowest stage, ns: the synthesized
    /// iteration time (the first step differs, having no previous step
    /// whose parameter all-gathers it waits for).
    pub fn iteration_ns(&self) -> i64 {
        let n = self.stages.iter().map(Vec::len).min().unwrap_or(0);
        n.checked_sub(1).map_or(0, |i| self.step_ns(i))
    }
}

/// The step times of the job `cfg` describes, from timing one column of
/// ranks without writing any trace: the same timing [`crate::write_job`]
/// writes, so the spans equal the `ProfilerStep` annotations of its files.
pub fn step_times(cfg: &SynthConfig) -> Result<StepTimes, SynthError> {
    cfg.validate()?;
    let ranks = run_column(cfg, 0, 0, &[], &|_| {})?;
    Ok(StepTimes {
        stages: ranks.into_iter().map(|r| r.steps).collect(),
    })
}

/// GPU time of one transformer layer of `cfg`'s model on one rank, ns:
/// forward, and backward with its recomputation (Korthikanti et al.'s
/// Table 4 measures these), without noise.
pub fn layer_times(cfg: &SynthConfig) -> Result<(i64, i64), SynthError> {
    cfg.validate()?;
    let mut quiet = cfg.clone();
    quiet.noise = 0.0;
    let mut r = Rank::new(&quiet, 0, false, 0.0);
    Ok(r.time_layer())
}
