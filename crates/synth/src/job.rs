//! Whole files: one rank's trace as text, and a job's ranks as gzip files.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use flate2::write::GzEncoder;
use flate2::Compression;
use rayon::prelude::*;

use crate::config::SynthConfig;
use crate::gen::push_us;
use crate::megatron::{Plan, Rank};

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
    /// Writing failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file (or `-` for a caller's writer).
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
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
    let plan = Plan::new(cfg);
    Ok(render(cfg, rank, &plan))
}

/// Writes one rank's trace (uncompressed JSON) to `w`.
pub fn write_rank<W: Write>(cfg: &SynthConfig, rank: usize, mut w: W) -> Result<(), SynthError> {
    let text = synthesize_rank(cfg, rank)?;
    w.write_all(text.as_bytes())
        .and_then(|()| w.flush())
        .map_err(|source| SynthError::Io {
            path: PathBuf::from("-"),
            source,
        })
}

/// Writes the ranks [`SynthConfig::ranks`] selects into `dir` (created if
/// needed) as `rank<N>.json.gz`, in parallel, and returns their paths in
/// rank order. Gzip at the fastest level: the traces are large and
/// repetitive, so even that shrinks them about tenfold.
pub fn write_job(cfg: &SynthConfig, dir: &Path) -> Result<Vec<PathBuf>, SynthError> {
    let ranks = cfg.selected_ranks();
    for &r in &ranks {
        check(cfg, r)?;
    }
    std::fs::create_dir_all(dir).map_err(|source| SynthError::Io {
        path: dir.to_owned(),
        source,
    })?;
    let plan = Plan::new(cfg);
    ranks
        .par_iter()
        .map(|&rank| {
            let path = dir.join(rank_file_name(rank));
            let text = render(cfg, rank, &plan);
            let io = |source| SynthError::Io {
                path: path.clone(),
                source,
            };
            let file = File::create(&path).map_err(io)?;
            let mut gz = GzEncoder::new(BufWriter::new(file), Compression::fast());
            gz.write_all(text.as_bytes()).map_err(io)?;
            gz.finish().map_err(io)?.flush().map_err(io)?;
            Ok(path)
        })
        .collect()
}

/// The trace of `rank`, given the job's pipeline plan.
fn render(cfg: &SynthConfig, rank: usize, plan: &Plan) -> String {
    let mut r = Rank::new(cfg, rank, true, cfg.noise, Some(plan));
    let mut out = String::with_capacity(1 << 20);
    header(cfg, rank, &mut out);
    r.g.out = out;
    r.g.metadata();
    // The profiler starts recording a few milliseconds before the first
    // profiled step; ranks do not start in lockstep.
    r.g.t = 5_000_000 + r.g.cpu.between(0, 200_000);
    for i in 0..cfg.steps {
        r.iteration(cfg.first_step + i);
    }
    let end = r.g.t + 20_000;
    let mut out = std::mem::take(&mut r.g.out);
    out.push_str(
        "{\"ph\":\"i\",\"s\":\"g\",\"name\":\"Record Window End\",\"pid\":\"\",\"tid\":\"\",\"ts\":",
    );
    push_us(&mut out, end);
    let _ = write!(out, "}}\n],\n\"traceName\":\"rank{rank}.json\"\n}}\n");
    out
}

/// Everything before `traceEvents`: device properties, distributed info
/// with the process groups, and the synthesis parameters.
fn header(cfg: &SynthConfig, rank: usize, out: &mut String) {
    let g = &cfg.gpu;
    let p = &cfg.parallel;
    out.push_str("{\n\"schemaVersion\":1,\n\"deviceProperties\":[\n");
    let per_node = g.network.gpus_per_node.max(1);
    for d in 0..per_node {
        let _ = writeln!(
            out,
            "{{\"id\":{d},\"name\":\"{}\",\"totalGlobalMem\":{},\"computeMajor\":{},\"computeMinor\":{},\"maxThreadsPerBlock\":1024,\"maxThreadsPerMultiprocessor\":2048,\"regsPerBlock\":65536,\"warpSize\":32,\"sharedMemPerBlock\":49152,\"numSms\":{},\"regsPerMultiprocessor\":65536,\"sharedMemPerBlockOptin\":232448,\"sharedMemPerMultiprocessor\":233472}}{}",
            g.device_name,
            g.memory_bytes,
            g.compute_capability.0,
            g.compute_capability.1,
            g.num_sms,
            if d + 1 < per_node { "," } else { "" }
        );
    }
    out.push_str("],\n");
    let groups = p.groups_of(rank);
    let _ = write!(
        out,
        "\"distributedInfo\":{{\"backend\":\"nccl\",\"rank\":{rank},\"world_size\":{},\"pg_count\":{},\"pg_config\":[",
        p.world_size(),
        groups.len()
    );
    for (i, pg) in groups.iter().enumerate() {
        let ranks: Vec<String> = pg.ranks.iter().map(|r| r.to_string()).collect();
        let _ = write!(
            out,
            "{}{{\"pg_name\":\"{}\",\"pg_desc\":\"{}\",\"backend_config\":\"cuda:nccl\",\"pg_size\":{},\"ranks\":[{}]}}",
            if i > 0 { "," } else { "" },
            pg.name,
            pg.kind.description(),
            pg.ranks.len(),
            ranks.join(",")
        );
    }
    out.push_str("],\"nccl_version\":\"2.21.5\"},\n\"record_shapes\":1,\n");
    let c = p.coord(rank);
    let _ = writeln!(
        out,
        "\"lumos_synth\":{{\"model\":\"{}\",\"layers\":{},\"hidden\":{},\"heads\":{},\"seq_len\":{},\"micro_batch\":{},\"tp\":{},\"pp\":{},\"dp\":{},\"microbatches\":{},\"sequence_parallel\":{},\"distributed_optimizer\":{},\"gpu\":\"{}\",\"seed\":{},\"noise\":{},\"stage\":{},\"tp_rank\":{},\"dp_rank\":{}}},",
        cfg.model.name,
        cfg.model.layers,
        cfg.model.hidden,
        cfg.model.heads,
        cfg.model.seq_len,
        cfg.model.micro_batch,
        p.tp,
        p.pp,
        p.dp,
        p.microbatches,
        p.sp(),
        p.distributed_optimizer,
        g.name,
        cfg.seed,
        cfg.noise,
        c.pp,
        c.tp,
        c.dp
    );
    let _ = write!(
        out,
        "\"displayTimeUnit\":\"ms\",\n\"baseTimeNanoseconds\":{BASE_TIME_NS},\n\"traceEvents\":[\n"
    );
}
