//! Replaying a prediction: its stages together (coupled) or each on its
//! own (exactly as `lumos replay` replays its trace), and the outcome per
//! stage and per step.

use lumos_graph::{Graph, Step, TaskId};
use lumos_sim::{
    breakdown, simulate, simulate_with_rendezvous, step_spans, whole_span, Breakdown, Schedule,
    SimOptions,
};

use crate::couple::Job;
use crate::edits::Prediction;
use crate::error::PredictError;

impl Prediction<'_> {
    /// Replays the prediction.
    pub fn simulate(&self) -> Result<Outcome, PredictError> {
        self.simulate_job(self.job())
    }

    /// Replays `job`, built from this prediction.
    pub fn simulate_job(&self, job: Job) -> Result<Outcome, PredictError> {
        let schedule = if job.coupled {
            simulate_with_rendezvous(&job.graph, &job.rendezvous, &SimOptions::default())
                .map_err(|error| PredictError::Replay { joint: true, error })?
        } else {
            self.replay_alone(&job)?
        };
        Ok(Outcome::of(self, job, schedule))
    }

    /// Independent stages: each replayed alone (on its own window), exactly
    /// as `lumos replay` does, their schedules laid end to end as `job`
    /// numbers their tasks.
    fn replay_alone(&self, job: &Job) -> Result<Schedule, PredictError> {
        let mut start = Vec::with_capacity(job.graph.tasks.len());
        let mut end = Vec::with_capacity(job.graph.tasks.len());
        let mut bound = Vec::new();
        let mut waits = Vec::new();
        for (st, part) in self.stages.iter().zip(&job.parts) {
            let s = simulate(&st.graph, &SimOptions::default()).map_err(|error| {
                PredictError::Replay {
                    joint: false,
                    error,
                }
            })?;
            start.extend(s.start_ns);
            end.extend(s.end_ns);
            bound.extend(s.bound_by);
            waits.extend(s.waits.into_iter().map(|mut w| {
                w.task = TaskId(w.task.0 + part.start);
                w
            }));
        }
        Ok(Schedule {
            start_ns: start,
            end_ns: end,
            bound_by: bound,
            waits,
        })
    }
}

/// One stage's tasks in a joint schedule, numbered from 0.
struct StageTimes<'a> {
    schedule: &'a Schedule,
    offset: u32,
    len: usize,
}

impl lumos_sim::TaskTimes for StageTimes<'_> {
    fn task_count(&self) -> usize {
        self.len
    }
    fn start_of(&self, t: TaskId) -> i64 {
        self.schedule.start_of(TaskId(t.0 + self.offset))
    }
    fn end_of(&self, t: TaskId) -> i64 {
        self.schedule.end_of(TaskId(t.0 + self.offset))
    }
}

/// One stage's replayed result.
#[derive(Debug, Clone)]
pub struct StageOutcome {
    /// Its index in the new pipeline.
    pub stage: u32,
    /// Step times, ns.
    pub step_ns: Vec<i64>,
    /// Breakdown over the window of its steps.
    pub breakdown: Breakdown,
}

/// A replayed prediction.
pub struct Outcome {
    /// Per stage.
    pub stages: Vec<StageOutcome>,
    /// Iteration time per step: the slowest stage's.
    pub step_ns: Vec<i64>,
    /// The joint graph.
    pub job: Job,
    /// Its schedule.
    pub schedule: Schedule,
}

impl Outcome {
    fn of(p: &Prediction, job: Job, schedule: Schedule) -> Outcome {
        let mut stages = Vec::new();
        for (k, part) in job.parts.iter().enumerate() {
            // This stage's tasks and steps alone, numbered from 0, with its
            // slice of the schedule (a blocking call counts from when it was
            // issued, as in `lumos replay`).
            let off = part.start;
            let sp = job.step_parts[k].clone();
            let local = |t: TaskId| TaskId(t.0 - off);
            let sub = Graph {
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
            let times = StageTimes {
                schedule: &schedule,
                offset: off,
                len: sub.tasks.len(),
            };
            let spans = step_spans(&sub, &times, None);
            let step_ns: Vec<i64> = spans.iter().map(|s| s.end_ns - s.start_ns).collect();
            let window = if sub.steps.is_empty() {
                whole_span(&times)
            } else {
                lumos_graph::Span {
                    start_ns: spans[0].start_ns,
                    end_ns: spans.last().map_or(0, |s| s.end_ns),
                }
            };
            stages.push(StageOutcome {
                stage: p.stages[k].stage,
                step_ns,
                breakdown: breakdown(&sub, &times, window),
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
        }
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
        let out = base.identity().simulate().unwrap();
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
    fn a_failed_replay_says_whether_stages_ran_together() {
        let base = baseline("gpt-tiny", None, [1, 2, 1, 2]);
        let mut p = base.identity();
        // A cycle: the first task of a thread waits for the one after it.
        let g = &mut p.stages[1].graph;
        let thread = g.processors.iter().find(|q| !q.is_stream()).unwrap();
        let (a, b) = (thread.tasks[0], thread.tasks[1]);
        g.edges.push(Edge {
            from: b,
            to: a,
            kind: DepKind::IntraThread,
            anchor: Anchor::End,
            latency_ns: 0,
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
