//! Top-level members other than `traceEvents`. The few the model uses are
//! parsed ([`crate::tree`]) into [`TraceMeta`]; every other member is
//! skipped unparsed, however large: the splitter has already checked its
//! brackets, strings and nesting depth, which is all the reader needs of it.

use crate::model::{Device, ProcessGroup, RankList, TraceMeta, MAX_WORLD_SIZE};
use crate::parse::Repairs;
use crate::tree::{self, Json};

/// The latest `baseTimeNanoseconds` read (7e18 ns after 1970: the year
/// 2191), leaving 70 years of `i64` nanoseconds for the events after it.
const MAX_BASE_TIME_NS: i64 = 7_000_000_000_000_000_000;

/// The devices of `deviceProperties` kept; the rest are ignored.
const MAX_DEVICES: usize = 1024;

/// True for the members [`apply`] reads; the others are never parsed.
pub(crate) fn is_used(key: &str) -> bool {
    matches!(
        key,
        "schemaVersion"
            | "baseTimeNanoseconds"
            | "displayTimeUnit"
            | "deviceProperties"
            | "distributedInfo"
            | "hostname"
            | "hostName"
            | "host_name"
    )
}

/// The field the member `key` (one [`is_used`] accepts) sets: the key,
/// or for another spelling of a field its first (`hostName` and
/// `host_name` set `hostname`).
pub(crate) fn field_of(key: &str) -> &'static str {
    match key {
        "hostname" | "hostName" | "host_name" => "hostname",
        "schemaVersion" => "schemaVersion",
        "baseTimeNanoseconds" => "baseTimeNanoseconds",
        "displayTimeUnit" => "displayTimeUnit",
        "deviceProperties" => "deviceProperties",
        "distributedInfo" => "distributedInfo",
        _ => "?",
    }
}

/// What the field `field` ([`field_of`]) is, in a warning's words.
pub(crate) fn field_words(field: &str) -> &'static str {
    match field {
        "hostname" => "the host the trace was recorded on",
        _ => "one member",
    }
}

/// Whether `value`, the text of a top-level `traceName`, is one lumos gave
/// its merged timelines (`job.replayed.json.gz`, `job.predicted.json.gz`:
/// lumos-report's `timeline/merge.rs`) before it marked them with
/// `distributedInfo.merged_ranks`; Kineto names a trace after its file,
/// never so. The text is compared as written (lumos writes these names
/// without escapes), not parsed: `traceName` is otherwise unused, and an
/// unused member is never parsed.
pub(crate) fn is_merged_trace_name(value: &[u8]) -> bool {
    let value = value.trim_ascii();
    [&b"\"lumos replayed job\""[..], b"\"lumos predicted job\""].contains(&value)
}

/// What reading one member gave besides [`TraceMeta`] fields.
#[derive(Debug, Default)]
pub(crate) struct Applied {
    /// `distributedInfo.rank`, when this member was `distributedInfo`.
    pub distributed_rank: Option<Option<u32>>,
    /// Repairs inside a `distributedInfo` written as a string of JSON.
    pub repairs: Repairs,
    pub warnings: Vec<String>,
    /// `Some(n)` when `distributedInfo.merged_ranks` says that the file is
    /// a timeline lumos merged of `n` ranks (`None` when it is not a list).
    pub merged: Option<Option<usize>>,
}

/// Stores what the member `key` (one [`is_used`] accepts) says in `meta`.
pub(crate) fn apply(key: &str, value: &Json, meta: &mut TraceMeta) -> Applied {
    let mut applied = Applied::default();
    match key {
        "schemaVersion" => meta.schema_version = value.as_i64(),
        "baseTimeNanoseconds" => {
            let base = value
                .as_i64()
                .or_else(|| value.as_str().and_then(|s| s.parse().ok()));
            // A time since 1970 with room for the events after it: one near
            // the end of i64 ran a job's clocks past their range, and the
            // replay blamed the durations.
            meta.base_time_ns = base.filter(|b| (0..=MAX_BASE_TIME_NS).contains(b));
            if let Some(b) = base.filter(|_| meta.base_time_ns.is_none()) {
                applied.warnings.push(format!(
                    "baseTimeNanoseconds {b} is not a time between 1970 and 2191 in \
                     nanoseconds: ignored (the events' times are read as written)"
                ));
            }
        }
        "displayTimeUnit" => meta.display_time_unit = value.as_str().map(str::to_owned),
        "hostname" | "hostName" | "host_name" => {
            // An empty name says nothing: the rank keeps a clock of its own.
            if let Some(h) = value.as_str().map(str::trim).filter(|h| !h.is_empty()) {
                meta.hostname = Some(h.to_owned());
            }
        }
        "deviceProperties" => {
            if let Some(arr) = value.as_array() {
                // A host has a handful; thousands are a damaged file.
                meta.devices = arr.iter().take(MAX_DEVICES).map(device_from).collect();
            }
        }
        "distributedInfo" => {
            // Some exporters write it as a JSON string holding the object.
            let owned;
            let info = match value.as_str() {
                Some(s) => match tree::parse(s.as_bytes()) {
                    Ok((v, repairs)) => {
                        applied.repairs = repairs;
                        owned = v;
                        &owned
                    }
                    Err(e) => {
                        applied.warnings.push(format!(
                            "distributedInfo is a string that is not JSON ({} at its byte {}): ignored",
                            e.message, e.offset
                        ));
                        return applied;
                    }
                },
                None => value,
            };
            apply_distributed(info, meta, &mut applied);
        }
        _ => {}
    }
    applied
}

/// Forgets what the member `key` (one [`is_used`] accepts) stored in
/// `meta`, for a repeat of it that replaces it: the last value is read,
/// as JSON readers do, and a field the repeat leaves out is not kept from
/// the first (the rank, which [`Applied::distributed_rank`] carries, is
/// the caller's).
pub(crate) fn forget(key: &str, meta: &mut TraceMeta) {
    match key {
        "schemaVersion" => meta.schema_version = None,
        "baseTimeNanoseconds" => meta.base_time_ns = None,
        "displayTimeUnit" => meta.display_time_unit = None,
        "hostname" | "hostName" | "host_name" => meta.hostname = None,
        "deviceProperties" => meta.devices = Vec::new(),
        "distributedInfo" => {
            meta.world_size = None;
            meta.backend = None;
            meta.nccl_version = None;
            meta.process_groups = Vec::new();
            meta.written_ranks = Vec::new();
        }
        _ => {}
    }
}

fn apply_distributed(info: &Json, meta: &mut TraceMeta, applied: &mut Applied) {
    let small = |k: &str| {
        info.get(k)
            .and_then(whole)
            .and_then(|r| u32::try_from(r).ok())
    };
    // A rank or world size that is there but unusable is said, not taken
    // silently for none: the rank would then come from the file name, or
    // be 0 (rank 3 written as "3" would become rank 0). One written as a
    // whole float (3.0) is that number.
    let unusable = |k: &str| info.get(k).filter(|v| !matches!(v, Json::Null));
    let rank = small("rank");
    if let Some(v) = unusable("rank").filter(|_| rank.is_none()) {
        applied.warnings.push(format!(
            "distributedInfo.rank {} is not a rank number (a whole number from 0): ignored",
            describe(v)
        ));
    }
    applied.distributed_rank = Some(rank);
    meta.world_size = small("world_size");
    let recorded = info.get("world_size").and_then(whole);
    let mut world_warned = true;
    if let Some(w) = recorded.filter(|&w| w > u64::from(MAX_WORLD_SIZE)) {
        meta.world_size = None;
        applied.warnings.push(format!(
            "distributedInfo.world_size {w} is above {MAX_WORLD_SIZE}: ignored"
        ));
    } else if let Some(v) = unusable("world_size").filter(|_| meta.world_size.unwrap_or(0) == 0) {
        meta.world_size = None;
        applied.warnings.push(format!(
            "distributedInfo.world_size {} is not a world size (a whole number from 1): ignored",
            describe(v)
        ));
    } else {
        world_warned = false;
    }
    meta.backend = info.get("backend").and_then(Json::as_str).map(Into::into);
    meta.nccl_version = info
        .get("nccl_version")
        .and_then(Json::as_str)
        .map(Into::into);
    if let Some(pgs) = info.get("pg_config").and_then(Json::as_array) {
        meta.process_groups = pgs.iter().map(process_group_from).collect();
        if let Some(r) = rank {
            own_rank_missing(pgs, &meta.process_groups, r, &mut applied.warnings);
        }
    }
    // A rank outside its job: the trace of another job, or an edited rank
    // or world size. Said, since a job of these ranks matches collectives
    // and scales rank by rank by them; both are kept as written.
    if let (Some(r), Some(w)) = (rank, meta.world_size) {
        if r >= w {
            applied.warnings.push(format!(
                "distributedInfo.rank {r} is not below its world_size {w}: a job of {w} ranks \
                 has ranks 0 to {}; both kept as written (the trace of another job, or an \
                 edited rank?)",
                w - 1
            ));
        }
    }
    if let Some(v) = info.get("merged_ranks") {
        // Whatever the list holds, lumos wrote it on a merged timeline.
        applied.merged = Some(v.as_array().map(|a| a.len()));
    }
    if let Some(v) = info.get("written_ranks") {
        match written_ranks(v, meta.world_size) {
            Some(ranks) => meta.written_ranks = ranks,
            // A world size left out above is the thing to say.
            None if world_warned => {}
            None => applied.warnings.push(
                "distributedInfo.written_ranks is not a list of ranks below the world size: \
                 ignored"
                    .to_owned(),
            ),
        }
    }
}

/// Warns about the process groups of `pg_config` (`pgs`, read into
/// `groups`) whose complete list of ranks leaves out this trace's rank
/// `rank`: PyTorch lists the groups the rank belongs to, so such a list
/// is of another rank or edited, and its collectives would be matched
/// with peers of a group the rank is not in. A list cut with `...`, or
/// none, says nothing.
fn own_rank_missing(
    pgs: &[Json],
    groups: &[crate::model::ProcessGroup],
    rank: u32,
    warnings: &mut Vec<String>,
) {
    let complete = |v: &Json| match v.get("ranks") {
        Some(Json::Array(_)) => true,
        Some(r) => r
            .as_str()
            .and_then(RankList::parse)
            .is_some_and(|l| !l.truncated),
        None => false,
    };
    let missing: Vec<&str> = (pgs.iter().zip(groups))
        .filter(|(v, g)| complete(v) && !g.ranks.is_empty() && !g.ranks.contains(&i64::from(rank)))
        .map(|(_, g)| g.name.as_str())
        .collect();
    if missing.is_empty() {
        return;
    }
    const SHOWN: usize = 8;
    let more = match missing.len().saturating_sub(SHOWN) {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    warnings.push(format!(
        "distributedInfo.pg_config: {} ({}{more}) {} not list this trace's rank {rank} among \
         {} ranks: kept as written, but a job matches the collectives of {} with peers of a \
         group this rank is not in (the metadata of another rank, or edited?)",
        if missing.len() == 1 {
            "1 process group".to_owned()
        } else {
            format!("{} process groups", missing.len())
        },
        missing[..missing.len().min(SHOWN)]
            .iter()
            .map(|n| format!("{n:?}"))
            .collect::<Vec<_>>()
            .join(", "),
        if missing.len() == 1 { "does" } else { "do" },
        if missing.len() == 1 { "its" } else { "their" },
        if missing.len() == 1 {
            "that group"
        } else {
            "those groups"
        },
    ));
}

/// `v` as a whole number from 0, a float with no fraction (3.0) included.
fn whole(v: &Json) -> Option<u64> {
    match *v {
        Json::Float(f) if f >= 0.0 && f.fract() == 0.0 && f < u64::MAX as f64 => Some(f as u64),
        _ => v.as_u64(),
    }
}

/// A value as a warning quotes it: numbers and short strings as written,
/// anything else by its kind.
fn describe(v: &Json) -> String {
    match v {
        Json::Null => "null".into(),
        Json::Bool(b) => b.to_string(),
        Json::Int(i) => i.to_string(),
        Json::UInt(u) => u.to_string(),
        Json::Float(f) => f.to_string(),
        Json::Str(s) if s.chars().count() <= 32 => format!("{s:?}"),
        Json::Str(_) => "(a long string)".into(),
        Json::Array(_) => "(an array)".into(),
        Json::Object(_) => "(an object)".into(),
    }
}

/// `distributedInfo.written_ranks`, sorted and deduplicated: `None` unless
/// it is a list of ranks below `world_size` (which it needs), so that a
/// bad list never makes ranks of a job look complete.
fn written_ranks(v: &Json, world_size: Option<u32>) -> Option<Vec<u32>> {
    let w = world_size?;
    let mut out = v
        .as_array()?
        .iter()
        .map(|r| {
            r.as_u64()
                .and_then(|r| u32::try_from(r).ok())
                .filter(|&r| r < w)
        })
        .collect::<Option<Vec<u32>>>()?;
    out.sort_unstable();
    out.dedup();
    Some(out)
}

fn device_from(v: &Json) -> Device {
    let u = |k: &str| v.get(k).and_then(Json::as_u64);
    Device {
        id: v.get("id").and_then(Json::as_i64).unwrap_or(0),
        name: v
            .get("name")
            .and_then(Json::as_str)
            .unwrap_or("")
            .to_owned(),
        total_global_mem: u("totalGlobalMem"),
        num_sms: u("numSms").and_then(|x| u32::try_from(x).ok()),
        compute_major: u("computeMajor").and_then(|x| u32::try_from(x).ok()),
        compute_minor: u("computeMinor").and_then(|x| u32::try_from(x).ok()),
    }
}

fn process_group_from(v: &Json) -> ProcessGroup {
    let ranks = match v.get("ranks") {
        Some(Json::Array(a)) => a.iter().filter_map(Json::as_i64).collect(),
        Some(r) => r
            .as_str()
            .and_then(RankList::parse)
            .map(|l| l.ranks)
            .unwrap_or_default(),
        None => Vec::new(),
    };
    ProcessGroup {
        name: match v.get("pg_name") {
            Some(Json::Str(n)) => n.clone(),
            Some(n) => n.as_i64().map(|i| i.to_string()).unwrap_or_default(),
            None => String::new(),
        },
        desc: v.get("pg_desc").and_then(Json::as_str).map(Into::into),
        size: v
            .get("pg_size")
            .and_then(Json::as_u64)
            .and_then(|x| u32::try_from(x).ok()),
        ranks,
    }
}
