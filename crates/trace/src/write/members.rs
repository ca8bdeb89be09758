//! The structured top-level members: `deviceProperties` entries and
//! `distributedInfo` with its process groups.

use super::json::{push_i64, push_u64};
use super::Fields;

/// One `deviceProperties` entry, with the fields Kineto records for a CUDA
/// device.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeviceProperties<'a> {
    /// Device index.
    pub id: i64,
    /// Marketing name.
    pub name: &'a str,
    /// `totalGlobalMem`, bytes.
    pub total_global_mem: u64,
    /// `computeMajor`.
    pub compute_major: u32,
    /// `computeMinor`.
    pub compute_minor: u32,
    /// `maxThreadsPerBlock`.
    pub max_threads_per_block: u32,
    /// `maxThreadsPerMultiprocessor`.
    pub max_threads_per_multiprocessor: u32,
    /// `regsPerBlock`.
    pub regs_per_block: u32,
    /// `warpSize`.
    pub warp_size: u32,
    /// `sharedMemPerBlock`, bytes.
    pub shared_mem_per_block: u32,
    /// `numSms`.
    pub num_sms: u32,
    /// `regsPerMultiprocessor`.
    pub regs_per_multiprocessor: u32,
    /// `sharedMemPerBlockOptin`, bytes.
    pub shared_mem_per_block_optin: u32,
    /// `sharedMemPerMultiprocessor`, bytes.
    pub shared_mem_per_multiprocessor: u32,
}

impl DeviceProperties<'_> {
    pub(super) fn write(&self, buf: &mut Vec<u8>) {
        let mut f = Fields::new(buf, b"{", b"}", b"{}");
        f.int("id", self.id)
            .str("name", self.name)
            .uint("totalGlobalMem", self.total_global_mem);
        for (key, v) in [
            ("computeMajor", self.compute_major),
            ("computeMinor", self.compute_minor),
            ("maxThreadsPerBlock", self.max_threads_per_block),
            (
                "maxThreadsPerMultiprocessor",
                self.max_threads_per_multiprocessor,
            ),
            ("regsPerBlock", self.regs_per_block),
            ("warpSize", self.warp_size),
            ("sharedMemPerBlock", self.shared_mem_per_block),
            ("numSms", self.num_sms),
            ("regsPerMultiprocessor", self.regs_per_multiprocessor),
            ("sharedMemPerBlockOptin", self.shared_mem_per_block_optin),
            (
                "sharedMemPerMultiprocessor",
                self.shared_mem_per_multiprocessor,
            ),
        ] {
            f.uint(key, u64::from(v));
        }
    }
}

/// `distributedInfo`: this file's place in the job. Absent fields are not
/// written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DistributedInfo<'a> {
    /// `backend` (`"nccl"`).
    pub backend: Option<&'a str>,
    /// `rank`; `None` for a file that holds several ranks (a merged job).
    pub rank: Option<u64>,
    /// `world_size`.
    pub world_size: Option<u64>,
    /// `pg_config` (and `pg_count`, its length).
    pub process_groups: Option<&'a [PgConfig<'a>]>,
    /// `nccl_version`.
    pub nccl_version: Option<&'a str>,
    /// `written_ranks` (lumos's own field, not PyTorch's): every rank
    /// written with this file when they are a subset of the world, such as
    /// `lumos synth`'s one rank per pipeline stage. A reader takes those
    /// files as the whole set: the other ranks were never written, so
    /// they are not missing.
    pub written_ranks: Option<&'a [u32]>,
    /// `merged_ranks` (lumos's own field): the ranks a timeline lumos
    /// merged into one file holds (`--merge`), each as the process `rank
    /// N`. The reader refuses such a file (it reads one rank per file):
    /// this field, not the process names, is how it knows one.
    pub merged_ranks: Option<&'a [u32]>,
}

impl DistributedInfo<'_> {
    pub(super) fn write(&self, buf: &mut Vec<u8>) {
        let mut f = Fields::new(buf, b"{", b"}", b"{}");
        if let Some(b) = self.backend {
            f.str("backend", b);
        }
        if let Some(r) = self.rank {
            f.uint("rank", r);
        }
        if let Some(w) = self.world_size {
            f.uint("world_size", w);
        }
        if let Some(pgs) = self.process_groups {
            f.uint("pg_count", pgs.len() as u64);
            let buf = f.key("pg_config");
            buf.push(b'[');
            for (i, pg) in pgs.iter().enumerate() {
                if i > 0 {
                    buf.push(b',');
                }
                pg.write(buf);
            }
            buf.push(b']');
        }
        if let Some(v) = self.nccl_version {
            f.str("nccl_version", v);
        }
        for (key, ranks) in [
            ("written_ranks", self.written_ranks),
            ("merged_ranks", self.merged_ranks),
        ] {
            let Some(ranks) = ranks else { continue };
            let buf = f.key(key);
            buf.push(b'[');
            for (i, &r) in ranks.iter().enumerate() {
                if i > 0 {
                    buf.push(b',');
                }
                push_u64(buf, u64::from(r));
            }
            buf.push(b']');
        }
    }
}

/// One `pg_config` entry of `distributedInfo`: a process group.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PgConfig<'a> {
    /// `pg_name`.
    pub name: &'a str,
    /// `pg_desc` (`"default_pg"`, `"TENSOR_MODEL_PARALLEL_GROUP"`).
    pub desc: &'a str,
    /// `backend_config` (`"cuda:nccl"`).
    pub backend_config: &'a str,
    /// `pg_size`.
    pub size: u64,
    /// `ranks`: global ranks in the group.
    pub ranks: &'a [i64],
}

impl PgConfig<'_> {
    pub(super) fn write(&self, buf: &mut Vec<u8>) {
        let mut f = Fields::new(buf, b"{", b"}", b"{}");
        f.str("pg_name", self.name)
            .str("pg_desc", self.desc)
            .str("backend_config", self.backend_config)
            .uint("pg_size", self.size);
        // PyTorch writes these without spaces.
        let buf = f.key("ranks");
        buf.push(b'[');
        for (i, &r) in self.ranks.iter().enumerate() {
            if i > 0 {
                buf.push(b',');
            }
            push_i64(buf, r);
        }
        buf.push(b']');
    }
}
