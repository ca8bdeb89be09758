//! `lumos ingest`: read and build each trace once, and write its graph as
//! a compact `.lgraph` file that every command takes in place of the trace.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;
use lumos_store::IngestSummary;
use rayon::prelude::*;
use serde::Serialize;

use crate::usage::usage;
use crate::{inputs, output, progress};

/// `lumos ingest` arguments.
#[derive(clap::Args)]
pub struct IngestArgs {
    /// Trace files (.json or .json.gz) or directories of them; `-` reads
    /// standard input.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Where to write: a file for one trace (its folder created if
    /// needed), a directory (created if needed) for several, or for one
    /// given a directory that is there or a path ending in `/`, each named
    /// after its trace (`rank3.json.gz` gives `rank3.lgraph`).
    #[arg(short, long)]
    pub out: PathBuf,
    /// Print JSON instead of one line per file.
    #[arg(long)]
    pub json: bool,
}

/// One file ingested, as `--json` prints it.
#[derive(Serialize)]
struct Ingested {
    trace: String,
    out: String,
    rank: u32,
    signature: String,
    tasks: u64,
    json_bytes: u64,
    bytes_written: u64,
}

impl From<&IngestSummary> for Ingested {
    fn from(s: &IngestSummary) -> Ingested {
        Ingested {
            trace: s.trace.display().to_string(),
            out: s.out.display().to_string(),
            rank: s.rank,
            signature: format!("{:016x}", s.signature.as_u64()),
            tasks: s.tasks,
            json_bytes: s.json_bytes,
            bytes_written: s.bytes_written,
        }
    }
}

/// Where each trace goes: into `out` as a file for a single trace that is
/// not given a directory (one there, or a path ending in `/`, which names
/// a directory to create), else into the directory `out`.
fn targets(files: &[PathBuf], out: &Path) -> Result<Vec<PathBuf>> {
    inputs::not_standard_output(
        out,
        "-o",
        "the .lgraph file to write, or a directory for several",
    )?;
    let names_a_dir = out
        .as_os_str()
        .to_string_lossy()
        .ends_with(std::path::MAIN_SEPARATOR);
    if files.len() == 1 && !out.is_dir() && !names_a_dir {
        // A folder above it that is a file: refused before the trace is
        // read, as for several traces (it failed only once written).
        file_folder(out)?;
        return Ok(vec![out.to_owned()]);
    }
    if out.exists() && !out.is_dir() {
        return Err(usage(format!(
            "-o {}: {} traces need a directory, and this is a file",
            out.display(),
            files.len()
        )));
    }
    // A folder above it that is a file: refused before any trace is read.
    inputs::output_dir(out, "-o")?;
    inputs::distinct_output_names(
        files.iter().map(PathBuf::as_path),
        "-o",
        lumos_store::lgraph_name,
    )?;
    Ok(files
        .iter()
        .map(|f| out.join(lumos_store::lgraph_name(f)))
        .collect())
}

/// Refuses `out`, the file to write one trace's graph to, when a folder
/// above it is there and is not a directory (a file, a device): a usage
/// error, checked before the trace is read.
fn file_folder(out: &Path) -> Result<()> {
    match inputs::folder_not_a_directory(out) {
        Some(p) => Err(usage(format!(
            "-o {}: {} is not a directory; -o names the file to write for one trace \
             (its folder created if needed), or a directory for several",
            out.display(),
            p.display()
        ))),
        None => Ok(()),
    }
}

/// What `lumos ingest` says of a trace it read no CPU or GPU task from:
/// its graph is written (a job's commands then name the rank and leave it
/// out), but nothing can be replayed from it alone.
fn no_tasks_note(trace: &Path) -> String {
    format!(
        "{}: no CPU or GPU task was read (`lumos inspect` counts the events skipped); \
         its graph is written, but replaying it alone is refused and a job leaves its rank out",
        trace.display()
    )
}

/// Runs `lumos ingest`; false when a trace could not be ingested (the
/// others still are).
pub fn run(a: &IngestArgs, out: &mut dyn Write) -> Result<bool> {
    let files = inputs::expand(&a.paths)?;
    if let Some(f) = files.iter().find(|f| inputs::is_lgraph(f)) {
        return Err(usage(format!(
            "{}: already a compact graph; give the traces to ingest",
            f.display()
        )));
    }
    let targets = targets(&files, &a.out)?;
    for t in &targets {
        inputs::output_not_an_input(t, &files, "-o")?;
    }
    // The directory to write into: -o for several traces, the file's
    // folder for one.
    let folder = match &targets[..] {
        [one] if *one == a.out => a.out.parent().filter(|p| !p.as_os_str().is_empty()),
        _ => Some(a.out.as_path()),
    };
    if let Some(d) = folder {
        lumos_trace::create_output_dir(d)?;
    }
    let bar = progress::count(files.len() as u64, "ingesting");
    let results: Vec<_> = files
        .par_iter()
        .zip(&targets)
        .map(|(f, t)| {
            let r = lumos_store::ingest_file(f, t);
            bar.inc(1);
            r
        })
        .collect();
    bar.finish_and_clear();
    let mut ok = true;
    let mut done = Vec::new();
    for r in results {
        match r {
            Ok(s) => {
                if s.tasks == 0 {
                    output::note(no_tasks_note(&s.trace));
                }
                done.push(Ingested::from(&s))
            }
            Err(e) => {
                output::error(e);
                ok = false;
            }
        }
    }
    if a.json {
        output::json(out, &done)?;
    } else {
        for d in &done {
            writeln!(
                out,
                "{} -> {}: rank {}, {} tasks, {:.1} MB JSON -> {:.2} MB",
                output::shown(&d.trace),
                output::shown(&d.out),
                d.rank,
                d.tasks,
                d.json_bytes as f64 / 1e6,
                d.bytes_written as f64 / 1e6
            )?;
        }
    }
    Ok(ok)
}
