//! The timelines of a job's ranks as one file: each rank a process
//! (`rank N`, listed in rank order), its threads and streams the threads of
//! that process under their own names, every event and flow kept.
//!
//! Its `distributedInfo` is the job's, not one rank's: no `rank` (the file
//! holds several), the world size the ranks recorded (else how many there
//! are), the backend and NCCL version the first rank recording them gave,
//! every distinct process group of every rank, `written_ranks` (the
//! ranks in the file) when they are fewer than the world, and
//! `merged_ranks` (the ranks in the file, always): lumos's mark of a
//! merged timeline, which its reader refuses as an input (it reads one
//! rank per file).
//!
//! A merged prediction (`lumos predict --out DIR --merge`) also states
//! what its stages were built from, as a top-level `predictedFrom` of the
//! job: `stages`, one object per predicted stage in the file, each with
//! the fields a stage's own timeline states (`trace`, its traced `rank`
//! and `stage`, `predicted_stage`) and `predicted_rank`, the stage's rank
//! in the predicted job, which is its process (`rank N`) in the file.

use std::io::{self, Write};

use lumos_graph::{ProcKind, RankMeta, TraceAbout};
use lumos_trace::{DistributedInfo, KinetoWriter, Layout, PgConfig};

use super::{write_devices, PredictedFrom, Timeline, TimelineSource};

/// The timelines of a job's ranks, to be written as one trace.
pub struct MergedTimeline<'a> {
    ranks: Vec<Timeline<'a>>,
}

impl<'a> MergedTimeline<'a> {
    /// The ranks' timelines (replayed or predicted, in any order) as one.
    /// Each keeps its own trace's clock, moved onto the first one's
    /// `baseTimeNanoseconds` where they differ.
    pub fn new(mut ranks: Vec<Timeline<'a>>) -> MergedTimeline<'a> {
        let base0 = ranks.first().and_then(|t| t.base_time_ns);
        for t in &mut ranks {
            onto_base(t, base0);
        }
        MergedTimeline { ranks }
    }

    /// `job.replayed.json.gz` or `job.predicted.json.gz`.
    pub fn file_name(&self) -> std::ffi::OsString {
        merged_file_name(self.ranks.first().map_or("replayed", |t| t.what))
    }

    /// Writes the job's timeline as Kineto JSON (uncompressed) into `out`
    /// and gives `out` back. `distributedInfo` is the job's (see the
    /// module docs); `deviceProperties` lists every rank's devices once.
    pub fn write<W: Write>(&self, out: W) -> io::Result<W> {
        let heads: Vec<RankHead<'_>> = self.ranks.iter().map(RankHead::of_timeline).collect();
        let what = self.ranks.first().map_or("replayed", |t| t.what);
        let from: Vec<(u32, &PredictedFrom)> = (self.ranks.iter())
            .filter_map(|t| Some((t.rank, t.predicted_from.as_ref()?)))
            .collect();
        let mut w = MergedWriter::start(out, &heads, what, &from);
        for t in &self.ranks {
            w.write_rank(t);
        }
        w.finish()
    }
}

/// Moves `t`'s clock onto `base0` (the first rank's
/// `baseTimeNanoseconds`) where both are known and differ.
fn onto_base(t: &mut Timeline<'_>, base0: Option<i64>) {
    if let (Some(b0), Some(b)) = (base0, t.base_time_ns) {
        t.origin_ns = t.origin_ns.saturating_add(b.saturating_sub(b0));
        t.base_time_ns = Some(b0);
    }
}

/// `job.<what>.json.gz`: the name of a job's merged timeline.
pub fn merged_file_name(what: &str) -> std::ffi::OsString {
    super::file_name_of("job".as_ref(), what)
}

/// What a directory holding no trace stands for when it is `lumos predict
/// --out`'s: its predicted timelines, one per rank of the predicted job
/// ([`lumos_trace::predicted_timelines_under`]). A merged one (`--merge`'s
/// `job.predicted.json.gz`, which every command refuses as an input) is
/// left out beside per-rank ones, which hold the same ranks; alone, it is
/// taken, and its refusal says what to give instead. The CLI and the
/// Python package expand directories through this, so they agree.
pub fn predicted_job_under(
    dir: &std::path::Path,
) -> Result<Vec<std::path::PathBuf>, lumos_trace::DirError> {
    let mut found = lumos_trace::predicted_timelines_under(dir)?;
    let merged = merged_file_name("predicted");
    let is_merged = |f: &std::path::PathBuf| f.file_name().is_some_and(|n| *n == *merged);
    if found.iter().any(|f| !is_merged(f)) {
        found.retain(|f| !is_merged(f));
    }
    Ok(found)
}

/// What the header of a merged timeline needs of one rank, known before
/// its graph is at hand.
pub(super) struct RankHead<'s> {
    pub(super) about: &'s TraceAbout,
    pub(super) rank: u32,
    pub(super) world_size: Option<u32>,
    pub(super) base_time_ns: Option<i64>,
}

impl<'s> RankHead<'s> {
    fn of_timeline(t: &'s Timeline<'_>) -> RankHead<'s> {
        RankHead {
            about: &t.about,
            rank: t.rank,
            world_size: t.world_size,
            base_time_ns: t.base_time_ns,
        }
    }

    /// The head of the trace `meta` describes, a rank of a job.
    pub(super) fn of_meta(m: &'s RankMeta) -> RankHead<'s> {
        RankHead {
            about: &m.about,
            rank: m.rank,
            world_size: m.world_size,
            base_time_ns: m.base_time_ns,
        }
    }

    /// The head of the trace `s` is.
    pub(super) fn of_source(s: &'s TimelineSource) -> RankHead<'s> {
        RankHead {
            about: &s.about,
            rank: s.rank,
            world_size: s.world_size,
            base_time_ns: s.base_time_ns,
        }
    }
}

/// A job's merged timeline written one rank at a time, so that only the
/// rank being written needs its graph: the header (devices,
/// `distributedInfo`) is made from every rank's [`TimelineSource`] first,
/// then each rank's timeline is given to [`MergedWriter::rank`] in turn.
/// The file is the one [`MergedTimeline::write`] writes of the same
/// replayed timelines, byte for byte (of predicted ones, that also states
/// their `predictedFrom`, which a [`TimelineSource`] does not hold).
pub struct MergedWriter<W: Write> {
    w: KinetoWriter<W>,
    /// The first rank's `baseTimeNanoseconds`, every rank's clock moved
    /// onto it.
    base0: Option<i64>,
    /// Ranks written so far.
    written: usize,
}

impl<W: Write> MergedWriter<W> {
    /// Starts the file of the ranks `sources` are (in the order their
    /// timelines will be given); `what` is "replayed" or "predicted".
    pub fn new(out: W, sources: &[TimelineSource], what: &'static str) -> MergedWriter<W> {
        let heads: Vec<RankHead<'_>> = sources.iter().map(RankHead::of_source).collect();
        MergedWriter::start(out, &heads, what, &[])
    }

    /// [`MergedWriter::new`] for the ranks of a job, borrowing what each
    /// says about its trace.
    pub(crate) fn of_ranks(out: W, ranks: &[RankMeta], what: &'static str) -> MergedWriter<W> {
        let heads: Vec<RankHead<'_>> = ranks.iter().map(RankHead::of_meta).collect();
        MergedWriter::start(out, &heads, what, &[])
    }

    /// The file's header: of the ranks `heads` describe, and (a merged
    /// prediction) of the stages `from` says were built from which traced
    /// rank, each with its rank in the predicted job.
    fn start(
        out: W,
        heads: &[RankHead<'_>],
        what: &str,
        from: &[(u32, &PredictedFrom)],
    ) -> MergedWriter<W> {
        let mut w = KinetoWriter::new(out, Layout::Compact);
        w.schema_version(1);
        let Some(first) = heads.first() else {
            return MergedWriter {
                w,
                base0: None,
                written: 0,
            };
        };
        if let Some(b) = first.base_time_ns {
            w.base_time_ns(b);
        }
        let mut devices: Vec<&lumos_trace::Device> = Vec::new();
        for h in heads {
            for d in &h.about.devices {
                if !devices.iter().any(|x| x.id == d.id) {
                    devices.push(d);
                }
            }
        }
        devices.sort_by_key(|d| d.id);
        write_devices(&mut w, &devices);
        write_distributed(&mut w, heads);
        w.trace_name(&format!("lumos {what} job"));
        if !from.is_empty() {
            let mut job = w.member_object("predictedFrom");
            let mut stages = job.objects("stages");
            for (rank, f) in from {
                let mut o = stages.object();
                f.write_fields(&mut o);
                o.uint("predicted_rank", u64::from(*rank));
            }
        }
        MergedWriter {
            w,
            base0: first.base_time_ns,
            written: 0,
        }
    }

    /// Writes the next rank's timeline: its process (`rank N`), threads
    /// and events, its clock moved onto the first rank's
    /// `baseTimeNanoseconds` where they differ.
    pub fn rank(&mut self, t: &mut Timeline<'_>) {
        onto_base(t, self.base0);
        self.write_rank(t);
    }

    /// Writes the next rank's timeline, its clock already on the first
    /// rank's.
    fn write_rank(&mut self, t: &Timeline<'_>) {
        let pid = i64::from(t.rank);
        self.w.process_name(pid, &format!("rank {}", t.rank));
        self.w.process_sort_index(pid, i64::from(t.rank));
        let places = tracks(&mut self.w, t);
        t.events(&mut self.w, &places, (self.written as u64) << 40);
        self.written += 1;
    }

    /// Ends the file and gives `out` back.
    pub fn finish(self) -> io::Result<W> {
        self.w.finish()
    }
}

/// The job's `distributedInfo` (see the module docs).
fn write_distributed<W: Write>(w: &mut KinetoWriter<W>, heads: &[RankHead<'_>]) {
    let first = |f: fn(&TraceAbout) -> Option<&str>| heads.iter().find_map(|h| f(h.about));
    let backend = first(|a| a.backend.as_deref());
    let mut ranks: Vec<u32> = heads.iter().map(|h| h.rank).collect();
    ranks.sort_unstable();
    ranks.dedup();
    let world = heads
        .iter()
        .filter_map(|h| h.world_size)
        .max()
        .unwrap_or(ranks.len() as u32);
    let mut pgs: Vec<PgConfig<'_>> = Vec::new();
    for g in heads.iter().flat_map(|h| &h.about.process_groups) {
        if pgs
            .iter()
            .any(|p| p.name == g.name && p.ranks == &g.ranks[..])
        {
            continue;
        }
        pgs.push(PgConfig {
            name: &g.name,
            desc: g.desc.as_deref().unwrap_or(""),
            // Not kept by the reader: the backend stands in for it.
            backend_config: backend.unwrap_or(""),
            size: u64::from(g.size.unwrap_or(g.ranks.len() as u32)),
            ranks: &g.ranks,
        });
    }
    w.distributed_info(&DistributedInfo {
        backend,
        rank: None,
        world_size: Some(u64::from(world)),
        process_groups: (!pgs.is_empty()).then_some(&pgs[..]),
        nccl_version: first(|a| a.nccl_version.as_deref()),
        written_ranks: ((ranks.len() as u32) < world).then_some(&ranks[..]),
        // What tells a reader that this file holds several ranks, which it
        // refuses (it reads one rank per file).
        merged_ranks: Some(&ranks),
    });
}

/// Names and orders the threads of rank `t`'s process: one per
/// processor, CPU threads first, each under the name its trace gave it.
/// Returns where each processor's events go.
fn tracks<W: Write>(w: &mut KinetoWriter<W>, t: &Timeline<'_>) -> Vec<(i64, i64)> {
    let pid = i64::from(t.rank);
    let mut places = Vec::with_capacity(t.graph.processors.len());
    for (k, p) in t.graph.processors.iter().enumerate() {
        let tid = k as i64;
        let (opid, otid) = super::place_of(&p.kind);
        let named = t
            .about
            .tracks
            .iter()
            .find(|x| x.pid == opid && x.tid == Some(otid))
            .and_then(|x| x.name.clone());
        let name = match p.kind {
            ProcKind::Thread { tid, .. } => named.unwrap_or_else(|| format!("thread {tid}")),
            ProcKind::Stream { device, stream } => {
                let n = named.unwrap_or_else(|| format!("stream {stream}"));
                format!("GPU {device} {n}")
            }
        };
        w.thread_name(pid, tid, &name);
        let order = if p.is_stream() { 1 << 20 } else { 0 } + tid;
        w.thread_sort_index(pid, tid, order);
        places.push((pid, tid));
    }
    places
}
