//! `lumos inspect`: what the reader and the graph builder found in each file.

use std::collections::BTreeMap;

use lumos_graph::{build, BuildReport, Graph, Measured};
use lumos_trace::Trace;
use serde::Serialize;

/// The JSON form of one file's inspection.
#[derive(Serialize)]
pub struct FileReport {
    pub path: String,
    pub rank: u32,
    pub rank_source: &'static str,
    pub world_size: Option<u32>,
    pub json_bytes: u64,
    pub gzipped: bool,
    pub events: EventCounts,
    pub tasks_by_kind: BTreeMap<&'static str, u64>,
    pub edges_by_kind: BTreeMap<&'static str, u64>,
    /// Edges found per kind and rule; `recorded` is true when read from
    /// `cuda_sync` events rather than inferred.
    pub inferred: Vec<InferredCount>,
    pub threads: u64,
    pub streams: u64,
    pub devices: Vec<String>,
    pub steps: Vec<StepReport>,
    pub collectives: CollectiveCounts,
    pub typical_launch_latency_us: f64,
    pub warnings: Vec<String>,
    /// What structure discovery found (lumos-predict).
    pub structure: lumos_predict::StructureReport,
}

#[derive(Serialize)]
pub struct EventCounts {
    pub total: u64,
    pub kept: u64,
    pub flows: u64,
    pub skipped: u64,
    pub skipped_by_reason: Vec<SkipCount>,
}

#[derive(Serialize)]
pub struct SkipCount {
    pub category: String,
    pub reason: &'static str,
    pub count: u64,
}

#[derive(Serialize)]
pub struct InferredCount {
    pub kind: &'static str,
    pub rule: &'static str,
    pub recorded: bool,
    pub count: u64,
}

#[derive(Serialize)]
pub struct StepReport {
    pub name: String,
    /// The annotation's own length.
    pub annotation_us: f64,
    /// Annotation start to the end of the last GPU task launched in it.
    pub measured_us: f64,
}

#[derive(Serialize)]
pub struct CollectiveCounts {
    pub tasks: u64,
    pub by_collective_name_arg: u64,
    pub by_kernel_name: u64,
    pub by_name: BTreeMap<String, u64>,
}

pub fn inspect(trace: &Trace) -> FileReport {
    let (graph, measured, report) = build(trace);
    file_report(trace, &graph, &measured, &report)
}

pub fn file_report(
    trace: &Trace,
    graph: &Graph,
    measured: &Measured,
    report: &BuildReport,
) -> FileReport {
    let us = |ns: i64| ns as f64 / 1e3;
    let spans = lumos_sim::step_spans(graph, &measured.tasks, Some(&measured.step_annotations));
    let steps = graph
        .steps
        .iter()
        .zip(&measured.step_annotations)
        .zip(&spans)
        .map(|((s, a), sp)| StepReport {
            name: s.name.clone(),
            annotation_us: us(a.end_ns - a.start_ns),
            measured_us: us(sp.end_ns - sp.start_ns),
        })
        .collect();
    let mut by_name = BTreeMap::new();
    for c in &graph.collectives {
        *by_name.entry(c.name.clone()).or_insert(0) += 1;
    }
    let mut warnings = trace.warnings.clone();
    warnings.extend(report.warnings.iter().cloned());
    FileReport {
        path: trace.path.display().to_string(),
        rank: trace.meta.rank,
        rank_source: match trace.meta.rank_source {
            lumos_trace::RankSource::DistributedInfo => "distributedInfo",
            lumos_trace::RankSource::FileName => "file_name",
            lumos_trace::RankSource::Default => "default",
        },
        world_size: trace.meta.world_size,
        json_bytes: trace.json_bytes,
        gzipped: trace.gzipped,
        events: EventCounts {
            total: trace.events_total,
            kept: trace.events.len() as u64,
            flows: trace.flows.len() as u64,
            skipped: trace.skipped.total(),
            skipped_by_reason: trace
                .skipped
                .counts
                .iter()
                .map(|((c, r), n)| SkipCount {
                    category: c.clone(),
                    reason: r.as_str(),
                    count: *n,
                })
                .collect(),
        },
        tasks_by_kind: report
            .tasks_by_kind
            .iter()
            .map(|(k, n)| (k.as_str(), *n))
            .collect(),
        edges_by_kind: report
            .edges_by_kind
            .iter()
            .map(|(k, n)| (k.as_str(), *n))
            .collect(),
        inferred: report
            .inferred
            .iter()
            .map(|((k, r), n)| InferredCount {
                kind: k.as_str(),
                rule: r.as_str(),
                recorded: r.is_recorded(),
                count: *n,
            })
            .collect(),
        threads: report.threads,
        streams: report.streams,
        devices: trace
            .meta
            .devices
            .iter()
            .map(|d| format!("{}: {}", d.id, d.name))
            .collect(),
        steps,
        collectives: CollectiveCounts {
            tasks: graph.collectives.len() as u64,
            by_collective_name_arg: report.comm_by_args,
            by_kernel_name: report.comm_by_name,
            by_name,
        },
        typical_launch_latency_us: us(report.typical_launch_latency_ns),
        warnings,
        structure: crate::predict::structure_report(trace, graph, measured),
    }
}

pub fn print_human(r: &FileReport) {
    println!("{}", r.path);
    println!(
        "  rank {} ({}), world size {}, {:.1} MB JSON{}",
        r.rank,
        r.rank_source,
        r.world_size.map_or("?".into(), |w| w.to_string()),
        r.json_bytes as f64 / 1e6,
        if r.gzipped { " (gzip)" } else { "" }
    );
    println!(
        "  events: {} total, {} kept, {} flows, {} skipped",
        r.events.total, r.events.kept, r.events.flows, r.events.skipped
    );
    for s in &r.events.skipped_by_reason {
        println!(
            "    skipped {:>8}  {:<24} {}",
            s.count, s.category, s.reason
        );
    }
    let join = |m: &BTreeMap<&str, u64>| {
        m.iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!("  tasks: {}", join(&r.tasks_by_kind));
    println!("  edges: {}", join(&r.edges_by_kind));
    for i in &r.inferred {
        println!(
            "    {:<13} {:<26} {:>7} {}",
            i.kind,
            i.rule,
            i.count,
            if i.recorded { "recorded" } else { "inferred" }
        );
    }
    println!(
        "  {} threads, {} streams; devices: {}",
        r.threads,
        r.streams,
        if r.devices.is_empty() {
            "none listed".into()
        } else {
            r.devices.join("; ")
        }
    );
    println!(
        "  collectives: {} tasks ({} by Collective name, {} by kernel name){}",
        r.collectives.tasks,
        r.collectives.by_collective_name_arg,
        r.collectives.by_kernel_name,
        if r.collectives.by_name.is_empty() {
            String::new()
        } else {
            format!(
                ": {}",
                r.collectives
                    .by_name
                    .iter()
                    .map(|(k, v)| format!("{k} {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    );
    println!(
        "  typical launch latency {:.1} us",
        r.typical_launch_latency_us
    );
    for s in &r.steps {
        println!(
            "  {:<16} {:>10.3} ms annotation, {:>10.3} ms with GPU tail",
            s.name,
            s.annotation_us / 1e3,
            s.measured_us / 1e3
        );
    }
    crate::predict::print_structure(&r.structure);
    for w in &r.warnings {
        println!("  warning: {w}");
    }
}
