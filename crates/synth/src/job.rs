//! Whole files: one rank's trace as text, and a job's ranks as gzip files.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use lumos_trace::{DeviceProperties, DistributedInfo, KinetoWriter, Layout, PgConfig, WriteError};
use rayon::prelude::*;

use crate::config::SynthConfig;
use crate::lockstep::run_column;
use crate::megatron::Rank;

/// Why a job could not be synthesized.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SynthError {
    /// The config does not describe a runnable job.
    #[error("invalid config: {0}")]
    InvalidConfig(String),
    /// A rank outside the job was asked for.
    #[error("rank {rank} is outside a job of {world} ranks")]
    RankOutOfRange {
        /// The rank asked for.
        rank: usize,
        /// Ranks in the job.
        world: usize,
    },
    /// Writing to a caller's writer failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// `-`: the caller's writer.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// Creating the job's directory or writing a rank's file failed (the
    /// file is not left behind).
    #[error(transparent)]
    Write(#[from] WriteError),
    /// The caller's progress hook asked [`write_job_with`] to stop; the
    /// files already written stay.
    #[error("stopped before every rank was written")]
    Stopped,
}

/// Absolute time of `ts == 0` in every synthesized trace (June 2024).
const BASE_TIME_NS: i64 = 1_717_171_717_000_000_000;

/// The file name [`write_job`] gives a rank: `rank<N>.json.gz`.
pub fn rank_file_name(rank: usize) -> String {
    format!("rank{rank}.json.gz")
}

fn check(cfg: &SynthConfig, rank: usize) -> Result<(), SynthError> {
    cfg.validate()?;
    let world = cfg.parallel.world_size();
    if rank >= world {
        return Err(SynthError::RankOutOfRange { rank, world });
    }
    Ok(())
}

/// One rank's Kineto trace, as JSON text.
pub fn synthesize_rank(cfg: &SynthConfig, rank: usize) -> Result<String, SynthError> {
    check(cfg, rank)?;
    let (_, text) = render(cfg, &[rank])?.pop().expect("one rank asked for");
    // The writer writes UTF-8 only: escapes are ASCII, text comes from
    // `&str`s.
    Ok(String::from_utf8(text).expect("the trace writer writes UTF-8"))
}

/// Writes one rank's trace (uncompressed JSON) to `w`.
pub fn write_rank<W: Write>(cfg: &SynthConfig, rank: usize, mut w: W) -> Result<(), SynthError> {
    check(cfg, rank)?;
    let (_, text) = render(cfg, &[rank])?.pop().expect("one rank asked for");
    w.write_all(&text)
        .and_then(|()| w.flush())
        .map_err(|source| SynthError::Io {
            path: PathBuf::from("-"),
            source,
        })
}

/// Writes the ranks [`SynthConfig::ranks`] selects into `dir` (created if
/// needed) as `rank<N>.json.gz`, and returns their paths in rank order.
/// The stages of each pipeline column are timed together, columns in
/// parallel. Gzip at the fastest level: the traces are large and
/// repetitive, so even that shrinks them about tenfold. Each file appears
/// whole or not at all ([`lumos_trace::write_gz_atomic`]).
pub fn write_job(cfg: &SynthConfig, dir: &Path) -> Result<Vec<PathBuf>, SynthError> {
    write_job_with(cfg, dir, &|_| true)
}

/// As [`write_job`], calling `written` with each file as it lands (from
/// rayon's threads, in no order), for a progress bar: a large job takes
/// minutes. `written` returning false stops the job before its next
/// pipeline column ([`SynthError::Stopped`]); where no column is left to
/// start, every file is written and the job ends as it would have.
pub fn write_job_with(
    cfg: &SynthConfig,
    dir: &Path,
    written: &(dyn Fn(&Path) -> bool + Sync),
) -> Result<Vec<PathBuf>, SynthError> {
    let ranks = cfg.selected_ranks();
    for &r in &ranks {
        check(cfg, r)?;
    }
    lumos_trace::create_output_dir(dir)?;
    let p = cfg.parallel;
    let mut columns: BTreeMap<(usize, usize), Vec<usize>> = BTreeMap::new();
    for &r in &ranks {
        let c = p.coord(r);
        columns.entry((c.tp, c.dp)).or_default().push(r);
    }
    let stop = AtomicBool::new(false);
    let files: Vec<Vec<(usize, PathBuf)>> = columns
        .into_values()
        .collect::<Vec<_>>()
        .par_iter()
        .map(|col| {
            if stop.load(Ordering::Relaxed) {
                return Err(SynthError::Stopped);
            }
            render(cfg, col)?
                .into_par_iter()
                .map(|(rank, text)| {
                    let path = dir.join(rank_file_name(rank));
                    lumos_trace::write_gz_atomic(&path, |w| w.write_all(&text))?;
                    if !written(&path) {
                        stop.store(true, Ordering::Relaxed);
                    }
                    Ok((rank, path))
                })
                .collect::<Result<Vec<_>, SynthError>>()
        })
        .collect::<Result<_, _>>()?;
    // A stop asked for while the last columns were being written skipped
    // none: every file is there, which `Stopped` would deny.
    let mut all: Vec<(usize, PathBuf)> = files.into_iter().flatten().collect();
    all.sort();
    Ok(all.into_iter().map(|(_, p)| p).collect())
}

/// The traces of `ranks` (all in one pipeline column), timed together with
/// the rest of their column, as JSON text in the order asked.
fn render(cfg: &SynthConfig, ranks: &[usize]) -> Result<Vec<(usize, Vec<u8>)>, SynthError> {
    let p = cfg.parallel;
    let Some(&first) = ranks.first() else {
        return Ok(Vec::new());
    };
    let c = p.coord(first);
    let mut emit = vec![false; p.pp];
    for &r in ranks {
        emit[p.coord(r).pp] = true;
    }
    let setup = |r: &mut Rank<'_>| {
        if r.g.emit {
            header(cfg, r.g.rank, &mut r.g.out);
            r.g.metadata();
        }
    };
    let column = run_column(cfg, c.tp, c.dp, &emit, &setup)?;
    let mut out: Vec<(usize, Vec<u8>)> = Vec::with_capacity(ranks.len());
    for mut r in column.into_iter().filter(|r| r.g.emit) {
        let end = r.g.t + 20_000;
        let rank = r.g.rank;
        let w = &mut r.g.out;
        w.global_instant("Record Window End", end);
        w.trace_name(&format!("rank{rank}.json"));
        let bytes = std::mem::replace(w, KinetoWriter::in_memory(Layout::Lines, 0)).into_bytes();
        out.push((rank, bytes));
    }
    out.sort_by_key(|&(r, _)| ranks.iter().position(|&x| x == r));
    Ok(out)
}

/// Everything before `traceEvents`: device properties, distributed info
/// with the process groups, and the synthesis parameters.
fn header(cfg: &SynthConfig, rank: usize, out: &mut KinetoWriter<Vec<u8>>) {
    let g = &cfg.gpu;
    let p = &cfg.parallel;
    out.schema_version(1);
    let devices: Vec<DeviceProperties> = (0..cfg.network().gpus_per_node.max(1))
        .map(|d| DeviceProperties {
            id: d as i64,
            name: g.device_name,
            total_global_mem: g.memory_bytes,
            compute_major: g.compute_capability.0,
            compute_minor: g.compute_capability.1,
            max_threads_per_block: 1024,
            max_threads_per_multiprocessor: 2048,
            regs_per_block: 65536,
            warp_size: 32,
            shared_mem_per_block: 49152,
            num_sms: g.num_sms,
            regs_per_multiprocessor: 65536,
            shared_mem_per_block_optin: 232448,
            shared_mem_per_multiprocessor: 233472,
        })
        .collect();
    out.device_properties(&devices);
    let written: Vec<u32> = cfg
        .selected_ranks()
        .into_iter()
        .filter_map(|r| u32::try_from(r).ok())
        .collect();
    let groups = p.groups_of(rank);
    let ranks: Vec<Vec<i64>> = groups
        .iter()
        .map(|pg| pg.ranks.iter().map(|&r| r as i64).collect())
        .collect();
    let configs: Vec<PgConfig> = groups
        .iter()
        .zip(&ranks)
        .map(|(pg, ranks)| PgConfig {
            name: &pg.name,
            desc: pg.kind.description(),
            backend_config: "cuda:nccl",
            size: pg.ranks.len() as u64,
            ranks,
        })
        .collect();
    out.distributed_info(&DistributedInfo {
        backend: Some("nccl"),
        rank: Some(rank as u64),
        world_size: Some(p.world_size() as u64),
        process_groups: Some(&configs),
        nccl_version: Some("2.21.5"),
        // Readers take a subset written on purpose (one rank per stage) as
        // the whole set; all ranks need no list (it would be the world).
        written_ranks: (written.len() < p.world_size()).then_some(written.as_slice()),
        merged_ranks: None,
    });
    out.member_int("record_shapes", 1);
    let c = p.coord(rank);
    out.member_object("lumos_synth")
        .str("model", &cfg.model.name)
        .uint("layers", cfg.model.layers as u64)
        .uint("hidden", cfg.model.hidden as u64)
        .uint("heads", cfg.model.heads as u64)
        .uint("seq_len", cfg.model.seq_len as u64)
        .uint("micro_batch", cfg.model.micro_batch as u64)
        .uint("tp", p.tp as u64)
        .uint("pp", p.pp as u64)
        .uint("dp", p.dp as u64)
        .uint("microbatches", p.microbatches as u64)
        .bool("sequence_parallel", p.sp())
        .bool("distributed_optimizer", p.distributed_optimizer)
        .uint("virtual_stages", p.virtual_stages as u64)
        .str("precision", cfg.training.precision.name())
        .str("recompute", cfg.training.recompute.name())
        .str("gpu", g.name)
        .uint("seed", cfg.seed)
        .float("noise", cfg.noise)
        .uint("stage", c.pp as u64)
        .uint("tp_rank", c.tp as u64)
        .uint("dp_rank", c.dp as u64);
    out.display_time_unit("ms");
    let skew = match &cfg.hosts {
        Some(h) => {
            out.member_str("hostname", &format!("node{}", h.host_of(rank)));
            h.skew_of(rank)
        }
        None => 0,
    };
    out.base_time_ns(BASE_TIME_NS.saturating_add(skew));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ModelPreset, Parallelism};
    use lumos_models::GpuSpec;

    #[test]
    fn a_rank_that_cannot_be_written_leaves_no_file_behind() {
        let dir = std::env::temp_dir().join(format!("lumos-synth-fail-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        // A directory where rank 0's file goes: its rename fails.
        let blocked = dir.join(rank_file_name(0));
        std::fs::create_dir_all(&blocked).unwrap();
        let cfg = SynthConfig::new(
            ModelPreset::preset("gpt-tiny").unwrap(),
            Parallelism::new(1, 1, 2, 2),
            GpuSpec::h100(),
        );
        let err = write_job(&cfg, &dir).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("{}: cannot write: ", blocked.display())),
            "{err}"
        );
        let names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
        assert!(blocked.is_dir());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
