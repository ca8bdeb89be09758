//! Communication by collective type and process group, with the NCCL
//! algorithm and the algorithm and bus bandwidths nccl-tests reports.

use lumos_graph::{Graph, NameId, NcclOperators, TaskId};
use lumos_sim::TaskTimes;
use rustc_hash::FxHashMap;
use serde::Serialize;

use crate::units::us;

/// The communication of one collective type, process group and NCCL
/// algorithm in a selection.
///
/// Bandwidths follow nccl-tests (doc/PERFORMANCE.md there): the algorithm
/// bandwidth is the message size over the time, the bus bandwidth that
/// times the collective's bus factor. Sizes are `max(in, out)` elements
/// times the element size, which is nccl-tests' size for every collective.
/// On a trace the time of a collective includes waiting for the slowest
/// peer, so these bandwidths are lower bounds of the link's.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CollectiveRow {
    /// The collective type ([`collective_type`]): `all_reduce`,
    /// `all_gather`, `reduce_scatter`, `all_to_all`, `broadcast`,
    /// `reduce`, `send_recv`, `barrier`, ... or the recorded name,
    /// lower-cased.
    pub collective: String,
    /// The name recorded (the `Collective name` argument, else the
    /// kernel's family), of the first call.
    pub name: String,
    /// The process group, when recorded.
    pub process_group: Option<String>,
    /// Ranks in the group, when recorded.
    pub group_size: Option<u32>,
    /// The NCCL algorithm in the kernel name (`RING`, `TREE`, ...).
    pub algorithm: Option<String>,
    /// The NCCL protocol in the kernel name (`LL`, `LL128`, `SIMPLE`).
    pub protocol: Option<String>,
    /// Calls (communication tasks).
    pub count: usize,
    /// Their summed durations, us.
    pub total_us: f64,
    /// Mean duration, us.
    pub mean_us: f64,
    /// Calls whose message size is recorded.
    pub sized: usize,
    /// Their summed sizes, bytes (null when none is recorded).
    pub bytes: Option<u64>,
    /// Summed size over the summed time of the sized calls, GB/s (1e9
    /// bytes per second).
    pub algbw_gbps: Option<f64>,
    /// nccl-tests' bus factor for the type and group size (2(n-1)/n for
    /// all-reduce; (n-1)/n for all-gather, reduce-scatter and all-to-all;
    /// 1 for broadcast, reduce and send/receive); none for a group of one,
    /// whose collectives move nothing across links ([`bus_factor`]).
    pub bus_factor: Option<f64>,
    /// `algbw_gbps * bus_factor`, GB/s; none without a bus factor (a group
    /// of one, or of unknown size).
    pub busbw_gbps: Option<f64>,
}

/// The collective type of a recorded name (`allreduce`, `nccl:all_reduce`,
/// `AllReduce`, `_allgather_base`, `all_to_allv`, `SendRecv`, ...).
///
/// ```
/// use lumos_report::collective_type;
/// assert_eq!(collective_type("nccl:all_to_all"), "all_to_all");
/// assert_eq!(collective_type("_allgather_base"), "all_gather");
/// assert_eq!(collective_type("SendRecv"), "send_recv");
/// assert_eq!(collective_type("Generic"), "generic");
/// ```
pub fn collective_type(name: &str) -> String {
    let n: String = name
        .strip_prefix("nccl:")
        .unwrap_or(name)
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect::<String>()
        .to_ascii_lowercase();
    let t = if n.contains("allreduce") {
        "all_reduce"
    } else if n.contains("reducescatter") {
        "reduce_scatter"
    } else if n.contains("allgather") {
        "all_gather"
    } else if n.contains("alltoall") {
        "all_to_all"
    } else if n.contains("broadcast") {
        "broadcast"
    } else if n.contains("send") || n.contains("recv") {
        "send_recv"
    } else if n.contains("barrier") {
        "barrier"
    } else if n.starts_with("reduce") {
        "reduce"
    } else if n.starts_with("gather") {
        "gather"
    } else if n.starts_with("scatter") {
        "scatter"
    } else {
        return n;
    };
    t.to_owned()
}

/// nccl-tests' bus factor of a collective type over `n` ranks; none for a
/// group of one (or none): such a collective moves nothing across links,
/// so it has no bus bandwidth (the formulas would give 0, or 1 for a
/// broadcast that sends nothing).
///
/// ```
/// assert_eq!(lumos_report::bus_factor("all_reduce", 8), Some(1.75));
/// assert_eq!(lumos_report::bus_factor("all_gather", 4), Some(0.75));
/// assert_eq!(lumos_report::bus_factor("send_recv", 2), Some(1.0));
/// assert_eq!(lumos_report::bus_factor("barrier", 2), None);
/// assert_eq!(lumos_report::bus_factor("all_reduce", 1), None);
/// assert_eq!(lumos_report::bus_factor("broadcast", 1), None);
/// ```
pub fn bus_factor(collective: &str, n: u32) -> Option<f64> {
    if n < 2 {
        return None;
    }
    let n = f64::from(n);
    Some(match collective {
        "all_reduce" => 2.0 * (n - 1.0) / n,
        "all_gather" | "reduce_scatter" | "all_to_all" => (n - 1.0) / n,
        "broadcast" | "reduce" | "send_recv" => 1.0,
        _ => return None,
    })
}

/// The NCCL algorithm and protocol in a kernel name
/// (`ncclKernel_AllReduce_RING_LL_Sum_float(...)`,
/// `ncclDevKernel_AllGather_RING_LL(...)`).
///
/// ```
/// let (a, p) = lumos_report::nccl_algorithm("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)");
/// assert_eq!((a.as_deref(), p.as_deref()), (Some("RING"), Some("LL")));
/// assert_eq!(lumos_report::nccl_algorithm("ncclDevKernel_Generic(x)"), (None, None));
/// ```
pub fn nccl_algorithm(kernel: &str) -> (Option<String>, Option<String>) {
    let (a, p) = nccl_tokens(kernel);
    (a.map(str::to_owned), p.map(str::to_owned))
}

/// [`nccl_algorithm`] as the names of the algorithm and protocol NCCL
/// has, without allocating.
fn nccl_tokens(kernel: &str) -> (Option<&'static str>, Option<&'static str>) {
    const ALGORITHMS: [&str; 8] = [
        "RING",
        "TREE",
        "COLLNET",
        "COLLNETDIRECT",
        "COLLNETCHAIN",
        "NVLS",
        "NVLSTREE",
        "PAT",
    ];
    const PROTOCOLS: [&str; 3] = ["LL", "LL128", "SIMPLE"];
    if !kernel.contains("ccl") {
        return (None, None);
    }
    let head = kernel.split('(').next().unwrap_or("");
    let find = |set: &[&'static str]| {
        head.split('_')
            .find_map(|t| set.iter().find(|&&known| known == t).copied())
    };
    (find(&ALGORITHMS), find(&PROTOCOLS))
}

/// A group: the collective type (its position among the types seen),
/// process group, group size, algorithm and protocol; borrowed from the
/// graph so that grouping a task allocates nothing.
type Key<'g> = (
    u32,
    Option<&'g str>,
    Option<u32>,
    Option<&'static str>,
    Option<&'static str>,
);

#[derive(Default)]
struct Acc<'g> {
    name: &'g str,
    count: usize,
    total: i64,
    sized: usize,
    bytes: u64,
    sized_time: i64,
}

/// The communication tasks of `own`, grouped; most total time first.
pub(crate) fn collective_rows<T: TaskTimes + ?Sized>(
    graph: &Graph,
    times: &T,
    own: &[TaskId],
) -> Vec<CollectiveRow> {
    let mut groups: FxHashMap<Key<'_>, Acc<'_>> = FxHashMap::default();
    // Each kernel name's algorithm and protocol, and each typed name's
    // type (by its position in `types`), found once.
    let mut tokens: FxHashMap<NameId, (Option<&'static str>, Option<&'static str>)> =
        FxHashMap::default();
    let mut type_ids: FxHashMap<&str, u32> = FxHashMap::default();
    let mut types: Vec<String> = Vec::new();
    let mut nccl = NcclOperators::of(graph);
    for &t in own {
        let task = graph.task(t);
        let Some(c) = task
            .collective
            .and_then(|i| graph.collectives.get(i as usize))
        else {
            continue;
        };
        if !task.kind.is_gpu() {
            continue;
        }
        let (algorithm, protocol) = *tokens
            .entry(task.name)
            .or_insert_with(|| nccl_tokens(graph.name(t)));
        // The type an enclosing `nccl:<collective>` operator names, where
        // the recorded name may be only the kernels' family (`SendRecv`
        // for an all-to-all).
        let typed = nccl.collective(t).unwrap_or(&c.name);
        let type_id = *type_ids.entry(typed).or_insert_with(|| {
            let ty = collective_type(typed);
            // Two typed names may have one type (`allreduce`,
            // `AllReduce`): their tasks are one group.
            match types.iter().position(|known| *known == ty) {
                Some(i) => i as u32,
                None => {
                    types.push(ty);
                    types.len() as u32 - 1
                }
            }
        });
        let key = (
            type_id,
            c.process_group.as_deref(),
            c.group_size,
            algorithm,
            protocol,
        );
        let d = times.end_of(t).saturating_sub(times.start_of(t));
        let acc = groups.entry(key).or_default();
        if acc.count == 0 {
            acc.name = &c.name;
        }
        acc.count += 1;
        acc.total = acc.total.saturating_add(d);
        if let Some(b) = c.bytes {
            acc.sized += 1;
            acc.bytes = acc.bytes.saturating_add(b);
            acc.sized_time = acc.sized_time.saturating_add(d);
        }
    }
    let mut rows: Vec<CollectiveRow> = groups
        .into_iter()
        .map(|((type_id, pg, size, algorithm, protocol), a)| {
            let collective = types[type_id as usize].clone();
            // Bytes per ns are GB/s.
            let algbw =
                (a.sized > 0 && a.sized_time > 0).then(|| a.bytes as f64 / a.sized_time as f64);
            let factor = size.and_then(|n| bus_factor(&collective, n));
            CollectiveRow {
                busbw_gbps: algbw.zip(factor).map(|(b, f)| b * f),
                bus_factor: factor,
                algbw_gbps: algbw,
                bytes: (a.sized > 0).then_some(a.bytes),
                sized: a.sized,
                mean_us: us(a.total) / a.count.max(1) as f64,
                total_us: us(a.total),
                count: a.count,
                collective,
                name: a.name.to_owned(),
                process_group: pg.map(str::to_owned),
                group_size: size,
                algorithm: algorithm.map(str::to_owned),
                protocol: protocol.map(str::to_owned),
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        b.total_us
            .total_cmp(&a.total_us)
            .then_with(|| a.collective.cmp(&b.collective))
            .then_with(|| a.process_group.cmp(&b.process_group))
            .then_with(|| a.group_size.cmp(&b.group_size))
            .then_with(|| a.algorithm.cmp(&b.algorithm))
            .then_with(|| a.protocol.cmp(&b.protocol))
    });
    rows
}
