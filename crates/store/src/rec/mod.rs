//! The sections' contents: serde mirror types of the model, which itself
//! derives nothing (ARCHITECTURE: only mirrors are serializable), and
//! their conversions. Each section is one postcard-encoded record.

mod codes;
mod graph;
mod meta;
mod rank;

use lumos_graph::{CommTask, RankGraph, RankProgram};
use serde::{Deserialize, Serialize};

pub(crate) use meta::{FactsRec, HeadRec};
pub(crate) use rank::TimingRec;

use crate::stored::StoredRank;

/// A value in a section that cannot be what the format says (an id out
/// of range, an unknown code): the file is corrupt.
#[derive(Debug)]
pub(crate) struct Bad(pub(crate) String);

/// The `GRPH` section: the rank graph and the build report.
#[derive(Serialize, Deserialize)]
pub(crate) struct GraphSection {
    rank: u32,
    source: String,
    clock_base_ns: i64,
    graph: graph::GraphRec,
    measured: graph::MeasuredRec,
    comms: Vec<rank::CommRec>,
    groups: Vec<Vec<i64>>,
    report: rank::ReportRec,
    /// Since format 2.
    host: Option<String>,
}

impl GraphSection {
    pub(crate) fn of(s: &StoredRank) -> GraphSection {
        let RankGraph {
            rank,
            source,
            clock_base_ns,
            host,
            graph,
            measured,
            comms,
            groups,
        } = &s.graph;
        GraphSection {
            rank: *rank,
            source: source.clone(),
            clock_base_ns: *clock_base_ns,
            graph: graph::GraphRec::of(graph),
            measured: graph::MeasuredRec::of(measured),
            comms: comms.iter().map(rank::CommRec::of).collect(),
            groups: groups.clone(),
            report: rank::ReportRec::of(&s.report),
            host: host.clone(),
        }
    }

    pub(crate) fn into_parts(self) -> Result<(RankGraph, lumos_graph::BuildReport), Bad> {
        let mut graph = self.graph.into_graph()?;
        let measured = self.measured.into_measured(&graph)?;
        // Well-formed sections can still hold a graph no build makes (a
        // cycle, a task on two processors), which would stall or trip the
        // replay far from this file: refused here, naming it.
        if let Some(v) = lumos_graph::check_measured(&graph, &measured).first() {
            return Err(Bad(format!("its graph is not one a build makes: {v}")));
        }
        let (tasks, colls, groups) = (
            graph.tasks.len(),
            graph.collectives.len(),
            self.groups.len(),
        );
        let comms = self
            .comms
            .into_iter()
            .map(|c| c.into_comm(tasks, colls, groups))
            .collect::<Result<Vec<CommTask>, Bad>>()?;
        // A task is one collective's member at most (a joint replay's
        // rendezvous would hold it twice).
        let mut seen = vec![false; tasks];
        for c in &comms {
            if std::mem::replace(&mut seen[c.task.idx()], true) {
                return Err(Bad(format!(
                    "task {} is listed twice among the communication tasks",
                    c.task.0
                )));
            }
        }
        let mut report = self.report.into_report()?;
        // Which dependencies were inferred is not stored twice: the
        // report's rules say it, as they did when the graph was built.
        report.mark_inferred(&mut graph);
        // Nor what the launch edges, runtime dependencies and measured
        // times say (GPU tasks before their launch, launches shared, syncs
        // returned before the work they waited for ended): derived as the
        // build found them, so the graph read back is flagged as its trace
        // was.
        report.derive_launch_facts(&graph, &measured);
        report.derive_sync_facts(&graph, &measured);
        Ok((
            RankGraph {
                rank: self.rank,
                source: self.source,
                clock_base_ns: self.clock_base_ns,
                host: self.host,
                graph,
                measured,
                comms,
                groups: self.groups,
            },
            report,
        ))
    }
}

/// The `PROG` section's record of a [`RankProgram`] (its rank, signature
/// and steps are in the summary).
pub(crate) fn program_rec(p: &RankProgram) -> TimingRec {
    TimingRec::of(&p.comms)
}
