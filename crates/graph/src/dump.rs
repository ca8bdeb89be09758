//! A deterministic text dump of a graph, made for diffs and for the
//! data-driven builder tests (`tests/data/build`): one line per task, scope,
//! edge, runtime dependency and step, so a change in what the builder
//! infers shows as a changed line.

use std::fmt::Write;

use crate::model::*;
use crate::report::BuildReport;

/// The graph as text, in sections, each only when it has lines:
///
/// - `tasks`: `t<id> <processor> <kind> "<name>" dur=<ns> release=<ns>`,
///   then `scope=s<id>` and `coll=c<id>` where the task has them;
/// - `scopes`: `s<id> "<name>" op|annotation parent=s<id>|-`;
/// - `collectives`: `c<id> <name>` and its recorded process group, sequence
///   number, bytes and group size;
/// - `edges`, sorted by source, target and kind:
///   `t<from> -> t<to> <kind> <end|start>+<latency ns>`, then the rule that
///   found it in parentheses when `report` says;
/// - `runtime deps`: `t<task> waits <target> +<latency ns>` and its rule;
/// - `steps`: `"<name>" first=t<id> last=t<id> lead=<ns> tail=<ns> tasks=<n>`;
/// - `report` (with `report` only): every non-zero counter of the
///   [`BuildReport`] and its warnings.
///
/// Processors print as `thread <pid>:<tid>` or `stream <device>:<stream>`.
pub fn dump(graph: &Graph, report: Option<&BuildReport>) -> String {
    let mut out = String::new();
    tasks(&mut out, graph);
    scopes(&mut out, graph);
    collectives(&mut out, graph);
    edges(&mut out, graph, report);
    runtime_deps(&mut out, graph, report);
    steps(&mut out, graph);
    if let Some(r) = report {
        counters(&mut out, r);
    }
    out
}

fn section(out: &mut String, title: &str, lines: Vec<String>) {
    if lines.is_empty() {
        return;
    }
    let _ = writeln!(out, "{title}");
    for l in lines {
        let _ = writeln!(out, "  {l}");
    }
}

fn processor(g: &Graph, p: ProcId) -> String {
    match g.processors[p.idx()].kind {
        ProcKind::Thread { pid, tid } => format!("thread {pid}:{tid}"),
        ProcKind::Stream { device, stream } => format!("stream {device}:{stream}"),
    }
}

fn tasks(out: &mut String, g: &Graph) {
    let lines = (0..g.tasks.len())
        .map(|i| {
            let id = TaskId(i as u32);
            let t = g.task(id);
            let mut l = format!(
                "t{i} {} {} {:?} dur={} release={}",
                processor(g, t.proc),
                t.kind.as_str(),
                g.name(id),
                t.duration_ns,
                t.release_ns
            );
            if let Some(s) = g.scope_of(id) {
                let _ = write!(l, " scope=s{}", s.0);
            }
            if let Some(c) = t.collective {
                let _ = write!(l, " coll=c{c}");
            }
            l
        })
        .collect();
    section(out, "tasks", lines);
}

fn scopes(out: &mut String, g: &Graph) {
    let lines = g
        .scopes
        .iter()
        .enumerate()
        .map(|(i, s)| {
            format!(
                "s{i} {:?} {} parent={}",
                g.names[s.name.0 as usize],
                if s.annotation { "annotation" } else { "op" },
                s.parent.map_or("-".into(), |p| format!("s{}", p.0))
            )
        })
        .collect();
    section(out, "scopes", lines);
}

fn collectives(out: &mut String, g: &Graph) {
    let opt = |x: Option<String>| x.unwrap_or_else(|| "-".into());
    let lines = g
        .collectives
        .iter()
        .enumerate()
        .map(|(i, c)| {
            format!(
                "c{i} {} pg={} seq={} bytes={} group={}",
                c.name,
                opt(c.process_group.clone()),
                opt(c.seq.map(|x| x.to_string())),
                opt(c.bytes.map(|x| x.to_string())),
                opt(c.group_size.map(|x| x.to_string()))
            )
        })
        .collect();
    section(out, "collectives", lines);
}

fn edges(out: &mut String, g: &Graph, report: Option<&BuildReport>) {
    let mut order: Vec<usize> = (0..g.edges.len()).collect();
    order.sort_by_key(|&i| {
        let e = &g.edges[i];
        (e.from, e.to, e.kind, i)
    });
    let lines = order
        .into_iter()
        .map(|i| {
            let e = &g.edges[i];
            let anchor = match e.anchor {
                Anchor::End => "end",
                Anchor::Start => "start",
            };
            let mut l = format!(
                "t{} -> t{} {} {anchor}+{}",
                e.from.0, e.to.0, e.kind, e.latency_ns
            );
            if let Some(rule) = report.and_then(|r| r.edge_rule(i)) {
                let _ = write!(l, " ({})", rule.as_str());
            }
            l
        })
        .collect();
    section(out, "edges", lines);
}

fn runtime_deps(out: &mut String, g: &Graph, report: Option<&BuildReport>) {
    let lines = g
        .runtime_deps
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let target = match d.target {
                WaitTarget::StreamTail(p) => format!("stream_tail({})", processor(g, p)),
                WaitTarget::DeviceTail(dev) => format!("device_tail({dev})"),
                WaitTarget::Task(t) => format!("task(t{})", t.0),
            };
            let mut l = format!("t{} waits {target} +{}", d.task.0, d.latency_ns);
            if let Some(rule) = report.and_then(|r| r.runtime_dep_rules.get(i)) {
                let _ = write!(l, " ({})", rule.as_str());
            }
            l
        })
        .collect();
    section(out, "runtime deps", lines);
}

fn steps(out: &mut String, g: &Graph) {
    let lines = g
        .steps
        .iter()
        .map(|s| {
            format!(
                "{:?} first=t{} last=t{} lead={} tail={} tasks={}",
                s.name,
                s.first_task.0,
                s.last_task.0,
                s.lead_ns,
                s.tail_ns,
                s.tasks.len()
            )
        })
        .collect();
    section(out, "steps", lines);
}

fn counters(out: &mut String, r: &BuildReport) {
    let mut lines: Vec<String> = [
        ("comm_by_args", r.comm_by_args),
        ("comm_by_name", r.comm_by_name),
        ("cuda_sync_events", r.cuda_sync_events),
        ("gpu_without_launch", r.gpu_without_launch),
        ("launches_without_gpu_task", r.launches_without_gpu_task),
        ("released_gpu_tasks", r.released_gpu_tasks),
        ("repeated_correlations", r.repeated_correlations),
        ("partial_overlaps", r.partial_overlaps),
        ("clipped_gpu_overlaps", r.clipped_gpu_overlaps),
        ("polling_loops", r.polling_loops),
        ("split_calls", r.split_calls),
        ("same_stream_waits", r.same_stream_waits),
        ("rejected_waits", r.rejected_waits),
        ("unresolved_syncs", r.unresolved_syncs),
        ("unresolved_waits", r.unresolved_waits),
        ("idle_stream_waits", r.idle_stream_waits),
        ("stream_order_violations", r.stream_order_violations),
        ("cpu_holes", r.cpu_holes),
        ("launched_early", r.launched_early),
        ("shared_launches", r.shared_launches),
        ("syncs_returned_early", r.syncs_returned_early),
        ("events_on_left_out_threads", r.events_on_left_out_threads),
        ("events_on_left_out_streams", r.events_on_left_out_streams),
    ]
    .into_iter()
    .filter(|&(_, n)| n > 0)
    .map(|(k, n)| format!("{k} {n}"))
    .collect();
    for (k, ns) in [
        ("typical_launch_latency_ns", r.typical_launch_latency_ns),
        ("typical_stream_gap_ns", r.typical_stream_gap_ns),
    ] {
        if ns != 0 {
            lines.push(format!("{k} {ns}"));
        }
    }
    lines.extend(r.warnings.iter().map(|w| format!("warning: {w}")));
    section(out, "report", lines);
}
