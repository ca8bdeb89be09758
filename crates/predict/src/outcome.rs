//! Replaying a prediction: its stages together (coupled) or each on its
//! own (exactly as `lumos replay` replays its trace), and the outcome per
//! stage and per step.

use std::borrow::Cow;
use std::sync::Arc;

use lumos_graph::{Graph, Step, TaskId};
use lumos_sim::{
    breakdown, simulate, simulate_with_rendezvous, step_spans, window_span, Breakdown, Schedule,
    SimOptions,
};

use crate::couple::Job;
use crate::edits::Prediction;
use crate::error::PredictError;
use crate::queue::LaunchQueue;

impl Prediction<'_> {
    /// Replays the prediction.
    pub fn simulate(&self) -> Result<Outcome<'_>, PredictError> {
        self.simulate_job(self.job())
    }

    /// Replays `job`, built from this prediction, with the launch queue of
    /// [`LaunchQueue::of`] the traced inputs. Should the queue's waits make
    /// the replay stuck (a launch order the graph cannot honour), it is
    /// replayed without them and [`Outcome::launch_queue`] is `None`.
    /// Either replay stops once the baseline's [`Baseline::cancel`] flag
    /// is set (a [`PredictError::Replay`] of
    /// [`lumos_sim::SimError::Cancelled`]).
    ///
    /// [`Baseline::cancel`]: crate::Baseline::cancel
    pub fn simulate_job<'j>(&self, job: Job<'j>) -> Result<Outcome<'j>, PredictError> {
        let queue = LaunchQueue::of(&self.base.inputs);
        let plain = self.base.sim_options();
        let limited = plain.clone().launch_queue(queue.depth);
        match self.replay(&job, &limited) {
            Ok(schedule) => Ok(Outcome::of(self, job, schedule, Some(queue))),
            Err(PredictError::Replay {
                error: lumos_sim::SimError::Stuck { .. },
                ..
            }) => {
                let schedule = self.replay(&job, &plain)?;
                Ok(Outcome::of(self, job, schedule, None))
            }
            Err(e) => Err(e),
        }
    }

    fn replay(&self, job: &Job<'_>, opts: &SimOptions) -> Result<Schedule, PredictError> {
        if job.coupled {
            let opts = opts.clone().durations(job.durations.clone());
            simulate_with_rendezvous(&job.graph, &job.rendezvous, &opts)
                .map_err(|error| PredictError::Replay { joint: true, error })
        } else {
            self.replay_alone(job, opts)
        }
    }

    /// Independent stages: each replayed alone (on its own window), exactly
    /// as `lumos replay` does, their schedules laid end to end as `job`
    /// numbers their tasks. Each runs for its stage's own durations, which
    /// `job.durations` repeats in the same order (only coupling, which
    /// stages replayed alone do not have, changes the job's).
    fn replay_alone(&self, job: &Job<'_>, opts: &SimOptions) -> Result<Schedule, PredictError> {
        let mut start = Vec::with_capacity(job.graph.tasks.len());
        let mut end = Vec::with_capacity(job.graph.tasks.len());
        let mut bound = Vec::new();
        let mut waits = Vec::new();
        for (st, part) in self.stages.iter().zip(&job.parts) {
            let opts = opts.clone().durations(st.durations.clone());
            let s = simulate(&st.graph, &opts).map_err(|error| PredictError::Replay {
                joint: false,
                error,
            })?;
            start.extend(s.start_ns);
            end.extend(s.end_ns);
            bound.extend(s.bound_by);
            waits.extend(s.waits.into_iter().map(|mut w| {
                w.task = TaskId(w.task.0 + part.start);
                w
            }));
        }
        Ok(Schedule::new(start, end, bound, waits))
    }
}

/// Deviation from the steady-state step that counts as noise however
/// steady the measured run was.
const STEADY_TOLERANCE: f64 = 0.05;

/// Whether a prediction's steps repeat, and the step they settle to: see
/// [`Outcome::steadiness`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Steadiness {
    /// The step a longer run repeats, ns: the larger of the median period
    /// between consecutive step ends and the median period between
    /// consecutive step starts (see [`Outcome::steadiness`]).
    pub steady_step_ns: i64,
    /// The same for the traced graphs' replay, ns (0 when it has fewer
    /// than three steps): what the steady-state step compares with.
    pub replayed_steady_step_ns: i64,
    /// The largest deviation of a predicted step from the median step, as
    /// a fraction of the steady-state step: in a steady loop every step
    /// spans the same time, however far its GPU work runs past its CPU
    /// work.
    pub worst_deviation: f64,
    /// The same deviation in the traced graphs' replay (its steps from its
    /// own median step, over its own steady-state step): the noise of the
    /// measured run, a fraction; `None` when the replay has no steady-state
    /// step (fewer than three steps, or no positive period), where 0 would
    /// read as a replay without noise.
    pub noise: Option<f64>,
    /// True when `worst_deviation` exceeds twice the noise and 5%: the
    /// predicted steps grow or shrink (the GPU falls behind its CPU, a
    /// backlog drains), so their mean is not what a longer run would show.
    pub drifting: bool,
}

/// The median of `v` (the lower middle one; 0 when empty).
fn median(v: &[i64]) -> i64 {
    let mut s = v.to_vec();
    s.sort_unstable();
    s.get(s.len().saturating_sub(1) / 2).copied().unwrap_or(0)
}

/// One stage's replayed result.
#[derive(Debug, Clone)]
pub struct StageOutcome {
    /// Its index in the new pipeline.
    pub stage: u32,
    /// Step times, ns.
    pub step_ns: Vec<i64>,
    /// When each step ended, ns on the stage's replay clock.
    pub step_end_ns: Vec<i64>,
    /// When each step started (its first CPU task), ns on the same clock.
    pub step_start_ns: Vec<i64>,
    /// Each step's GPU work, ns, from [`Job::step_work_ns`]: the summed
    /// durations the replay ran its GPU tasks for, before any wait (one
    /// entry, every GPU task of the stage, without steps). A prediction's
    /// change of it against the traced replay's, beside the step's change,
    /// tells work that lengthened the step from work the step hid (it ran
    /// in slack: what set the step's end did not wait for it).
    pub step_gpu_ns: Vec<i64>,
    /// Breakdown over its whole window ([`window_span`]: every task and
    /// every step), as `lumos replay` states a rank's.
    pub breakdown: Breakdown,
}

/// A replayed prediction.
pub struct Outcome<'p> {
    /// Per stage.
    pub stages: Vec<StageOutcome>,
    /// Iteration time per step: the slowest stage's.
    pub step_ns: Vec<i64>,
    /// The joint graph.
    pub job: Job<'p>,
    /// Its schedule.
    pub schedule: Schedule,
    /// The launch queue it was replayed with; `None` when the queue's
    /// waits could not be honoured and it was replayed without a limit.
    pub launch_queue: Option<LaunchQueue>,
}

impl<'j> Outcome<'j> {
    fn of(
        p: &Prediction,
        job: Job<'j>,
        schedule: Schedule,
        launch_queue: Option<LaunchQueue>,
    ) -> Outcome<'j> {
        let work = job.step_work_ns();
        let mut stages = Vec::new();
        for (k, part) in job.parts.iter().enumerate() {
            // This stage's tasks and steps alone, numbered from 0, with its
            // slice of the schedule (a blocking call counts from when it was
            // issued, as in `lumos replay`).
            let off = part.start;
            let sp = job.step_parts[k].clone();
            let local = |t: TaskId| TaskId(t.0 - off);
            // The stage of a one-stage job is read in place: what is read
            // of it here is its tasks and steps, which a copy would repeat.
            let whole = part.start == 0
                && part.end as usize == job.graph.tasks.len()
                && sp == (0..job.graph.steps.len() as u32);
            let copy;
            let sub = if whole {
                &job.graph
            } else {
                copy = Graph {
                    tasks: job.graph.tasks[part.start as usize..part.end as usize].to_vec(),
                    steps: job.graph.steps[sp.start as usize..sp.end as usize]
                        .iter()
                        .map(|st| Step {
                            first_task: local(st.first_task),
                            last_task: local(st.last_task),
                            tasks: st.tasks.iter().map(|&t| local(t)).collect(),
                            ..st.clone()
                        })
                        .collect(),
                    ..Graph::default()
                };
                &copy
            };
            let times = lumos_sim::ScheduleSlice {
                schedule: &schedule,
                offset: off,
                len: sub.tasks.len(),
            };
            let spans = step_spans(sub, &times, None);
            let step_ns: Vec<i64> = spans.iter().map(|s| s.end_ns - s.start_ns).collect();
            // The window `lumos replay` states for a rank, with the work
            // before the first step and after the last: the steps' hull
            // alone (first start to last end) made the recsys rank's
            // identity prediction 465.171 ms against its replay's 465.269.
            let window = window_span(&times, &spans);
            stages.push(StageOutcome {
                stage: p.stages[k].stage,
                step_ns,
                step_end_ns: spans.iter().map(|s| s.end_ns).collect(),
                step_start_ns: spans.iter().map(|s| s.start_ns).collect(),
                step_gpu_ns: work[k].clone(),
                breakdown: breakdown(sub, &times, window),
            });
        }
        let nsteps = stages.iter().map(|s| s.step_ns.len()).max().unwrap_or(0);
        let step_ns = (0..nsteps)
            .map(|i| {
                stages
                    .iter()
                    .filter_map(|s| s.step_ns.get(i))
                    .copied()
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        Outcome {
            stages,
            step_ns,
            job,
            schedule,
            launch_queue,
        }
    }

    /// The outcome with its joint graph its own (a copy where it borrowed
    /// the prediction's one stage), to keep beyond the prediction.
    pub fn into_owned(self) -> Outcome<'static> {
        Outcome {
            job: self.job.into_owned(),
            stages: self.stages,
            step_ns: self.step_ns,
            schedule: self.schedule,
            launch_queue: self.launch_queue,
        }
    }

    /// The outcome's steps and stages alone, which is what comparing
    /// another outcome with it reads ([`Outcome::steadiness`], a report's
    /// replayed column). The joint graph, the schedule and the job's parts
    /// and per-task vectors are let go (they are empty, so nothing can
    /// slice the schedule by a part), and with them what they borrowed:
    /// the traced replay of a large rank is that much less beside the
    /// prediction's.
    pub fn steps_only(self) -> Outcome<'static> {
        let job = Job {
            graph: Cow::Owned(Graph::default()),
            rendezvous: Vec::new(),
            parts: Vec::new(),
            step_parts: Vec::new(),
            durations: Arc::from([]),
            source: Cow::Owned(Vec::new()),
            origin: Cow::Owned(Vec::new()),
            coupled: self.job.coupled,
            stage_of_part: Vec::new(),
        };
        Outcome {
            job,
            stages: self.stages,
            step_ns: self.step_ns,
            schedule: Schedule::default(),
            launch_queue: self.launch_queue,
        }
    }

    /// Whether the predicted steps are steady, judged against `replayed`
    /// (the traced graphs' replay: its own spread is the noise).
    ///
    /// A step's length runs from its first CPU task to its last GPU task,
    /// so when the GPU falls behind, the first steps lengthen while the
    /// launch queue fills and the last one gathers the queue's backlog;
    /// when a GPU that lagged its CPU at the start of the trace (work
    /// launched before the capture) catches up, the steps shorten. What a
    /// steady loop repeats is the period between consecutive steps, and
    /// in a steady loop the steps start as often as they end: the
    /// steady-state step is the larger of the median period between step
    /// ends and the median period between step starts. The ends alone
    /// come closer together than the CPU can issue steps while a backlog
    /// drains (the MI300X DDP trace at DP 1: 7.8 ms between ends, 16 ms
    /// between starts); the starts alone, closer than the GPU can finish
    /// them while a launch queue fills. `None` with fewer than three
    /// steps.
    pub fn steadiness(&self, replayed: &Outcome<'_>) -> Option<Steadiness> {
        let steady_step_ns = self.steady_step_ns()?;
        // Each step's span from the median span: constant in a steady
        // loop, whatever the overlap of a step's GPU work with the next
        // step's CPU work.
        let spread = |v: &[i64], period: i64| {
            let mid = median(v);
            v.iter()
                .map(|&x| (x - mid).abs() as f64 / period as f64)
                .fold(0.0, f64::max)
        };
        let worst = spread(&self.step_ns, steady_step_ns);
        // The same measure on the replay: steps that vary in the measured
        // run are not drift.
        let replayed_steady = replayed.steady_step_ns().unwrap_or(0);
        let noise = (replayed_steady > 0).then(|| spread(&replayed.step_ns, replayed_steady));
        Some(Steadiness {
            steady_step_ns,
            replayed_steady_step_ns: replayed_steady,
            worst_deviation: worst,
            noise,
            // Without a measured noise, the tolerance alone.
            drifting: worst > (2.0 * noise.unwrap_or(0.0)).max(STEADY_TOLERANCE),
        })
    }

    /// The steady-state step ([`Outcome::steadiness`]), or `None` with
    /// fewer than three steps or no positive period.
    fn steady_step_ns(&self) -> Option<i64> {
        let ends = median(&self.step_periods(|s| &s.step_end_ns)?);
        let starts = median(&self.step_periods(|s| &s.step_start_ns)?);
        Some(ends.max(starts)).filter(|&p| p > 0)
    }

    /// The time between consecutive step ends (or starts, as `at` gives
    /// each stage's), the slowest stage's, or `None` with fewer than
    /// three steps.
    fn step_periods(&self, at: impl Fn(&StageOutcome) -> &Vec<i64>) -> Option<Vec<i64>> {
        let periods: Vec<i64> = (1..self.step_ns.len())
            .map(|k| {
                self.stages
                    .iter()
                    .filter_map(|s| Some(at(s).get(k)? - at(s).get(k - 1)?))
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        (periods.len() >= 2).then_some(periods)
    }

    /// A note when the mean step and the steady-state step move in
    /// opposite directions from the replay's (by 0.1% or more each),
    /// saying why: a step's span runs from its first CPU task to its last
    /// GPU task, so a CPU that waits less for its GPU starts each step
    /// earlier against the GPU work still running, and the spans grow
    /// while steps repeat faster (or the other way round). `a100-recsys`
    /// at DP 1: its blocking copy at each step's end no longer waits for
    /// the gradient all-reduces, the CPU starts steps up to 13 ms earlier,
    /// the compute stream still bounds the GPU, so the mean span is 0.6%
    /// longer and the steady-state step 0.7% shorter. `None` with fewer
    /// than three steps either side, or when they agree.
    pub fn span_note(&self, replayed: &Outcome<'_>) -> Option<String> {
        let s = self.steadiness(replayed)?;
        let (mean, mean_r) = (self.mean_step_ns(), replayed.mean_step_ns());
        let (steady, steady_r) = (s.steady_step_ns as f64, s.replayed_steady_step_ns as f64);
        if mean_r <= 0.0 || steady_r <= 0.0 {
            return None;
        }
        let (dm, ds) = (mean / mean_r - 1.0, steady / steady_r - 1.0);
        const SMALL: f64 = 0.001;
        if dm.abs() < SMALL || ds.abs() < SMALL || (dm > 0.0) == (ds > 0.0) {
            return None;
        }
        // How far the steps' starts and ends moved, on average, against
        // the replay's: per step, the largest move over the stages.
        let shift = |at: fn(&StageOutcome) -> &Vec<i64>| -> Option<f64> {
            let n = self.step_ns.len();
            if n == 0 || self.stages.len() != replayed.stages.len() {
                return None;
            }
            let per_step = (0..n).map(|k| {
                (self.stages.iter().zip(&replayed.stages))
                    .filter_map(|(p, r)| Some(at(p).get(k)? - at(r).get(k)?))
                    .max()
            });
            let v: Option<Vec<i64>> = per_step.collect();
            v.map(|v| v.iter().sum::<i64>() as f64 / v.len() as f64 / 1e6)
        };
        let pct = |x: f64| format!("{:+.1}%", x * 100.0);
        let head = format!(
            "mean step {} ({:.3} against {:.3} ms replayed) but steady-state step {} ({:.3} \
             against {:.3} ms)",
            pct(dm),
            mean / 1e6,
            mean_r / 1e6,
            pct(ds),
            steady / 1e6,
            steady_r / 1e6,
        );
        let (start, end) = (shift(|s| &s.step_start_ns), shift(|s| &s.step_end_ns));
        // The CPU running further ahead of its GPU shows as steps that
        // start earlier than they end (the other way round when it runs
        // less far ahead); only then is that the explanation given.
        let why =
            match (start, end) {
                (Some(a), Some(b)) if (dm > 0.0 && a < b) || (dm < 0.0 && a > b) => {
                    let way = |x: f64| {
                        format!(
                            "{:.3} ms {}",
                            x.abs(),
                            if x < 0.0 { "earlier" } else { "later" }
                        )
                    };
                    format!(
                    "a step spans from its first CPU task to its last GPU task, and the CPU now \
                     runs {} its GPU (on average its steps start {} and end {} than replayed), \
                     so each step {} while steps repeat {}",
                    if dm > 0.0 {
                        "further ahead of"
                    } else {
                        "less far ahead of"
                    },
                    way(a),
                    way(b),
                    if dm > 0.0 { "spans longer" } else { "spans less" },
                    if dm > 0.0 { "faster" } else { "slower" },
                )
                }
                _ => "a step spans from its first CPU task to its last GPU task, and the steps' \
                  spans and the period they repeat at moved apart"
                    .to_string(),
            };
        Some(format!(
            "{head}: {why}; the steady-state step is what a longer run repeats"
        ))
    }

    /// Mean step time over steps, ns.
    pub fn mean_step_ns(&self) -> f64 {
        if self.step_ns.is_empty() {
            0.0
        } else {
            self.step_ns.iter().sum::<i64>() as f64 / self.step_ns.len() as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use lumos_graph::{Anchor, DepKind, Edge};

    use super::*;
    use crate::testutil::baseline;

    #[test]
    fn the_outcome_is_each_stage_s_replay() {
        let base = baseline("gpt-tiny", None, [1, 2, 1, 2]);
        let identity = base.identity();
        let out = identity.simulate().unwrap();
        for (k, inp) in base.inputs.iter().enumerate() {
            let s = simulate(&inp.graph, &SimOptions::default()).unwrap();
            let want: Vec<i64> = step_spans(&inp.graph, &s, None)
                .iter()
                .map(|x| x.end_ns - x.start_ns)
                .collect();
            assert_eq!(out.stages[k].step_ns, want);
            assert_eq!(out.stages[k].stage, base.stages[k]);
        }
        // The iteration is the slowest stage's.
        for (i, &t) in out.step_ns.iter().enumerate() {
            assert_eq!(t, out.stages.iter().map(|s| s.step_ns[i]).max().unwrap());
        }
        let mean = out.step_ns.iter().sum::<i64>() as f64 / out.step_ns.len() as f64;
        assert_eq!(out.mean_step_ns(), mean);
    }

    #[test]
    fn steps_only_keeps_what_a_comparison_reads() {
        let base = baseline("gpt-tiny", None, [1, 2, 1, 4]);
        let id = base.identity();
        let p = id
            .with_kernel_scale("class:gemm=0.5".parse().unwrap())
            .unwrap();
        let out = p.simulate().unwrap();
        let (full, kept) = (id.simulate().unwrap(), id.simulate().unwrap().steps_only());
        assert!(kept.job.graph.tasks.is_empty() && kept.schedule.start_ns.is_empty());
        assert!(kept.job.parts.is_empty() && kept.job.durations.is_empty());
        assert_eq!((&kept.step_ns, kept.stages.len()), (&full.step_ns, 2));
        for (a, b) in kept.stages.iter().zip(&full.stages) {
            assert_eq!((a.stage, &a.step_ns), (b.stage, &b.step_ns));
            assert_eq!(a.step_end_ns, b.step_end_ns);
            assert_eq!(a.step_start_ns, b.step_start_ns);
        }
        assert_eq!(out.steadiness(&kept), out.steadiness(&full));
    }

    /// A replay with too few steps for a steady-state step has no noise
    /// to measure: `None`, not the 0 (a replay without noise) it was; the
    /// drift is then judged against the tolerance alone.
    #[test]
    fn a_replay_without_a_steady_step_has_no_noise() {
        let mut cfg = lumos_synth::SynthConfig::new(
            lumos_synth::ModelPreset::preset("gpt-tiny").unwrap(),
            lumos_synth::Parallelism::new(1, 1, 1, 2),
            lumos_models::GpuSpec::h100(),
        );
        cfg.steps = 4;
        let text = lumos_synth::synthesize_rank(&cfg, 0).unwrap();
        let trace = lumos_trace::read_bytes(std::path::Path::new("t.json"), text.as_bytes());
        let input = crate::testutil::input(&trace.unwrap(), "rank0");
        let base = crate::Baseline::new(vec![input]).unwrap();
        let id = base.identity();
        let out = id.simulate().unwrap();
        let full = out.steadiness(&out).unwrap();
        assert!(full.noise.is_some(), "{full:?}");
        let mut short = id.simulate().unwrap().steps_only();
        short.step_ns.truncate(2);
        for s in &mut short.stages {
            s.step_ns.truncate(2);
            s.step_start_ns.truncate(2);
            s.step_end_ns.truncate(2);
        }
        let s = out.steadiness(&short).unwrap();
        assert_eq!((s.replayed_steady_step_ns, s.noise), (0, None), "{s:?}");
        assert_eq!(s.worst_deviation, full.worst_deviation);
        assert_eq!(s.drifting, s.worst_deviation > STEADY_TOLERANCE);
    }

    #[test]
    fn a_set_stop_flag_stops_every_replay_of_the_baseline_s_predictions() {
        let flag = lumos_sim::Cancel::new();
        let base = baseline("gpt-tiny", None, [1, 2, 1, 2]).stoppable(flag.clone());
        let p = base
            .identity()
            .with_kernel_scale("class:gemm=0.5".parse().unwrap())
            .unwrap();
        // Not set: the replays run to their end, stages together or apart.
        for coupled in [false, true] {
            assert!(p.simulate_job(p.job_coupled(coupled)).is_ok());
        }
        assert!(!flag.stopped_work());
        flag.cancel();
        for (pred, coupled) in [(&base.identity(), true), (&p, false), (&p, true)] {
            let Err(e) = pred.simulate_job(pred.job_coupled(coupled)) else {
                panic!("a replay of a stopped baseline ran to its end (coupled: {coupled})")
            };
            assert!(
                matches!(
                    e,
                    PredictError::Replay {
                        error: lumos_sim::SimError::Cancelled,
                        ..
                    }
                ),
                "{e}"
            );
        }
        assert!(flag.stopped_work());
    }

    #[test]
    fn a_failed_replay_says_whether_stages_ran_together() {
        let base = baseline("gpt-tiny", None, [1, 2, 1, 2]);
        let mut p = base.identity();
        // A cycle: the first task of a thread waits for the one after it.
        let g = p.stages[1].graph.to_mut();
        let thread = g.processors.iter().find(|q| !q.is_stream()).unwrap();
        let (a, b) = (thread.tasks[0], thread.tasks[1]);
        g.edges.push(Edge {
            from: b,
            to: a,
            kind: DepKind::IntraThread,
            anchor: Anchor::End,
            latency_ns: 0,
            inferred: false,
        });
        let Err(e) = p.simulate_job(p.job_coupled(false)) else {
            panic!("a cycle replays")
        };
        assert!(matches!(e, PredictError::Replay { joint: false, .. }));
        assert!(!e
            .to_string()
            .starts_with("replay of the predicted graph failed"));
        let Err(e) = p.simulate_job(p.job_coupled(true)) else {
            panic!("a cycle replays")
        };
        assert!(matches!(e, PredictError::Replay { joint: true, .. }));
        assert!(e
            .to_string()
            .starts_with("replay of the predicted graph failed: "));
    }
}
