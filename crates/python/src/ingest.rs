//! The per-rank ingest behind `lumos.distributed`: one trace file in, one
//! compact per-rank file out, and that file read back as the rank of a
//! job. One interface ([`ingest`], [`read_rank`]) whatever the format.
//!
//! The format today is the simplest one that gives back the rank's graph
//! exactly: the trace itself, copied as it is (the rank is built from it
//! when read, by the same `RankInput::from_trace` the CLI calls). It saves
//! no space and no time on the driver; the compact `.lgraph` files of
//! lumos-store replace it behind these two functions when that crate
//! lands.

use std::path::{Path, PathBuf};

use lumos_graph::RankInput;

use crate::errors::{Error, Kind, Result};

/// What [`ingest`] wrote.
#[derive(Debug, Clone)]
pub struct Ingested {
    /// The per-rank file.
    pub out: PathBuf,
    /// The rank.
    pub rank: u32,
    /// Tasks in its graph.
    pub tasks: u64,
    /// Bytes written.
    pub bytes: u64,
}

/// The name of the per-rank file of `trace`: its name without `.gz` and
/// `.json`, then the format's extension.
pub fn out_name(trace: &Path) -> String {
    let name = trace
        .file_name()
        .map_or_else(|| "trace".into(), |n| n.to_string_lossy().into_owned());
    let stem = name.strip_suffix(".gz").unwrap_or(&name);
    let stem = stem.strip_suffix(".json").unwrap_or(stem);
    format!("{stem}.rank.json.gz")
}

/// Ingests `trace` into `out_dir` (created if needed).
pub fn ingest(trace: &Path, out_dir: &Path) -> Result<Ingested> {
    let t = lumos_trace::read_path(trace)?;
    let input = RankInput::from_trace(&t);
    std::fs::create_dir_all(out_dir).map_err(|e| {
        Error::new(
            Kind::Io,
            format!("{}: cannot create: {e}", out_dir.display()),
        )
    })?;
    let out = out_dir.join(out_name(trace));
    let bytes = copy_atomic(trace, &out)?;
    Ok(Ingested {
        out,
        rank: input.meta.rank,
        tasks: input.graph.graph.tasks.len() as u64,
        bytes,
    })
}

/// Copies `from` to `to` through a temporary file beside it, so `to`
/// appears whole or not at all.
fn copy_atomic(from: &Path, to: &Path) -> Result<u64> {
    let tmp = to.with_extension(format!("tmp{}", std::process::id()));
    let io =
        |e: std::io::Error| Error::new(Kind::Io, format!("{}: cannot write: {e}", to.display()));
    let n = std::fs::copy(from, &tmp).map_err(io)?;
    std::fs::rename(&tmp, to).map_err(io)?;
    Ok(n)
}

/// Reads a per-rank file as the rank of a job.
pub fn read_rank(path: &Path) -> Result<RankInput> {
    let t = lumos_trace::read_path(path)?;
    Ok(RankInput::from_trace(&t))
}
