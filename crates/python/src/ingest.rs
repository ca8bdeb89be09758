//! The per-rank ingest behind `lumos.distributed`: one trace file in, one
//! compact per-rank graph out (an `.lgraph` file of lumos-store, the file
//! `lumos ingest` writes), and that file read back as the rank of a job.
//! One interface ([`ingest`], [`read_rank`]) whatever the format.

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

/// Ingests `trace` into `out_dir` (created if needed); the file appears
/// whole or not at all. An `out_dir` that is a file (or under one) is a
/// `ConfigError` in the words of `lumos ingest -o`'s usage error
/// ([`crate::inputs::output_dir`]), not the bare "File exists (os error
/// 17)" of an I/O error.
pub fn ingest(trace: &Path, out_dir: &Path) -> Result<Ingested> {
    crate::inputs::output_dir(out_dir, "out_dir")?;
    lumos_trace::create_output_dir(out_dir).map_err(|e| Error::new(Kind::Io, e.to_string()))?;
    let out = out_dir.join(lumos_store::lgraph_name(trace));
    let done = lumos_store::ingest_file(trace, &out)?;
    Ok(Ingested {
        out,
        rank: done.rank,
        tasks: done.tasks,
        bytes: done.bytes_written,
    })
}

/// Reads a per-rank file as the rank of a job.
pub fn read_rank(path: &Path) -> Result<RankInput> {
    Ok(lumos_store::read_rank(path)?)
}
