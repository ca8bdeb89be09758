//! Records of a rank's communication tasks, its build report and its
//! program (what representatives need).

use std::collections::BTreeMap;

use lumos_graph::{BuildReport, CommPattern, CommTask, CommTiming, TaskId};
use serde::{Deserialize, Serialize};

use super::codes::{dep_kind, dep_kind_of, rule, rule_of, task_kind, task_kind_of};
use super::Bad;

#[derive(Serialize, Deserialize)]
pub(crate) struct CommRec {
    task: u32,
    collective: u32,
    /// 0: group; 1: send to `peer`; 2: receive from `peer`.
    pattern: u8,
    peer: i64,
    group: Option<u32>,
    issue_ns: i64,
}

impl CommRec {
    pub(crate) fn of(c: &CommTask) -> CommRec {
        let CommTask {
            task,
            collective,
            pattern,
            group,
            issue_ns,
        } = *c;
        let (pattern, peer) = match pattern {
            CommPattern::Group => (0, 0),
            CommPattern::Send { peer } => (1, peer),
            CommPattern::Recv { peer } => (2, peer),
        };
        CommRec {
            task: task.0,
            collective,
            pattern,
            peer,
            group,
            issue_ns,
        }
    }

    /// The task, its ids checked against the rank's `tasks`,
    /// `collectives` and `groups` counts.
    pub(crate) fn into_comm(
        self,
        tasks: usize,
        collectives: usize,
        groups: usize,
    ) -> Result<CommTask, Bad> {
        let pattern = match self.pattern {
            0 => CommPattern::Group,
            1 => CommPattern::Send { peer: self.peer },
            2 => CommPattern::Recv { peer: self.peer },
            k => return Err(Bad(format!("unknown communication pattern {k}"))),
        };
        let below = |v: u32, n: usize, what: &str| {
            if (v as usize) < n {
                Ok(v)
            } else {
                Err(Bad(format!("{what} {v} out of range (of {n})")))
            }
        };
        Ok(CommTask {
            task: TaskId(below(self.task, tasks, "task id")?),
            collective: below(self.collective, collectives, "collective id")?,
            pattern,
            group: self
                .group
                .map(|g| below(g, groups, "process group id"))
                .transpose()?,
            issue_ns: self.issue_ns,
        })
    }
}

#[derive(Serialize, Deserialize)]
pub(crate) struct ReportRec {
    tasks_by_kind: Vec<(u8, u64)>,
    edges_by_kind: Vec<(u8, u64)>,
    inferred: Vec<(u8, u8, u64)>,
    threads: u64,
    streams: u64,
    events_on_left_out_threads: u64,
    events_on_left_out_streams: u64,
    comm_by_args: u64,
    comm_by_name: u64,
    cuda_sync_events: u64,
    gpu_without_launch: u64,
    launches_without_gpu_task: u64,
    released_gpu_tasks: u64,
    repeated_correlations: u64,
    partial_overlaps: u64,
    clipped_gpu_overlaps: u64,
    polling_loops: u64,
    split_calls: u64,
    same_stream_waits: u64,
    rejected_waits: u64,
    unresolved_syncs: u64,
    unresolved_waits: u64,
    idle_stream_waits: u64,
    stream_order_violations: u64,
    cpu_holes: u64,
    longest_cpu_hole_ns: i64,
    correlated_calls: u64,
    rejected_cycles: Vec<(u8, u64)>,
    typical_launch_latency_ns: i64,
    typical_stream_gap_ns: i64,
    warnings: Vec<String>,
    edge_rules: Vec<(u32, u8)>,
    runtime_dep_rules: Vec<u8>,
}

impl ReportRec {
    pub(crate) fn of(r: &BuildReport) -> ReportRec {
        // Every field by name: a field added to the report does not
        // compile here until the format stores it.
        let BuildReport {
            tasks_by_kind,
            edges_by_kind,
            inferred,
            threads,
            streams,
            events_on_left_out_threads,
            events_on_left_out_streams,
            comm_by_args,
            comm_by_name,
            cuda_sync_events,
            gpu_without_launch,
            launches_without_gpu_task,
            released_gpu_tasks,
            repeated_correlations,
            partial_overlaps,
            clipped_gpu_overlaps,
            polling_loops,
            split_calls,
            same_stream_waits,
            rejected_waits,
            unresolved_syncs,
            unresolved_waits,
            idle_stream_waits,
            stream_order_violations,
            cpu_holes,
            longest_cpu_hole_ns,
            correlated_calls,
            rejected_cycles,
            // Derived from the stored graph when read (`into_parts`), so
            // not stored: files of this format hold what they need.
            launched_early: _,
            longest_launch_lead_ns: _,
            shortest_launch_delay_ns: _,
            shared_launches: _,
            tasks_of_shared_launches: _,
            syncs_returned_early: _,
            longest_sync_lead_ns: _,
            typical_launch_latency_ns,
            typical_stream_gap_ns,
            warnings,
            edge_rules,
            runtime_dep_rules,
        } = r;
        ReportRec {
            tasks_by_kind: tasks_by_kind
                .iter()
                .map(|(&k, &n)| (task_kind(k), n))
                .collect(),
            edges_by_kind: edges_by_kind
                .iter()
                .map(|(&k, &n)| (dep_kind(k), n))
                .collect(),
            inferred: inferred
                .iter()
                .map(|(&(k, r), &n)| (dep_kind(k), rule(r), n))
                .collect(),
            threads: *threads,
            streams: *streams,
            events_on_left_out_threads: *events_on_left_out_threads,
            events_on_left_out_streams: *events_on_left_out_streams,
            comm_by_args: *comm_by_args,
            comm_by_name: *comm_by_name,
            cuda_sync_events: *cuda_sync_events,
            gpu_without_launch: *gpu_without_launch,
            launches_without_gpu_task: *launches_without_gpu_task,
            released_gpu_tasks: *released_gpu_tasks,
            repeated_correlations: *repeated_correlations,
            partial_overlaps: *partial_overlaps,
            clipped_gpu_overlaps: *clipped_gpu_overlaps,
            polling_loops: *polling_loops,
            split_calls: *split_calls,
            same_stream_waits: *same_stream_waits,
            rejected_waits: *rejected_waits,
            unresolved_syncs: *unresolved_syncs,
            unresolved_waits: *unresolved_waits,
            idle_stream_waits: *idle_stream_waits,
            stream_order_violations: *stream_order_violations,
            cpu_holes: *cpu_holes,
            longest_cpu_hole_ns: *longest_cpu_hole_ns,
            correlated_calls: *correlated_calls,
            rejected_cycles: rejected_cycles
                .iter()
                .map(|(&k, &n)| (dep_kind(k), n))
                .collect(),
            typical_launch_latency_ns: *typical_launch_latency_ns,
            typical_stream_gap_ns: *typical_stream_gap_ns,
            warnings: warnings.clone(),
            edge_rules: edge_rules.iter().map(|&(e, r)| (e, rule(r))).collect(),
            runtime_dep_rules: runtime_dep_rules.iter().map(|&r| rule(r)).collect(),
        }
    }

    pub(crate) fn into_report(self) -> Result<BuildReport, Bad> {
        Ok(BuildReport {
            tasks_by_kind: by(self.tasks_by_kind, task_kind_of)?,
            edges_by_kind: by(self.edges_by_kind, dep_kind_of)?,
            inferred: self
                .inferred
                .into_iter()
                .map(|(k, r, n)| Ok(((dep_kind_of(k)?, rule_of(r)?), n)))
                .collect::<Result<_, Bad>>()?,
            threads: self.threads,
            streams: self.streams,
            events_on_left_out_threads: self.events_on_left_out_threads,
            events_on_left_out_streams: self.events_on_left_out_streams,
            comm_by_args: self.comm_by_args,
            comm_by_name: self.comm_by_name,
            cuda_sync_events: self.cuda_sync_events,
            gpu_without_launch: self.gpu_without_launch,
            launches_without_gpu_task: self.launches_without_gpu_task,
            released_gpu_tasks: self.released_gpu_tasks,
            repeated_correlations: self.repeated_correlations,
            partial_overlaps: self.partial_overlaps,
            clipped_gpu_overlaps: self.clipped_gpu_overlaps,
            polling_loops: self.polling_loops,
            split_calls: self.split_calls,
            same_stream_waits: self.same_stream_waits,
            rejected_waits: self.rejected_waits,
            unresolved_syncs: self.unresolved_syncs,
            unresolved_waits: self.unresolved_waits,
            idle_stream_waits: self.idle_stream_waits,
            stream_order_violations: self.stream_order_violations,
            cpu_holes: self.cpu_holes,
            longest_cpu_hole_ns: self.longest_cpu_hole_ns,
            correlated_calls: self.correlated_calls,
            rejected_cycles: by(self.rejected_cycles, dep_kind_of)?,
            // Not stored: `into_parts` derives them from the graph.
            launched_early: 0,
            longest_launch_lead_ns: 0,
            shortest_launch_delay_ns: 0,
            shared_launches: 0,
            tasks_of_shared_launches: 0,
            syncs_returned_early: 0,
            longest_sync_lead_ns: 0,
            typical_launch_latency_ns: self.typical_launch_latency_ns,
            typical_stream_gap_ns: self.typical_stream_gap_ns,
            warnings: self.warnings,
            edge_rules: self
                .edge_rules
                .into_iter()
                .map(|(e, r)| Ok((e, rule_of(r)?)))
                .collect::<Result<_, Bad>>()?,
            runtime_dep_rules: self
                .runtime_dep_rules
                .into_iter()
                .map(rule_of)
                .collect::<Result<_, Bad>>()?,
        })
    }
}

/// Counts keyed by a coded enumeration, decoded.
fn by<K: Ord>(v: Vec<(u8, u64)>, dec: fn(u8) -> Result<K, Bad>) -> Result<BTreeMap<K, u64>, Bad> {
    v.into_iter().map(|(k, n)| Ok((dec(k)?, n))).collect()
}

/// A [`CommTiming`] list: (interval, start minus the previous start,
/// length), small numbers.
#[derive(Serialize, Deserialize)]
pub(crate) struct TimingRec(Vec<(Option<i64>, i64, i64)>);

impl TimingRec {
    pub(crate) fn of(t: &[CommTiming]) -> TimingRec {
        let mut prev = 0i64;
        TimingRec(
            t.iter()
                .map(|c| {
                    let d = c.start_ns.wrapping_sub(prev);
                    prev = c.start_ns;
                    (c.interval_ns, d, c.end_ns.wrapping_sub(c.start_ns))
                })
                .collect(),
        )
    }

    pub(crate) fn into_timings(self) -> Vec<CommTiming> {
        let mut prev = 0i64;
        self.0
            .into_iter()
            .map(|(interval_ns, d, len)| {
                prev = prev.wrapping_add(d);
                CommTiming {
                    interval_ns,
                    start_ns: prev,
                    end_ns: prev.wrapping_add(len),
                }
            })
            .collect()
    }
}
