//! The timelines of a job's ranks as one file: each rank a process
//! (`rank N`, listed in rank order), its threads and streams the threads of
//! that process under their own names, every event and flow kept.
//!
//! Its `distributedInfo` is the job's, not one rank's: no `rank` (the file
//! holds several), the world size the ranks recorded (else how many there
//! are), the backend and NCCL version the first rank recording them gave,
//! every distinct process group of every rank, and `written_ranks` (the
//! ranks in the file) when they are fewer than the world.

use std::io::{self, Write};

use lumos_graph::{ProcKind, TraceAbout};
use lumos_trace::{DistributedInfo, KinetoWriter, Layout, PgConfig};

use super::{write_devices, Timeline};

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
            if let (Some(b0), Some(b)) = (base0, t.base_time_ns) {
                t.origin_ns = t.origin_ns.saturating_add(b.saturating_sub(b0));
                t.base_time_ns = Some(b0);
            }
        }
        MergedTimeline { ranks }
    }

    /// `job.replayed.json.gz` or `job.predicted.json.gz`.
    pub fn file_name(&self) -> String {
        let what = self.ranks.first().map_or("replayed", |t| t.what);
        format!("job.{what}.json.gz")
    }

    /// Writes the job's timeline as Kineto JSON (uncompressed) into `out`
    /// and gives `out` back. `distributedInfo` is the job's (see the
    /// module docs); `deviceProperties` lists every rank's devices once.
    pub fn write<W: Write>(&self, out: W) -> io::Result<W> {
        let mut w = KinetoWriter::new(out, Layout::Compact);
        w.schema_version(1);
        let Some(first) = self.ranks.first() else {
            return w.finish();
        };
        if let Some(b) = first.base_time_ns {
            w.base_time_ns(b);
        }
        let mut devices: Vec<&lumos_trace::Device> = Vec::new();
        for t in &self.ranks {
            for d in &t.about.devices {
                if !devices.iter().any(|x| x.id == d.id) {
                    devices.push(d);
                }
            }
        }
        devices.sort_by_key(|d| d.id);
        write_devices(&mut w, &devices);
        self.write_distributed(&mut w);
        w.trace_name(&format!("lumos {} job", first.what));
        for (k, t) in self.ranks.iter().enumerate() {
            let pid = i64::from(t.rank);
            w.process_name(pid, &format!("rank {}", t.rank));
            w.process_sort_index(pid, i64::from(t.rank));
            let places = self.tracks(&mut w, t);
            t.events(&mut w, &places, (k as u64) << 40);
        }
        w.finish()
    }

    /// The job's `distributedInfo` (see the module docs).
    fn write_distributed<W: Write>(&self, w: &mut KinetoWriter<W>) {
        let abouts: Vec<&TraceAbout> = self.ranks.iter().map(|t| &t.about).collect();
        let first = |f: fn(&TraceAbout) -> Option<&str>| abouts.iter().find_map(|a| f(a));
        let backend = first(|a| a.backend.as_deref());
        let mut ranks: Vec<u32> = self.ranks.iter().map(|t| t.rank).collect();
        ranks.sort_unstable();
        ranks.dedup();
        let world = self
            .ranks
            .iter()
            .filter_map(|t| t.world_size)
            .max()
            .unwrap_or(ranks.len() as u32);
        let mut pgs: Vec<PgConfig<'_>> = Vec::new();
        for g in abouts.iter().flat_map(|a| &a.process_groups) {
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
        });
    }

    /// Names and orders the threads of rank `t`'s process: one per
    /// processor, CPU threads first, each under the name its trace gave
    /// it. Returns where each processor's events go.
    fn tracks<W: Write>(&self, w: &mut KinetoWriter<W>, t: &Timeline<'_>) -> Vec<(i64, i64)> {
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
}
