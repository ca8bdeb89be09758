//! Records of the summary and of what the trace said about itself.

use std::path::{Path, PathBuf};

use lumos_graph::ProgramSignature;
use lumos_trace::{Device, ProcessGroup, TraceMeta, MAX_WORLD_SIZE};
use serde::{Deserialize, Serialize};

use super::codes::{rank_source, rank_source_of, skip_reason, skip_reason_of};
use super::Bad;
use crate::stored::{RankSummary, Source, TraceFacts};

#[derive(Serialize, Deserialize)]
pub(crate) struct HeadRec {
    lumos_version: String,
    source_path: Vec<u8>,
    source_bytes: u64,
    source_modified_ns: Option<i64>,
    rank: u32,
    rank_source: u8,
    world_size: Option<u32>,
    signature: u64,
    steps_ns: Vec<i64>,
    step_names: Vec<String>,
    tasks: u64,
    comm_tasks: u64,
    devices: u32,
    json_bytes: u64,
}

impl HeadRec {
    pub(crate) fn of(s: &RankSummary) -> HeadRec {
        let RankSummary {
            rank,
            rank_source: source_of_rank,
            world_size,
            signature,
            steps_ns,
            step_names,
            tasks,
            comm_tasks,
            devices,
            json_bytes,
            source,
            lumos_version,
        } = s;
        HeadRec {
            lumos_version: lumos_version.clone(),
            source_path: path_bytes(&source.path),
            source_bytes: source.bytes,
            source_modified_ns: source.modified_ns,
            rank: *rank,
            rank_source: rank_source(*source_of_rank),
            world_size: *world_size,
            signature: signature.as_u64(),
            steps_ns: steps_ns.clone(),
            step_names: step_names.clone(),
            tasks: *tasks,
            comm_tasks: *comm_tasks,
            devices: *devices,
            json_bytes: *json_bytes,
        }
    }

    pub(crate) fn into_summary(self) -> Result<RankSummary, Bad> {
        world_size_in_range(self.world_size)?;
        // A step runs from its annotation's start to the later of its end
        // and its GPU work's: never backwards. Read alone, the summary's
        // steps are a group's measured steps in representatives.
        if let Some(s) = self.steps_ns.iter().find(|&&s| s < 0) {
            return Err(Bad(format!("a measured step of {s} ns")));
        }
        Ok(RankSummary {
            rank: self.rank,
            rank_source: rank_source_of(self.rank_source)?,
            world_size: self.world_size,
            signature: ProgramSignature::from_u64(self.signature),
            steps_ns: self.steps_ns,
            step_names: self.step_names,
            tasks: self.tasks,
            comm_tasks: self.comm_tasks,
            devices: self.devices,
            json_bytes: self.json_bytes,
            source: Source {
                path: path_of_bytes(self.source_path),
                bytes: self.source_bytes,
                modified_ns: self.source_modified_ns,
            },
            lumos_version: self.lumos_version,
        })
    }
}

#[derive(Serialize, Deserialize)]
struct DeviceRec {
    id: i64,
    name: String,
    total_global_mem: Option<u64>,
    num_sms: Option<u32>,
    compute_major: Option<u32>,
    compute_minor: Option<u32>,
}

#[derive(Serialize, Deserialize)]
struct GroupRec {
    name: String,
    desc: Option<String>,
    size: Option<u32>,
    ranks: Vec<i64>,
}

#[derive(Serialize, Deserialize)]
pub(crate) struct FactsRec {
    path: Vec<u8>,
    json_bytes: u64,
    gzipped: bool,
    events_total: u64,
    events_kept: u64,
    flows: u64,
    skipped: Vec<(String, u8, u64)>,
    warnings: Vec<String>,
    absurd_durations: u64,
    schema_version: Option<i64>,
    base_time_ns: Option<i64>,
    display_time_unit: Option<String>,
    rank: u32,
    rank_source: u8,
    world_size: Option<u32>,
    backend: Option<String>,
    nccl_version: Option<String>,
    process_groups: Vec<GroupRec>,
    devices: Vec<DeviceRec>,
}

impl FactsRec {
    pub(crate) fn of(f: &TraceFacts) -> FactsRec {
        let TraceMeta {
            schema_version,
            base_time_ns,
            display_time_unit,
            rank,
            rank_source: source_of_rank,
            world_size,
            backend,
            nccl_version,
            process_groups,
            // Not in format 1: a trace ingested keeps no written-ranks
            // record (docs/LGRAPH.md).
            written_ranks: _,
            devices,
            // Stored once, in GRPH (`RankGraph::host`); `read_stored` puts
            // it back.
            hostname: _,
        } = &f.meta;
        FactsRec {
            path: path_bytes(&f.path),
            json_bytes: f.json_bytes,
            gzipped: f.gzipped,
            events_total: f.events_total,
            events_kept: f.events_kept,
            flows: f.flows,
            skipped: f
                .skipped
                .iter()
                .map(|((c, r), &n)| (c.clone(), skip_reason(*r), n))
                .collect(),
            warnings: f.warnings.clone(),
            absurd_durations: f.absurd_durations,
            schema_version: *schema_version,
            base_time_ns: *base_time_ns,
            display_time_unit: display_time_unit.clone(),
            rank: *rank,
            rank_source: rank_source(*source_of_rank),
            world_size: *world_size,
            backend: backend.clone(),
            nccl_version: nccl_version.clone(),
            process_groups: process_groups
                .iter()
                .map(|g| GroupRec {
                    name: g.name.clone(),
                    desc: g.desc.clone(),
                    size: g.size,
                    ranks: g.ranks.clone(),
                })
                .collect(),
            devices: devices
                .iter()
                .map(|d| DeviceRec {
                    id: d.id,
                    name: d.name.clone(),
                    total_global_mem: d.total_global_mem,
                    num_sms: d.num_sms,
                    compute_major: d.compute_major,
                    compute_minor: d.compute_minor,
                })
                .collect(),
        }
    }

    pub(crate) fn into_facts(self) -> Result<TraceFacts, Bad> {
        world_size_in_range(self.world_size)?;
        Ok(TraceFacts {
            path: path_of_bytes(self.path),
            json_bytes: self.json_bytes,
            gzipped: self.gzipped,
            meta: TraceMeta {
                schema_version: self.schema_version,
                base_time_ns: self.base_time_ns,
                display_time_unit: self.display_time_unit,
                rank: self.rank,
                rank_source: rank_source_of(self.rank_source)?,
                world_size: self.world_size,
                backend: self.backend,
                nccl_version: self.nccl_version,
                written_ranks: Vec::new(),
                hostname: None,
                process_groups: self
                    .process_groups
                    .into_iter()
                    .map(|g| ProcessGroup {
                        name: g.name,
                        desc: g.desc,
                        size: g.size,
                        ranks: g.ranks,
                    })
                    .collect(),
                devices: self
                    .devices
                    .into_iter()
                    .map(|d| Device {
                        id: d.id,
                        name: d.name,
                        total_global_mem: d.total_global_mem,
                        num_sms: d.num_sms,
                        compute_major: d.compute_major,
                        compute_minor: d.compute_minor,
                    })
                    .collect(),
            },
            events_total: self.events_total,
            events_kept: self.events_kept,
            flows: self.flows,
            skipped: self
                .skipped
                .into_iter()
                .map(|(c, r, n)| Ok(((c, skip_reason_of(r)?), n)))
                .collect::<Result<_, Bad>>()?,
            warnings: self.warnings,
            absurd_durations: self.absurd_durations,
        })
    }
}

/// A world size no trace could have recorded (the reader leaves out one
/// above [`MAX_WORLD_SIZE`]) is a damaged file.
fn world_size_in_range(w: Option<u32>) -> Result<(), Bad> {
    match w {
        Some(w) if w > MAX_WORLD_SIZE => {
            Err(Bad(format!("world size {w} is above {MAX_WORLD_SIZE}")))
        }
        _ => Ok(()),
    }
}

/// A path as the format stores it (since format 5): its bytes. On Unix a
/// path is bytes, so a trace whose name is not UTF-8 (`tr\xff.json.gz`)
/// keeps its name, and what is named after it from its `.lgraph` file
/// (timelines, the paths the Python package hands back) names it as its
/// trace does; format 4 stored UTF-8 text, `tr\u{FFFD}.json.gz`, which
/// named no file. Elsewhere the path's text, read lossily.
fn path_bytes(path: &Path) -> Vec<u8> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        path.as_os_str().as_bytes().to_vec()
    }
    #[cfg(not(unix))]
    {
        path.to_string_lossy().into_owned().into_bytes()
    }
}

/// The path [`path_bytes`] stored. Any bytes are a path on Unix; elsewhere
/// bytes that are not UTF-8 (a file written on Unix) are read lossily,
/// since the path only names the trace in what is reported.
fn path_of_bytes(bytes: Vec<u8>) -> PathBuf {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStringExt;
        PathBuf::from(std::ffi::OsString::from_vec(bytes))
    }
    #[cfg(not(unix))]
    {
        PathBuf::from(String::from_utf8_lossy(&bytes).into_owned())
    }
}
