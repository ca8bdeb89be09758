//! `lumos.inspect` of several files: each file reported from the rank
//! built of its trace (or its `.lgraph` file), as `lumos inspect` does.

use lumos_graph::RankInput;
use lumos_report::FileReport;
use lumos_store::Prepared;
use rayon::prelude::*;

/// The report on each input, in order: a trace's from its rank (`ranks`,
/// one per input, when [`lumos_store::sort`] lent them to a job; else the
/// rank in place), a compact file's from what it stored.
pub fn file_reports(read: &[Prepared], ranks: Option<&[RankInput]>) -> Vec<FileReport> {
    read.par_iter()
        .enumerate()
        .map(|(i, p)| match p {
            Prepared::Built(b) => {
                let rank = match ranks {
                    Some(ranks) => &ranks[i],
                    None => b.rank.as_ref().expect("sort gives every rank back"),
                };
                let g = &rank.graph;
                lumos_report::file_report_of(&b.facts, &g.graph, &g.measured, &rank.report)
            }
            Prepared::Stored(s) => lumos_report::inspect_stored(s),
        })
        .collect()
}
