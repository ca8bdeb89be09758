//! Reading a file: detect gzip (decompressing on a second thread), split the
//! JSON into chunks of events, parse each chunk's events in parallel, and
//! fold them into a [`Trace`] in order.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::sync::mpsc;

use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::error::{ErrorKind, ReadError};
use crate::model::*;
use crate::parse::{self, Complete, PIdent, Parsed, Text};
use crate::shapes::InputDims;
use crate::split::{Item, ScanError, Splitter};

/// Bytes of JSON read per chunk. Large enough that parallel parsing pays,
/// small enough that the buffer stays a small part of peak memory.
const CHUNK: usize = 1 << 20;

/// Size of the blocks the decompression thread hands over.
const GZIP_BLOCK: usize = 1 << 20;

/// Decompressed blocks in flight between the threads.
const GZIP_BLOCKS_IN_FLIGHT: usize = 2;

/// Reads a trace file (`.json` or gzip-compressed, detected by content).
pub fn read_path(path: &Path) -> Result<Trace, ReadError> {
    read_path_with_progress(path, &|_| {})
}

/// Like [`read_path`], calling `progress` with the number of uncompressed
/// bytes read so far after each chunk.
pub fn read_path_with_progress(
    path: &Path,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Trace, ReadError> {
    let file = File::open(path).map_err(|e| ReadError::new(path, ErrorKind::Io(e)))?;
    read_from(
        path,
        BufReader::with_capacity(1 << 18, file),
        CHUNK,
        progress,
    )
}

/// Reads a trace from bytes already in memory; `path` only names it in
/// errors and in [`Trace::path`].
pub fn read_bytes(path: &Path, data: &[u8]) -> Result<Trace, ReadError> {
    read_from(path, data, CHUNK, &|_| {})
}

/// [`read_bytes`] with the JSON read `chunk` bytes at a time instead of
/// a few MB, so tests can check that the result does not depend on where
/// chunks end. Not part of the stable API.
#[doc(hidden)]
pub fn read_bytes_with_chunk(path: &Path, data: &[u8], chunk: usize) -> Result<Trace, ReadError> {
    read_from(path, data, chunk.max(1), &|_| {})
}

fn read_from<R: BufRead + Send>(
    path: &Path,
    mut input: R,
    chunk: usize,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Trace, ReadError> {
    let head = input
        .fill_buf()
        .map_err(|e| ReadError::new(path, ErrorKind::Io(e)))?;
    if !head.starts_with(&[0x1f, 0x8b]) {
        return read_json(path, input, false, chunk, progress);
    }
    // Decompress on a second thread, overlapping with splitting and parsing.
    std::thread::scope(|scope| {
        let (full_tx, full_rx) = mpsc::sync_channel(GZIP_BLOCKS_IN_FLIGHT);
        let (empty_tx, empty_rx) = mpsc::channel();
        scope.spawn(move || inflate(input, full_tx, empty_rx));
        let reader = BlockReader {
            full: full_rx,
            empty: empty_tx,
            block: (Vec::new(), 0),
            pos: 0,
        };
        read_json(path, reader, true, chunk, progress)
    })
}

/// A block of decompressed bytes: the buffer and how much of it is filled.
type GzBlock = (Vec<u8>, usize);

/// Decompresses `input` into blocks sent on `full`, reusing the buffers that
/// come back on `empty`. Stops at the end, after sending an error, or when
/// the reader hangs up.
fn inflate<R: BufRead>(
    input: R,
    full: mpsc::SyncSender<std::io::Result<GzBlock>>,
    empty: mpsc::Receiver<Vec<u8>>,
) {
    let mut decoder = flate2::bufread::MultiGzDecoder::new(input);
    loop {
        // Recycled buffers are already initialized: no zeroing per block.
        let mut block = empty.try_recv().unwrap_or_else(|_| vec![0; GZIP_BLOCK]);
        let mut n = 0;
        let mut error = None;
        while n < block.len() {
            match decoder.read(&mut block[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    error = Some(e);
                    break;
                }
            }
        }
        let end = n < block.len();
        if n > 0 && full.send(Ok((block, n))).is_err() {
            return;
        }
        if let Some(e) = error {
            let _ = full.send(Err(e));
            return;
        }
        if end {
            return;
        }
    }
}

/// Reads the blocks [`inflate`] sends.
struct BlockReader {
    full: mpsc::Receiver<std::io::Result<GzBlock>>,
    empty: mpsc::Sender<Vec<u8>>,
    block: GzBlock,
    pos: usize,
}

impl Read for BlockReader {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.pos == self.block.1 {
            match self.full.recv() {
                Ok(Ok(block)) => {
                    let (old, _) = std::mem::replace(&mut self.block, block);
                    self.pos = 0;
                    if !old.is_empty() {
                        let _ = self.empty.send(old);
                    }
                }
                Ok(Err(e)) => return Err(e),
                // The thread finished: end of data.
                Err(_) => return Ok(0),
            }
        }
        let n = out.len().min(self.block.1 - self.pos);
        out[..n].copy_from_slice(&self.block.0[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// One chunk of the JSON and the complete items the splitter found in it.
#[derive(Default)]
struct Chunk {
    /// Initialized storage holding the data in `buf[..len]`; reused between
    /// chunks so that it is zeroed only when it grows.
    buf: Vec<u8>,
    len: usize,
    /// Offset of `buf[0]` in the uncompressed stream.
    base: u64,
    /// The items end before `buf[end]`; `buf[end..len]` is the start of an
    /// incomplete item, carried over to the next chunk.
    end: usize,
    items: Vec<Item>,
    /// A structural error after the items, with the element it is in.
    error: Option<(ScanError, Option<u64>)>,
    eof: bool,
}

/// Reads the uncompressed stream and splits it, a chunk at a time.
struct Source<'p, R> {
    path: &'p Path,
    src: R,
    gzipped: bool,
    chunk: usize,
    splitter: Splitter,
}

impl<R: Read> Source<'_, R> {
    /// The chunk after one whose incomplete end is `tail`, at `base`: the
    /// tail and at least `self.chunk` new bytes (so that an item larger
    /// than a chunk still completes after a few rounds), split. Reuses the
    /// storage of `into`.
    fn next(&mut self, tail: &[u8], base: u64, mut into: Chunk) -> Result<Chunk, ReadError> {
        let target = tail.len() + self.chunk;
        if into.buf.len() < target {
            into.buf.resize(target, 0);
        }
        into.buf[..tail.len()].copy_from_slice(tail);
        let mut len = tail.len();
        let mut eof = false;
        while len < target {
            match self.src.read(&mut into.buf[len..target]) {
                Ok(0) => {
                    eof = true;
                    break;
                }
                Ok(n) => len += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let kind = if self.gzipped {
                        ErrorKind::Gzip {
                            uncompressed: base + len as u64,
                            source: e,
                        }
                    } else {
                        ErrorKind::Io(e)
                    };
                    return Err(ReadError::new(self.path, kind));
                }
            }
        }
        into.items.clear();
        let mut end = 0;
        let scanned = self
            .splitter
            .scan(&into.buf[..len], &mut end, eof, &mut into.items);
        into.error = scanned.err().map(|e| (e, self.splitter.current_event()));
        into.len = len;
        into.base = base;
        into.end = end;
        into.eof = eof;
        Ok(into)
    }
}

/// Reads, splits, parses and folds the JSON, a chunk at a time, in a
/// three-stage pipeline: while chunk k is parsed on the rayon pool, chunk
/// k-1 is folded into the [`Trace`] (in file order) and chunk k+1 is read
/// and split.
fn read_json<R: Read + Send>(
    path: &Path,
    src: R,
    gzipped: bool,
    chunk: usize,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Trace, ReadError> {
    let mut source = Source {
        path,
        src,
        gzipped,
        chunk,
        splitter: Splitter::new(),
    };
    let mut builder = Builder::new(path, gzipped);
    // Storage handed from stage to stage, so that the kernel does not hand
    // out (and zero) fresh pages for every chunk.
    let mut spare_chunk = Chunk::default();
    let mut spare_parsed: Vec<Option<Parsed>> = Vec::new();
    // The chunk to parse (or the error reading it); `None` once the chunk
    // being folded is the last.
    let mut cur = Some(source.next(&[], 0, Chunk::default()));
    // The chunk parsed in the previous round, to fold.
    let mut pending: Option<(Chunk, Vec<Option<Parsed>>)> = None;
    loop {
        let mut parse = || match &cur {
            Some(Ok(c)) => Some(parse_items(c, std::mem::take(&mut spare_parsed))),
            _ => None,
        };
        let mut fold_and_read = || {
            let folded = match &mut pending {
                Some((c, parsed)) => builder.fold(c, parsed),
                None => Ok(()),
            };
            let next = match &cur {
                Some(Ok(c)) if folded.is_ok() && c.error.is_none() && !c.eof => {
                    let tail = &c.buf[c.end..c.len];
                    let base = c.base + c.end as u64;
                    Some(source.next(tail, base, std::mem::take(&mut spare_chunk)))
                }
                _ => None,
            };
            (folded, next)
        };
        // Handing work to the pool costs microseconds: worth it for chunks
        // of many elements, not for the tiny chunks of the tests.
        let many = matches!(&cur, Some(Ok(c)) if c.items.len() >= 64);
        let (parsed, (folded, next)) = if many {
            rayon::join(parse, fold_and_read)
        } else {
            (parse(), fold_and_read())
        };
        // Finish the folded chunk first: its errors come before any later.
        if let Some((mut done, mut done_parsed)) = pending.take() {
            done_parsed.clear();
            spare_parsed = done_parsed;
            folded?;
            if let Some((ScanError { offset, message }, event)) = done.error.take() {
                return Err(ReadError::new(
                    path,
                    ErrorKind::Syntax {
                        offset: done.base + offset as u64,
                        event,
                        message,
                    },
                ));
            }
            progress(done.base + done.end as u64);
            if done.eof {
                let total = done.base + done.len as u64;
                return finish(path, &source.splitter, builder, total);
            }
            spare_chunk = done;
        }
        match cur.take() {
            Some(Ok(c)) => pending = Some((c, parsed.expect("parsed with the chunk"))),
            Some(Err(e)) => return Err(e),
            None => unreachable!("the last chunk returns when folded"),
        }
        cur = next;
    }
}

/// The checks at the end of the input, and the trace.
fn finish(
    path: &Path,
    splitter: &Splitter,
    mut builder: Builder,
    total: u64,
) -> Result<Trace, ReadError> {
    let err = |kind| Err(ReadError::new(path, kind));
    if !splitter.saw_root() {
        return err(ErrorKind::Empty);
    }
    if !splitter.is_done() {
        return err(ErrorKind::Truncated {
            offset: total,
            context: splitter.context(),
        });
    }
    if !splitter.saw_events() {
        return err(ErrorKind::NotATrace(
            "the top-level object has no traceEvents array".into(),
        ));
    }
    builder.trace.json_bytes = total;
    Ok(builder.finish())
}

/// Parses the elements of a chunk into `out` (`None` for top-level members),
/// in parallel when there are enough of them.
fn parse_items(chunk: &Chunk, mut out: Vec<Option<Parsed>>) -> Vec<Option<Parsed>> {
    let buf = &chunk.buf[..chunk.len];
    let parse = |it: &Item| match it {
        Item::Event(r) => Some(parse::parse_event(&buf[r.clone()])),
        Item::NonObject(r) => Some(match parse::validate_value(&buf[r.clone()]) {
            Ok(()) => Parsed::Skip {
                cat: Text::Static("-"),
                reason: SkipReason::NotAnObject,
            },
            Err(e) => Parsed::Syntax {
                offset: e.offset,
                message: e.message,
            },
        }),
        Item::Member { .. } => None,
    };
    out.clear();
    if chunk.items.len() < 64 {
        out.extend(chunk.items.iter().map(parse));
    } else {
        chunk
            .items
            .par_iter()
            .with_min_len(256)
            .map(parse)
            .collect_into_vec(&mut out);
    }
    out
}

/// Folds parsed items into a [`Trace`].
struct Builder {
    trace: Trace,
    /// Interned strings by their UTF-8 bytes.
    interned: FxHashMap<Box<[u8]>, StrId>,
    /// Skip counts by reason, then category as written (UTF-8 bytes).
    skipped: FxHashMap<SkipReason, FxHashMap<Box<[u8]>, u64>>,
    /// Every distinct `Input Dims` seen: events share one copy each.
    shapes: FxHashSet<InputDims>,
    /// Index of the next `traceEvents` element.
    index: u64,
    distributed_rank: Option<u32>,
}

impl Builder {
    fn new(path: &Path, gzipped: bool) -> Builder {
        Builder {
            trace: Trace {
                path: path.to_owned(),
                gzipped,
                ..Trace::default()
            },
            interned: FxHashMap::default(),
            skipped: FxHashMap::default(),
            shapes: FxHashSet::default(),
            index: 0,
            distributed_rank: None,
        }
    }

    fn syntax(&self, offset: u64, event: Option<u64>, message: String) -> ReadError {
        ReadError::new(
            &self.trace.path,
            ErrorKind::Syntax {
                offset,
                event,
                message,
            },
        )
    }

    /// Adds a parsed chunk to the trace, in order.
    fn fold(&mut self, chunk: &Chunk, parsed: &mut Vec<Option<Parsed>>) -> Result<(), ReadError> {
        let buf = &chunk.buf[..chunk.len];
        for (item, parsed) in chunk.items.iter().zip(parsed.drain(..)) {
            match (item, parsed) {
                (Item::Member { key, value }, _) => {
                    self.add_member(key, &buf[value.clone()], chunk.base + value.start as u64)?
                }
                (Item::Event(r) | Item::NonObject(r), Some(Parsed::Syntax { offset, message })) => {
                    return Err(self.syntax(
                        chunk.base + (r.start + offset) as u64,
                        Some(self.index),
                        message,
                    ));
                }
                (Item::Event(r) | Item::NonObject(r), Some(p)) => {
                    self.add(p, &buf[r.clone()]);
                    self.index += 1;
                }
                (_, None) => unreachable!("elements are always parsed"),
            }
        }
        Ok(())
    }

    /// Adds one parsed element; its strings are in `element`.
    fn add(&mut self, parsed: Parsed, element: &[u8]) {
        match parsed {
            Parsed::Complete(c) => self.add_complete(c, element),
            Parsed::Flow {
                kind,
                phase,
                id,
                pid,
                tid,
                ts_ns,
            } => {
                let pid = self.ident(&pid, element);
                let tid = self.ident(&tid, element);
                self.trace.flows.push(Flow {
                    kind,
                    phase,
                    id,
                    pid,
                    tid,
                    ts_ns,
                });
            }
            Parsed::TrackName { pid, tid, name } => {
                let pid = self.ident(&pid, element);
                let tid = tid.map(|t| self.ident(&t, element));
                self.trace.track_names.push(TrackName { pid, tid, name });
            }
            Parsed::Metadata => {}
            Parsed::Skip { cat, reason } => self.skip(cat.bytes(element), reason),
            Parsed::Syntax { .. } => unreachable!("syntax errors stop the fold"),
        }
    }

    fn skip(&mut self, cat: &[u8], reason: SkipReason) {
        let by_cat = self.skipped.entry(reason).or_default();
        match by_cat.get_mut(cat) {
            Some(n) => *n += 1,
            None => {
                by_cat.insert(cat.into(), 1);
            }
        }
        self.trace
            .skipped
            .first_index
            .entry(reason)
            .or_insert(self.index);
    }

    fn add_complete(&mut self, c: Complete, element: &[u8]) {
        let name = self.intern(c.name.bytes(element));
        let pid = self.ident(&c.pid, element);
        let tid = self.ident(&c.tid, element);
        let mut extra = c.extra;
        if let Some(dims) = extra.as_deref_mut().and_then(|x| x.input_dims.as_mut()) {
            self.share(dims);
        }
        if c.bad_input_dims {
            let bad = self
                .trace
                .skipped
                .bad_args
                .entry("Input Dims")
                .or_insert(BadArg {
                    count: 0,
                    first_index: self.index,
                });
            bad.count += 1;
        }
        self.trace.events.push(Event {
            category: c.category,
            name,
            pid,
            tid,
            ts_ns: c.ts_ns,
            dur_ns: c.dur_ns,
            correlation: c.correlation,
            external_id: c.external_id,
            stream: c.stream,
            device: c.device,
            extra,
        });
    }

    /// Replaces `dims` by the equal list seen before, if any.
    fn share(&mut self, dims: &mut InputDims) {
        match self.shapes.get(dims) {
            Some(seen) => *dims = seen.clone(),
            None => {
                self.shapes.insert(dims.clone());
            }
        }
    }

    /// The id of a string given as UTF-8 bytes (checked by the parser).
    fn intern(&mut self, s: &[u8]) -> StrId {
        if let Some(&id) = self.interned.get(s) {
            return id;
        }
        let id = StrId(self.trace.strings.len() as u32);
        self.trace
            .strings
            .push(String::from_utf8_lossy(s).into_owned());
        self.interned.insert(s.into(), id);
        id
    }

    fn ident(&mut self, id: &PIdent, element: &[u8]) -> Ident {
        match id {
            PIdent::Num(n) => Ident::Num(*n),
            PIdent::Name(s) => Ident::Name(self.intern(s.bytes(element))),
        }
    }

    fn add_member(&mut self, key: &str, value: &[u8], offset: u64) -> Result<(), ReadError> {
        let parsed: sonic_rs::Value = sonic_rs::from_slice(value).map_err(|e| {
            ReadError::new(
                &self.trace.path,
                ErrorKind::Syntax {
                    offset: offset + e.offset() as u64,
                    event: None,
                    message: format!("in top-level \"{key}\": {e}"),
                },
            )
        })?;
        use sonic_rs::{JsonContainerTrait, JsonValueTrait};
        let meta = &mut self.trace.meta;
        match key {
            "schemaVersion" => meta.schema_version = parsed.as_i64(),
            "baseTimeNanoseconds" => {
                meta.base_time_ns = parsed
                    .as_i64()
                    .or_else(|| parsed.as_str().and_then(|s| s.parse().ok()))
            }
            "displayTimeUnit" => meta.display_time_unit = parsed.as_str().map(str::to_owned),
            "deviceProperties" => {
                if let Some(arr) = parsed.as_array() {
                    meta.devices = arr.iter().map(device_from).collect();
                }
            }
            "distributedInfo" => {
                // Some exporters write it as a JSON string holding the object.
                let owned;
                let info = match parsed.as_str() {
                    Some(s) => match sonic_rs::from_str::<sonic_rs::Value>(s) {
                        Ok(v) => {
                            owned = v;
                            &owned
                        }
                        Err(_) => {
                            self.trace
                                .warnings
                                .push("distributedInfo is a string that is not JSON".into());
                            return Ok(());
                        }
                    },
                    None => &parsed,
                };
                self.distributed_rank = info
                    .get("rank")
                    .and_then(|v| v.as_u64())
                    .and_then(|r| u32::try_from(r).ok());
                meta.world_size = info
                    .get("world_size")
                    .and_then(|v| v.as_u64())
                    .and_then(|r| u32::try_from(r).ok());
                meta.backend = info.get("backend").and_then(|v| v.as_str()).map(Into::into);
                meta.nccl_version = info
                    .get("nccl_version")
                    .and_then(|v| v.as_str())
                    .map(Into::into);
                if let Some(pgs) = info.get("pg_config").and_then(|v| v.as_array()) {
                    meta.process_groups = pgs.iter().map(process_group_from).collect();
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn finish(mut self) -> Trace {
        let t = &mut self.trace;
        t.events_total = self.index;
        for (reason, by_cat) in self.skipped.drain() {
            for (cat, n) in by_cat {
                let cat = String::from_utf8_lossy(&cat).into_owned();
                t.skipped.counts.insert((cat, reason), n);
            }
        }
        if let Some(r) = self.distributed_rank {
            t.meta.rank = r;
            t.meta.rank_source = RankSource::DistributedInfo;
        } else if let Some(r) = rank_from_file_name(&t.path) {
            t.meta.rank = r;
            t.meta.rank_source = RankSource::FileName;
        }
        let unknown: Vec<String> = t
            .skipped
            .counts
            .iter()
            .filter(|((_, r), _)| *r == SkipReason::UnknownCategory)
            .map(|((c, _), n)| format!("{c} ({n})"))
            .collect();
        if !unknown.is_empty() {
            t.warnings.push(format!(
                "events of unknown categories skipped: {}",
                unknown.join(", ")
            ));
        }
        let bad = t.skipped.total()
            - t.skipped
                .counts
                .iter()
                .filter(|((_, r), _)| {
                    matches!(
                        r,
                        SkipReason::NotModeled | SkipReason::NotATask | SkipReason::UnknownCategory
                    )
                })
                .map(|(_, n)| n)
                .sum::<u64>();
        if bad > 0 {
            let first = t.skipped.first_index.values().min().copied().unwrap_or(0);
            t.warnings.push(format!(
                "{bad} malformed events skipped (first at traceEvents[{first}])"
            ));
        }
        for (key, bad) in &t.skipped.bad_args {
            t.warnings.push(format!(
                "{} events with a malformed {key:?} (first at traceEvents[{}]): kept without it",
                bad.count, bad.first_index
            ));
        }
        self.trace
    }
}

fn device_from(v: &sonic_rs::Value) -> Device {
    use sonic_rs::JsonValueTrait;
    let u = |k: &str| v.get(k).and_then(|x| x.as_u64());
    Device {
        id: v.get("id").and_then(|x| x.as_i64()).unwrap_or(0),
        name: v
            .get("name")
            .and_then(|x| x.as_str())
            .unwrap_or("")
            .to_owned(),
        total_global_mem: u("totalGlobalMem"),
        num_sms: u("numSms").and_then(|x| u32::try_from(x).ok()),
        compute_major: u("computeMajor").and_then(|x| u32::try_from(x).ok()),
        compute_minor: u("computeMinor").and_then(|x| u32::try_from(x).ok()),
    }
}

fn process_group_from(v: &sonic_rs::Value) -> ProcessGroup {
    use sonic_rs::{JsonContainerTrait, JsonValueTrait};
    let ranks = match v.get("ranks") {
        Some(r) if r.is_array() => r
            .as_array()
            .map(|a| a.iter().filter_map(|x| x.as_i64()).collect())
            .unwrap_or_default(),
        Some(r) => r
            .as_str()
            .and_then(RankList::parse)
            .map(|l| l.ranks)
            .unwrap_or_default(),
        None => Vec::new(),
    };
    ProcessGroup {
        name: match v.get("pg_name") {
            Some(n) if n.is_str() => n.as_str().unwrap_or("").to_owned(),
            Some(n) => n.as_i64().map(|i| i.to_string()).unwrap_or_default(),
            None => String::new(),
        },
        desc: v.get("pg_desc").and_then(|x| x.as_str()).map(Into::into),
        size: v
            .get("pg_size")
            .and_then(|x| x.as_u64())
            .and_then(|x| u32::try_from(x).ok()),
        ranks,
    }
}

/// The number after the last `rank` in a file name (`rank3.json.gz`,
/// `foo_rank_12.json`, `rank0of8`), if any.
pub fn rank_from_file_name(path: &Path) -> Option<u32> {
    let name = path.file_name()?.to_str()?.to_ascii_lowercase();
    let at = name.rfind("rank")?;
    let rest = name[at + 4..].trim_start_matches(['_', '-']);
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_from_names() {
        assert_eq!(rank_from_file_name(Path::new("a/rank3.json.gz")), Some(3));
        assert_eq!(
            rank_from_file_name(Path::new("recsys-rank0of128.json.gz")),
            Some(0)
        );
        assert_eq!(rank_from_file_name(Path::new("x_RANK_12.json")), Some(12));
        assert_eq!(rank_from_file_name(Path::new("trace.json")), None);
    }
}
