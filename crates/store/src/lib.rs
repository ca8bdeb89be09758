//! Compact per-rank graph files (`.lgraph`): one trace, read and built
//! once, kept as its graph and everything the commands report about it, so
//! that the job-level work (grouping ranks, matching collectives, the
//! joint replay) runs on small files instead of traces.
//!
//! Ingest is a pure function of one file ([`ingest_file`]: a trace in, an
//! `.lgraph` file out), so it can run anywhere: a job array on a cluster,
//! Ray tasks, one process per file. Reading gives back the same values the
//! trace would have given:
//!
//! - [`read_summary`]: the rank, its communication program's signature,
//!   its measured steps, sizes; only the file's first section is read, so
//!   a driver can group thousands of ranks by program from small reads.
//! - [`read_program`]: the summary's program plus two numbers per
//!   communication task, what [`lumos_graph::ProgramGroups`] models a
//!   group's peers from.
//! - [`read_rank`]: the [`RankInput`] the job functions
//!   ([`lumos_graph::assemble`]) take; [`read_stored`] everything
//!   ([`StoredRank`]: also what `lumos inspect` reports of the trace).
//! - [`prepare`] and [`sort`]: several inputs, traces or `.lgraph` files,
//!   each trace built into its rank as it is read and dropped, then taken
//!   as one job or one by one, as every front end decides it.
//!
//! The format (docs/LGRAPH.md): a fixed 64-byte prefix (magic bytes,
//! format version, the writer's lumos version), a table of sections with
//! their offsets, lengths and checksums, and the sections, each one
//! postcard-encoded record of mirror types. A reader rejects other format
//! versions with an error that says to ingest again; a truncated or
//! damaged file is an error naming the file, never a panic or an
//! allocation larger than the file.
//!
//! ```no_run
//! # fn main() -> Result<(), lumos_store::StoreError> {
//! use std::path::Path;
//!
//! let done = lumos_store::ingest_file(Path::new("rank0.json.gz"), Path::new("rank0.lgraph"))?;
//! let summary = lumos_store::read_summary(Path::new("rank0.lgraph"))?;
//! assert_eq!(summary.rank, done.rank);
//! let input = lumos_store::read_rank(Path::new("rank0.lgraph"))?;
//! assert_eq!(input.graph.graph.tasks.len() as u64, summary.tasks);
//! # Ok(())
//! # }
//! ```
#![deny(missing_docs)]

mod error;
mod format;
mod memory;
mod prepared;
mod rec;
mod representatives;
mod stored;

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use lumos_graph::{ProgramSignature, RankInput, RankProgram};
use serde::de::DeserializeOwned;
use serde::Serialize;

pub use error::{Problem, StoreError};
pub use format::{has_magic, FORMAT_VERSION, MAGIC};
pub use memory::{BadMemoryLimit, MemoryGuard, NoRoomToReplay, OverMemoryLimit, ReadFor};
pub use prepared::{prepare, read_rank_input, sort, BuiltTrace, JobChoice, Prepared, Sorted};
pub use representatives::{load_representatives, InputError, Representatives};
pub use stored::{program_of, RankSummary, Source, StoredRank, TraceFacts};

use format::{Container, Tag, FACT, GRPH, HEAD, PROG};
use rec::{Bad, FactsRec, GraphSection, HeadRec, TimingRec};

/// The file extension of compact per-rank graphs, without the dot.
pub const EXTENSION: &str = "lgraph";

/// The name of the compact file of the trace at `trace`, as every front
/// end writes it (`lumos ingest`, the Python package's `ingest_rank`):
/// the trace's file name without `.gz`, then without `.json`, then
/// `.lgraph` (`rank3.json.gz` gives `rank3.lgraph`). On Unix a name that
/// is not UTF-8 keeps its bytes (`tr\xff.json.gz` gives `tr\xff.lgraph`,
/// [`lumos_trace::edit_file_name`]).
pub fn lgraph_name(trace: &Path) -> OsString {
    let name = trace.file_name().unwrap_or("trace".as_ref());
    lumos_trace::edit_file_name(name, |name| {
        let stem = name.strip_suffix(b".gz").unwrap_or(name);
        let stem = stem.strip_suffix(b".json").unwrap_or(stem);
        [stem, b".", EXTENSION.as_bytes()].concat()
    })
}

/// True for a path whose name ends in `.lgraph`.
pub fn is_lgraph_path(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == EXTENSION)
}

/// True when the file at `path` is a compact graph: named `.lgraph`, or
/// a regular file starting with its magic bytes (a file renamed, or
/// without extension). Only a regular file is looked into: the bytes read
/// from a pipe (`lumos replay <(zcat trace.json.gz)`, `/dev/stdin`) would
/// be gone for the reader, so such an input is a compact graph only by
/// its name.
pub fn is_lgraph_file(path: &Path) -> bool {
    use std::io::Read;
    if is_lgraph_path(path) {
        return true;
    }
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return false;
    }
    let mut head = [0u8; 8];
    std::fs::File::open(path)
        .and_then(|mut r| r.read_exact(&mut head))
        .is_ok_and(|()| has_magic(&head))
}

/// What [`ingest_file`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngestSummary {
    /// The trace read.
    pub trace: PathBuf,
    /// The file written.
    pub out: PathBuf,
    /// Its rank.
    pub rank: u32,
    /// Its program's signature.
    pub signature: ProgramSignature,
    /// Tasks in its graph.
    pub tasks: u64,
    /// Uncompressed JSON size of the trace.
    pub json_bytes: u64,
    /// Size of the file written.
    pub bytes_written: u64,
}

/// Reads the trace at `trace`, builds its graph and writes it to `out`
/// (atomically: the file appears whole or not at all). The same trace
/// gives the same bytes, whatever machine ingests it, except for the
/// recorded path and modification time of the trace.
pub fn ingest_file(trace: &Path, out: &Path) -> Result<IngestSummary, StoreError> {
    // Read straight into the rank's build: the events are never all in
    // memory.
    let mut sink = lumos_graph::CommSink::new();
    let t = lumos_trace::read_path_into(trace, &|_| {}, &mut sink)
        .map_err(|e| StoreError::new(trace, Problem::Trace(Box::new(e))))?;
    let stored = StoredRank::from_sink(t, sink, Source::of_file(trace));
    let bytes_written = write_stored_file(&stored, out)?;
    Ok(IngestSummary {
        trace: trace.to_owned(),
        out: out.to_owned(),
        rank: stored.summary.rank,
        signature: stored.summary.signature,
        tasks: stored.summary.tasks,
        json_bytes: stored.summary.json_bytes,
        bytes_written,
    })
}

fn encode<T: Serialize>(v: &T) -> Vec<u8> {
    // Writing into a Vec cannot fail, and the records hold nothing serde
    // could refuse (no maps with non-string keys in a self-describing
    // sense: postcard writes any serde data model value).
    postcard::to_stdvec(v).unwrap_or_default()
}

/// Writes `rank` as an `.lgraph` file into `w`; returns the bytes written.
pub fn write_stored(rank: &StoredRank, w: &mut dyn Write) -> std::io::Result<u64> {
    let sections: Vec<(Tag, Vec<u8>)> = vec![
        (HEAD, encode(&HeadRec::of(&rank.summary))),
        (PROG, encode(&rec::program_rec(&rank.program))),
        (FACT, encode(&FactsRec::of(&rank.facts))),
        (GRPH, encode(&GraphSection::of(rank))),
    ];
    format::write_file(w, &sections)
}

/// Writes `rank` to `path` atomically (a temporary file renamed into
/// place); returns the bytes written.
pub fn write_stored_file(rank: &StoredRank, path: &Path) -> Result<u64, StoreError> {
    lumos_trace::write_atomic(path, |w| write_stored(rank, w))
        .map_err(|e| StoreError::new(path, Problem::Write(Box::new(e))))
}

fn decode<T: DeserializeOwned>(path: &Path, tag: &str, bytes: &[u8]) -> Result<T, StoreError> {
    let corrupt = |what: String| StoreError::new(path, Problem::Corrupt(what));
    match postcard::take_from_bytes(bytes) {
        Ok((record, [])) => Ok(record),
        Ok((_, rest)) => Err(corrupt(format!(
            "section {tag} is longer than its record ({} bytes left over)",
            rest.len()
        ))),
        Err(e) => Err(corrupt(format!("section {tag} cannot be decoded: {e}"))),
    }
}

fn bad(path: &Path) -> impl Fn(Bad) -> StoreError + '_ {
    move |b| StoreError::new(path, Problem::Corrupt(b.0))
}

/// Reads the summary of the `.lgraph` file at `path`: its first section
/// only (a few hundred bytes).
pub fn read_summary(path: &Path) -> Result<RankSummary, StoreError> {
    let mut c = Container::open(path)?;
    summary_of(path, &mut c)
}

fn summary_of(path: &Path, c: &mut Container<'_>) -> Result<RankSummary, StoreError> {
    let head: HeadRec = decode(path, "HEAD", &c.section(HEAD)?)?;
    head.into_summary().map_err(bad(path))
}

/// Reads what [`lumos_graph::ProgramGroups`] needs of the rank: its
/// summary's program and its communication timings, not its graph.
pub fn read_program(path: &Path) -> Result<(RankSummary, RankProgram), StoreError> {
    let mut c = Container::open(path)?;
    let summary = summary_of(path, &mut c)?;
    let timings: TimingRec = decode(path, "PROG", &c.section(PROG)?)?;
    let program = RankProgram {
        rank: summary.rank,
        signature: summary.signature,
        steps_ns: summary.steps_ns.clone(),
        comms: timings.into_timings(),
    };
    if program.comms.len() as u64 != summary.comm_tasks {
        return Err(StoreError::new(
            path,
            Problem::Corrupt("the program does not have the summary's communication tasks".into()),
        ));
    }
    Ok((summary, program))
}

/// Reads the whole file. Its summary and program, which
/// [`read_summary`] and [`read_program`] read alone, must be what the
/// graph and the facts give again ([`program_of`]), else the file is
/// corrupt.
pub fn read_stored(path: &Path) -> Result<StoredRank, StoreError> {
    let mut c = Container::open(path)?;
    let summary = summary_of(path, &mut c)?;
    let timings: TimingRec = decode(path, "PROG", &c.section(PROG)?)?;
    let facts: FactsRec = decode(path, "FACT", &c.section(FACT)?)?;
    let mut facts = facts.into_facts().map_err(bad(path))?;
    let section: GraphSection = decode(path, "GRPH", &c.section(GRPH)?)?;
    let (graph, report) = section.into_parts().map_err(bad(path))?;
    facts.meta.hostname.clone_from(&graph.host);
    let comms = timings.into_timings();
    if comms.len() != graph.comms.len() {
        return Err(StoreError::new(
            path,
            Problem::Corrupt("the program does not match the graph's communication tasks".into()),
        ));
    }
    // The summary and the program, read alone by representatives (to
    // group ranks, to model a group's peers), must say what the rest of
    // the file does: a file whose checksums match but whose summary was
    // made up (written by another program, or edited and its checksums
    // recomputed) put its rank in another group, or gave its group other
    // measured steps, and replayed without a word. Ingest derived both
    // from the graph (`StoredRank::of`), so they are derived again here
    // (linear in the tasks, next to decoding them) and must be equal.
    let program = program_of(&graph);
    let agree = summary.rank == graph.rank
        && summary.rank == facts.meta.rank
        && summary.rank_source == facts.meta.rank_source
        && summary.world_size == facts.meta.world_size
        && summary.tasks == graph.graph.tasks.len() as u64
        && summary.comm_tasks == graph.comms.len() as u64
        && summary.devices as usize == facts.meta.devices.len()
        && summary.json_bytes == facts.json_bytes
        && summary.signature == program.signature
        && summary.steps_ns == program.steps_ns
        && summary.step_names == stored::step_names(&graph);
    if !agree {
        return Err(StoreError::new(
            path,
            Problem::Corrupt("the summary does not match the graph or the trace's facts".into()),
        ));
    }
    if comms != program.comms {
        return Err(StoreError::new(
            path,
            Problem::Corrupt("the program's communication timings do not match the graph's".into()),
        ));
    }
    Ok(StoredRank {
        summary,
        facts,
        graph,
        report,
        program,
        compact: Some(path.to_owned()),
    })
}

/// Reads the rank as the job functions take it ([`lumos_graph::assemble`],
/// [`lumos_graph::RankInput`]): what `RankInput::from_trace` gives on the
/// trace it was ingested from.
pub fn read_rank(path: &Path) -> Result<RankInput, StoreError> {
    Ok(read_stored(path)?.into_input())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record followed by bytes it does not use: the section is longer
    /// than what was written into it, so it is not what the writer wrote.
    #[test]
    fn a_section_longer_than_its_record_is_corrupt() {
        let path = Path::new("rank.lgraph");
        let record = postcard::to_allocvec(&(7u32, String::from("x"))).unwrap();
        assert_eq!(decode::<(u32, String)>(path, "HEAD", &record).unwrap().0, 7);
        let longer = [record.as_slice(), &[0, 0]].concat();
        let m = decode::<(u32, String)>(path, "HEAD", &longer)
            .unwrap_err()
            .to_string();
        assert!(m.contains("rank.lgraph"), "{m}");
        assert!(
            m.contains("section HEAD is longer than its record (2 bytes left over)"),
            "{m}"
        );
    }

    #[test]
    fn compact_files_are_named_after_their_traces() {
        assert_eq!(lgraph_name(Path::new("a/rank3.json.gz")), "rank3.lgraph");
        assert_eq!(lgraph_name(Path::new("rank3.json")), "rank3.lgraph");
        assert_eq!(lgraph_name(Path::new("x.gz")), "x.lgraph");
        // Only the trace's own suffixes go: a dot inside the name stays.
        assert_eq!(
            lgraph_name(Path::new("run.v2.pt.trace.json")),
            "run.v2.pt.trace.lgraph"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_name_that_is_not_utf8_keeps_its_bytes() {
        use std::os::unix::ffi::{OsStrExt, OsStringExt};
        // Lossy, both were `tr\u{FFFD}.lgraph`: one would replace the other.
        let name = |b: &[u8]| lgraph_name(Path::new(std::ffi::OsStr::from_bytes(b)));
        assert_eq!(name(b"d/tr\xff.json.gz").into_vec(), b"tr\xff.lgraph");
        assert_ne!(name(b"tr\xff.json.gz"), name(b"tr\xfe.json.gz"));
    }
}
