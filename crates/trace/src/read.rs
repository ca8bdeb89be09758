//! Reading a file: detect gzip (decompressing on a second thread), split the
//! JSON into chunks of events, parse each chunk's events in parallel, and
//! fold them into a [`Trace`] in order.

use std::borrow::{Borrow, Cow};
use std::fs::File;
use std::hash::Hash;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::sync::{mpsc, Arc};

use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::error::{ErrorKind, ReadError};
use crate::gzip::{self, BlockReader, GZIP_BLOCKS_IN_FLIGHT};
use crate::model::*;
use crate::outliers::{Candidate, Outliers, Starts};
use crate::parse::{self, Complete, ExtraTexts, PIdent, Parsed, Repairs, Text};
use crate::shapes::InputDims;
use crate::sniff::{self, SNIFF_BYTES};
use crate::split::{Item, ScanError, Splitter};
use crate::{meta, tree, MAX_ITEM_BYTES, MAX_TEXT_BYTES};

/// Bytes of JSON read per chunk. Large enough that parallel parsing pays,
/// small enough that the buffer stays a small part of peak memory.
const CHUNK: usize = 1 << 20;

/// Unknown categories named in the warning that they were skipped.
const MAX_CATEGORIES_SHOWN: usize = 20;

/// The longest `Input Dims`, `Input type` or `Process Group Ranks` text
/// kept: lists, which a cut would break, so longer ones are dropped as
/// malformed. Each distinct one is kept (and parsed), so this bounds what
/// a little gzip inflating to many distinct giant lists can hold; an
/// operator over every parameter of a large model (`_foreach_*`) can list
/// thousands of shapes, over [`MAX_TEXT_BYTES`].
const MAX_LIST_TEXT_BYTES: usize = 1 << 20;

/// The distinct `Input Dims`, `Input type` and `Process Group Ranks` texts
/// a trace may hold, in all. Each is kept, parsed at up to about four
/// times its text, so a file of distinct lists just under
/// [`MAX_LIST_TEXT_BYTES`] held several times its own size; real traces
/// have at most a few MB of them. Past this, a new distinct list is
/// dropped (the event kept without it) and counted in one warning.
const MAX_DISTINCT_LIST_BYTES: usize = 256 << 20;

/// The distinct names, categories and other texts a trace may hold, in
/// all. Each is kept (twice: the text and the key that finds it), and
/// [`MAX_TEXT_BYTES`] bounds only one of them, so a few MB of gzip
/// inflating to events of distinct 60 KB names held a thousand times its
/// size (1 MB took 1.2 GB). Real traces hold at most a few hundred KB of
/// them (the corpus, 100 KB); past this, reading stops with
/// [`ErrorKind::TooManyTexts`].
const MAX_DISTINCT_TEXT_BYTES: usize = 256 << 20;

/// The largest top-level member the model uses (`deviceProperties`,
/// `distributedInfo`, ...) that is parsed; larger ones are ignored with a
/// warning. Parsed, such a value takes up to 50 times its text; real ones
/// are a few KB (the process groups of a job of thousands of ranks, a few
/// hundred).
const MAX_META_BYTES: usize = 4 << 20;

/// `bytes`, the text of a string of an element: valid UTF-8 (the parser
/// checked it, and made the spans of repaired elements owned). Checked
/// again rather than assumed, with `from_utf8` (a fast ASCII path; the
/// lossy conversion is several times slower on every text), so that a
/// mistake cannot read invalid UTF-8. The fold converts each distinct
/// text once, and finds the ones it has seen by their bytes.
fn text_str(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

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
    read_file(path, progress, None)
}

/// Takes the kept complete events of a trace as the reader folds them,
/// in file order, instead of [`Trace::events`]: a consumer that turns
/// events into something smaller (the graph builder's per-track records)
/// then does it while the file is read, and the events are never all in
/// memory. See [`read_path_into`].
pub trait EventSink: Send {
    /// Takes one kept event, or gives it back (`Some`), to be kept in
    /// [`Trace::events`] as [`read_path`] keeps every event. `names` are
    /// the trace's interned strings so far ([`Trace::strings`] at the end):
    /// the event's name and its string pid and tid are among them. Called
    /// on the thread that folds, which may change from call to call.
    fn event(&mut self, event: Event, names: &[String]) -> Option<Event>;

    /// Takes one flow event, or gives it back (`Some`), to be kept in
    /// [`Trace::flows`] as [`read_path`] keeps every flow. By default each
    /// is given back: a sink takes only the flows nothing after it reads.
    fn flow(&mut self, flow: Flow) -> Option<Flow> {
        Some(flow)
    }
}

/// [`read_path_with_progress`], handing each kept complete event and each
/// flow to `sink` as it is read (see [`EventSink`]): the trace returned
/// holds in [`Trace::events`] and [`Trace::flows`] only those the sink
/// gave back, and everything else (strings, metadata, counts, warnings) as
/// [`read_path`] gives it. On an error the sink has taken part of the
/// file's events; what it made of them is to be dropped.
pub fn read_path_into(
    path: &Path,
    progress: &(dyn Fn(u64) + Sync),
    sink: &mut dyn EventSink,
) -> Result<Trace, ReadError> {
    read_file(path, progress, Some(sink))
}

/// Opens and reads the file at `path`.
fn read_file(
    path: &Path,
    progress: &(dyn Fn(u64) + Sync),
    sink: Option<&mut dyn EventSink>,
) -> Result<Trace, ReadError> {
    let file = File::open(path).map_err(|e| ReadError::new(path, opening_failed(path, e)))?;
    let input = BufReader::with_capacity(1 << 18, file);
    read_from(path, input, Sizes::DEFAULT, progress, sink)
}

/// Why `path` could not be opened: a file a folder's listing found
/// ([`crate::listed_under`]) and then gone vanished (removed or renamed
/// while lumos ran), which "no such file" did not say.
#[cold]
fn opening_failed(path: &Path, e: std::io::Error) -> ErrorKind {
    match crate::find::listed_in(path) {
        Some(folder) if e.kind() == std::io::ErrorKind::NotFound => ErrorKind::Vanished { folder },
        _ => ErrorKind::Io(e),
    }
}

/// Reads a trace from bytes already in memory; `path` only names it in
/// errors and in [`Trace::path`].
pub fn read_bytes(path: &Path, data: &[u8]) -> Result<Trace, ReadError> {
    read_from(path, data, Sizes::DEFAULT, &|_| {}, None)
}

/// [`read_bytes`] with the JSON read `chunk` bytes at a time instead of
/// a few MB, so tests can check that the result does not depend on where
/// chunks end. Not part of the stable API.
#[doc(hidden)]
pub fn read_bytes_with_chunk(path: &Path, data: &[u8], chunk: usize) -> Result<Trace, ReadError> {
    read_bytes_with_limits(path, data, chunk, MAX_ITEM_BYTES)
}

/// [`read_bytes_with_chunk`] with elements and members of at most
/// `max_item` bytes instead of [`MAX_ITEM_BYTES`], so tests can reach the
/// limit without a gigabyte. Not part of the stable API.
#[doc(hidden)]
pub fn read_bytes_with_limits(
    path: &Path,
    data: &[u8],
    chunk: usize,
    max_item: usize,
) -> Result<Trace, ReadError> {
    let sizes = Sizes {
        chunk: chunk.max(1),
        max_item,
        ..Sizes::DEFAULT
    };
    read_from(path, data, sizes, &|_| {}, None)
}

/// [`read_bytes`] keeping at most `bytes` of distinct argument lists
/// instead of [`MAX_DISTINCT_LIST_BYTES`], so tests can reach the limit
/// without hundreds of MB. Not part of the stable API.
#[doc(hidden)]
pub fn read_bytes_with_list_budget(
    path: &Path,
    data: &[u8],
    bytes: usize,
) -> Result<Trace, ReadError> {
    let sizes = Sizes {
        distinct_lists: bytes,
        ..Sizes::DEFAULT
    };
    read_from(path, data, sizes, &|_| {}, None)
}

/// [`read_bytes`] keeping at most `bytes` of distinct names and texts
/// instead of [`MAX_DISTINCT_TEXT_BYTES`], so tests can reach the limit
/// without hundreds of MB. Not part of the stable API.
#[doc(hidden)]
pub fn read_bytes_with_text_budget(
    path: &Path,
    data: &[u8],
    bytes: usize,
) -> Result<Trace, ReadError> {
    let sizes = Sizes {
        distinct_texts: bytes,
        ..Sizes::DEFAULT
    };
    read_from(path, data, sizes, &|_| {}, None)
}

/// [`read_bytes`] of a timeline lumos merged of several ranks (`--merge`),
/// which every other entry point refuses
/// ([`ErrorKind::MergedTimeline`]): its [`Trace`] holds every rank's
/// events, each rank on its process `rank N`, and means nothing as one
/// rank. For the tests of the merged timeline's writer; not part of the
/// stable API.
#[doc(hidden)]
pub fn read_bytes_merged(path: &Path, data: &[u8]) -> Result<Trace, ReadError> {
    let sizes = Sizes {
        merged_allowed: true,
        ..Sizes::DEFAULT
    };
    read_from(path, data, sizes, &|_| {}, None)
}

/// How much of the JSON is read at a time, the largest item held, the
/// distinct argument lists kept, and whether a merged timeline is read.
#[derive(Clone, Copy)]
struct Sizes {
    chunk: usize,
    max_item: usize,
    distinct_lists: usize,
    distinct_texts: usize,
    merged_allowed: bool,
}

impl Sizes {
    const DEFAULT: Sizes = Sizes {
        chunk: CHUNK,
        max_item: MAX_ITEM_BYTES,
        distinct_lists: MAX_DISTINCT_LIST_BYTES,
        distinct_texts: MAX_DISTINCT_TEXT_BYTES,
        merged_allowed: false,
    };

    /// The error for an item over the limit at `offset`.
    fn too_large(self, offset: u64, event: Option<u64>) -> ErrorKind {
        ErrorKind::TooLarge {
            offset,
            event,
            limit: self.max_item as u64,
        }
    }
}

fn read_from<R: BufRead + Send>(
    path: &Path,
    mut input: R,
    sizes: Sizes,
    progress: &(dyn Fn(u64) + Sync),
    sink: Option<&mut dyn EventSink>,
) -> Result<Trace, ReadError> {
    let head = input
        .fill_buf()
        .map_err(|e| ReadError::new(path, ErrorKind::Io(e)))?;
    if !head.starts_with(&[0x1f, 0x8b]) {
        return read_json(path, input, false, sizes, progress, sink).map_err(named_gz);
    }
    // Decompress on a second thread, overlapping with splitting and parsing.
    let (read, tail) = std::thread::scope(|scope| {
        let (full_tx, full_rx) = mpsc::sync_channel(GZIP_BLOCKS_IN_FLIGHT);
        let (empty_tx, empty_rx) = mpsc::channel();
        let inflater = scope.spawn(move || gzip::inflate(input, full_tx, empty_rx));
        let reader = BlockReader::new(full_rx, empty_tx);
        // The reader is dropped when this returns, so the thread stops.
        let read = read_json(path, reader, true, sizes, progress, sink);
        (read, inflater.join())
    });
    let mut trace = read?;
    if let Ok(tail) = tail {
        if tail.other_bytes > 0 {
            trace.warnings.push(format!(
                "ignored {} bytes after the end of the gzip data",
                tail.other_bytes + tail.zero_bytes
            ));
        }
    }
    Ok(trace)
}

/// `e`, for a file that is not gzip data, with a note where its name ends
/// in `.gz` and it is not JSON from its first byte: gzip is known by
/// content, and "invalid JSON at byte 0" alone left a reader of
/// `trace.json.gz` wondering why lumos read it as JSON.
fn named_gz(mut e: ReadError) -> ReadError {
    let named_gz = e
        .path
        .extension()
        .is_some_and(|x| x.eq_ignore_ascii_case("gz"));
    if let ErrorKind::Syntax {
        offset: 0, message, ..
    } = &mut e.kind
    {
        if named_gz {
            message.push_str(" (nor is it gzip data, though its name ends in .gz)");
        }
    }
    e
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
    /// An error after the items: a structural one, with the element it
    /// is in, or an item over the size limit.
    error: Option<ErrorKind>,
    eof: bool,
}

/// Reads the uncompressed stream and splits it, a chunk at a time.
struct Source<'p, R> {
    path: &'p Path,
    src: R,
    gzipped: bool,
    sizes: Sizes,
    splitter: Splitter,
}

impl<R: Read> Source<'_, R> {
    /// The chunk after one whose incomplete end is `tail`, at `base`: the
    /// tail and at least `sizes.chunk` new bytes (so that an item larger
    /// than a chunk still completes after a few rounds), split. Reuses the
    /// storage of `into`. An item that grows past `sizes.max_item` is an
    /// error.
    fn next(&mut self, tail: &[u8], base: u64, mut into: Chunk) -> Result<Chunk, ReadError> {
        // The splitter leaves `tail` at the start of the incomplete item.
        let Sizes {
            chunk, max_item, ..
        } = self.sizes;
        if tail.len() > max_item {
            let kind = self.sizes.too_large(base, self.splitter.current_event());
            return Err(ReadError::new(self.path, kind));
        }
        // At least doubling while one item does not complete: the splitter
        // rescans it from its start each round, so a 1 GB string costs a
        // few passes over it, not one per chunk. No more than one byte
        // past the limit is needed to know an item is over it.
        let target = (tail.len() + chunk.max(tail.len())).min(max_item.saturating_add(chunk));
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
        // UTF-16 without a byte order mark starts as JSON (`{`, then a
        // zero byte): looked into too, at the file's start only.
        let wide = base == 0 && into.buf[..len].get(1) == Some(&0);
        if scanned.is_err() && (!self.splitter.saw_root() || wide) {
            if let Some(e) = self.identify(&into.buf[..len], eof) {
                return Err(e);
            }
        }
        let event = self.splitter.current_event();
        into.error = scanned.err().map(|ScanError { offset, message }| {
            // An error inside an item already over the limit: the limit is
            // the first thing wrong, as when the item is read in pieces.
            if offset.saturating_sub(end) > max_item {
                self.sizes.too_large(base + end as u64, event)
            } else {
                ErrorKind::Syntax {
                    offset: base + offset as u64,
                    event,
                    message,
                }
            }
        });
        // Items complete in a buffer over the limit may be over it too:
        // the first is the error, after the items before it.
        if len > max_item {
            if let Some((k, kind)) = self.first_too_large(&into.items, base, max_item) {
                into.items.truncate(k);
                into.error = Some(kind);
            }
        }
        into.len = len;
        into.base = base;
        into.end = end;
        into.eof = eof;
        Ok(into)
    }
}

impl<R: Read> Source<'_, R> {
    /// The first of `items` (just scanned, in a buffer at `base`) larger
    /// than `max_item`, and its error.
    #[cold]
    fn first_too_large(
        &self,
        items: &[Item],
        base: u64,
        max_item: usize,
    ) -> Option<(usize, ErrorKind)> {
        let range = |item: &Item| match item {
            Item::Event(r) | Item::NonObject(r) | Item::Member { value: r, .. } => r.clone(),
        };
        // A member's key, with its quotes, is measured as an item of its
        // own, as it is when read in pieces; the offset is its value's.
        let over = |item: &Item| match item {
            Item::Member { key, value } => key.len() + 2 > max_item || value.len() > max_item,
            _ => range(item).len() > max_item,
        };
        let k = items.iter().position(over)?;
        let is_element = |it: &Item| !matches!(it, Item::Member { .. });
        // The splitter has counted every element up to the buffer's end.
        let event = is_element(&items[k]).then(|| {
            let from_k = items[k..].iter().filter(|it| is_element(it)).count();
            self.splitter.events_seen - from_k as u64
        });
        let offset = base + range(&items[k]).start as u64;
        Some((k, self.sizes.too_large(offset, event)))
    }

    /// The error for input that is not JSON from its first byte and whose
    /// first bytes (`head`, and more read if needed) show what it is.
    #[cold]
    fn identify(&mut self, head: &[u8], eof: bool) -> Option<ReadError> {
        let mut bytes = head[..head.len().min(SNIFF_BYTES)].to_vec();
        while !eof && bytes.len() < SNIFF_BYTES {
            let old = bytes.len();
            bytes.resize(SNIFF_BYTES, 0);
            match self.src.read(&mut bytes[old..]) {
                Ok(n) if n > 0 => bytes.truncate(old + n),
                _ => {
                    bytes.truncate(old);
                    break;
                }
            }
        }
        let (what, advice) = sniff::identify(&bytes)?;
        let what = match self.gzipped {
            true => format!("{what} (inside gzip)"),
            false => what.to_owned(),
        };
        Some(ReadError::new(
            self.path,
            ErrorKind::Format { what, advice },
        ))
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
    sizes: Sizes,
    progress: &(dyn Fn(u64) + Sync),
    sink: Option<&mut dyn EventSink>,
) -> Result<Trace, ReadError> {
    let mut source = Source {
        path,
        src,
        gzipped,
        sizes,
        splitter: Splitter::new(),
    };
    let mut builder = Builder::new(path, gzipped, sink, sizes);
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
        let mut fold = || match &mut pending {
            Some((c, parsed)) => builder.fold(c, parsed),
            None => Ok(()),
        };
        // Read and split ahead even if the fold fails: the fold's error is
        // returned first, and the chunk read is then dropped.
        let mut read_next = || match &cur {
            Some(Ok(c)) if c.error.is_none() && !c.eof => {
                let tail = &c.buf[c.end..c.len];
                let base = c.base + c.end as u64;
                Some(source.next(tail, base, std::mem::take(&mut spare_chunk)))
            }
            _ => None,
        };
        // Handing work to the pool costs microseconds: worth it for chunks
        // of many elements, not for the tiny chunks of the tests. The fold
        // and the read of the next chunk are the pipeline's serial chain:
        // side by side, neither waits for the other, and the chain is the
        // longer of the two rather than their sum (on two cores the
        // parsing fills the rest).
        let many = matches!(&cur, Some(Ok(c)) if c.items.len() >= 64);
        let (parsed, (folded, next)) = if many {
            rayon::join(parse, || rayon::join(fold, read_next))
        } else {
            (parse(), (fold(), read_next()))
        };
        // Finish the folded chunk first: its errors come before any later.
        if let Some((mut done, mut done_parsed)) = pending.take() {
            done_parsed.clear();
            spare_parsed = done_parsed;
            folded?;
            if let Some(kind) = done.error.take() {
                return Err(ReadError::new(path, kind));
            }
            progress(done.base + done.end as u64);
            if done.eof {
                let total = done.base + done.len as u64;
                let ends_between_values = done.end == done.len;
                return finish(path, &source.splitter, builder, total, ends_between_values);
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
    mut builder: Builder<'_>,
    total: u64,
    ends_between_values: bool,
) -> Result<Trace, ReadError> {
    let err = |kind| Err(ReadError::new(path, kind));
    if !splitter.saw_root() {
        return err(if total == 0 {
            ErrorKind::Empty
        } else {
            ErrorKind::Blank { bytes: total }
        });
    }
    if !(splitter.may_end() && ends_between_values) {
        return err(ErrorKind::Truncated {
            offset: total,
            context: splitter.context(),
        });
    }
    // Before what reading it as one rank found: a merged timeline's
    // ranks may start far apart.
    builder.merged()?;
    if !splitter.saw_events() {
        return err(ErrorKind::NotATrace(if builder.saw_nodes {
            "a PyTorch execution trace (\"nodes\", no traceEvents); lumos reads the \
             profiler's Kineto trace (export_chrome_trace, tensorboard_trace_handler)"
                .into()
        } else if let Some(kind) = builder.events_not_array {
            format!("the top-level object's traceEvents is {kind}, not an array of events")
        } else {
            "the top-level object has no traceEvents array".into()
        }));
    }
    builder.trace.json_bytes = total;
    builder.outlying_starts()?;
    Ok(builder.finish())
}

/// The warning that the top-level `field` was written in several
/// `spellings` (in the order first seen), `kept` the last read.
fn spellings_warning(field: &str, spellings: &[String], kept: &str) -> String {
    let quoted = |s: &String| format!("\"{s}\"");
    let ignored: Vec<String> = (spellings.iter())
        .filter(|s| *s != kept)
        .map(quoted)
        .collect();
    format!(
        "top-level {} name one field ({}): the last, \"{kept}\", is read and {} ignored, as for \
         a member written twice",
        spellings
            .iter()
            .map(quoted)
            .collect::<Vec<_>>()
            .join(" and "),
        meta::field_words(field),
        ignored.join(" and "),
    )
}

/// The JSON type of the value `text` (checked by the splitter), as the
/// error words name it.
fn json_kind(text: &[u8]) -> &'static str {
    match text.trim_ascii_start().first() {
        Some(b'{') => "an object",
        Some(b'"') => "a string",
        Some(b'n') => "null",
        Some(b't' | b'f') => "a boolean",
        _ => "a number",
    }
}

/// Parses the elements of a chunk into `out` (`None` for top-level members),
/// in parallel when there are enough of them.
fn parse_items(chunk: &Chunk, mut out: Vec<Option<Parsed>>) -> Vec<Option<Parsed>> {
    let buf = &chunk.buf[..chunk.len];
    // Trace text is nearly always ASCII: one check of the whole chunk, 64
    // bytes a step, instead of one per element.
    let text = parse::all_ascii(buf).then(|| {
        // SAFETY: ASCII is valid UTF-8 (checked just above).
        unsafe { std::str::from_utf8_unchecked(buf) }
    });
    let parse = |it: &Item| match it {
        Item::Event(r) => Some(match text {
            // Element boundaries are ASCII bytes (`{`, `}`), so the slice
            // is at character boundaries.
            Some(text) => parse::parse_event_str(&text[r.clone()]),
            None => parse::parse_event(&buf[r.clone()]),
        }),
        Item::NonObject(r) => Some(parse::parse_non_object(&buf[r.clone()])),
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

/// The value in `seen` equal to `value`, or, the first time, the one
/// `make` builds, stored for the next: how the fold shares the copies of
/// `Input Dims`, texts and rank lists that events repeat.
fn shared<T, Q>(seen: &mut FxHashSet<T>, value: &Q, make: impl FnOnce() -> T) -> T
where
    T: Borrow<Q> + Hash + Eq + Clone,
    Q: Hash + Eq + ?Sized,
{
    if let Some(seen) = seen.get(value) {
        return seen.clone();
    }
    let new = make();
    seen.insert(new.clone());
    new
}

/// What is left of the distinct lists' budget ([`MAX_DISTINCT_LIST_BYTES`]),
/// and how many times a list was refused.
struct ListBudget {
    left: usize,
    refused: u64,
}

impl ListBudget {
    /// Whether a new distinct list of `len` bytes may be kept, taking its
    /// length from what is left. The caller counts a refusal (as such, or
    /// as a malformed list).
    fn admit(&mut self, len: usize) -> bool {
        let fits = len <= self.left;
        if fits {
            self.left -= len;
        }
        fits
    }
}

/// `convert(text)`, computed once per distinct `text` and remembered in
/// `by_text` (a failed conversion too); a `text` not seen before only if
/// `admit(its length)`, else `None`.
fn converted_once<T: Clone>(
    by_text: &mut FxHashMap<Box<[u8]>, T>,
    text: &[u8],
    admit: impl FnOnce(usize) -> bool,
    convert: impl FnOnce(&str) -> T,
) -> Option<T> {
    if let Some(v) = by_text.get(text) {
        return Some(v.clone());
    }
    if !admit(text.len()) {
        return None;
    }
    let v = convert(&text_str(text));
    by_text.insert(text.into(), v.clone());
    Some(v)
}

/// A used top-level member read ([`Builder::add_member`]).
struct MemberRead {
    /// The field it sets: [`meta::field_of`] its key, one for every
    /// spelling of a field.
    field: &'static str,
    /// The spellings of the field read so far, in the order first seen:
    /// the last read is the one kept.
    spellings: Vec<String>,
    /// The warning that two spellings of the field were read, when one
    /// was given (replaced as later members change which is kept).
    spellings_warning: Option<String>,
    /// The warnings its value gave, taken back if a repeat replaces it.
    warnings: Vec<String>,
    /// Whether a repeat of it was warned about (once per field, whichever
    /// of its spellings repeats).
    repeat_warned: bool,
}

/// Folds parsed items into a [`Trace`].
struct Builder<'s> {
    trace: Trace,
    /// Where kept complete events go, if not into `trace.events`.
    sink: Option<&'s mut dyn EventSink>,
    /// Interned strings by their UTF-8 bytes.
    interned: FxHashMap<Box<[u8]>, StrId>,
    /// Skip counts by reason, then category as written (UTF-8 bytes).
    skipped: FxHashMap<SkipReason, FxHashMap<Box<[u8]>, u64>>,
    /// Every distinct `Input Dims` seen: events share one copy each.
    shapes: FxHashSet<InputDims>,
    /// Every distinct `Input type` and collective text seen, by its
    /// bytes: events share one copy each.
    texts: FxHashMap<Box<[u8]>, Arc<str>>,
    /// Every distinct `Process Group Ranks` list seen.
    rank_lists: FxHashSet<Arc<RankList>>,
    /// `Input Dims` by raw text: each distinct text parsed once.
    dims_by_text: FxHashMap<Box<[u8]>, Option<InputDims>>,
    /// `Process Group Ranks` by text, likewise.
    ranks_by_text: FxHashMap<Box<[u8]>, Option<Arc<RankList>>>,
    /// Index of the next `traceEvents` element.
    index: u64,
    distributed_rank: Option<u32>,
    /// Whether a top-level `nodes` member was seen: a PyTorch execution
    /// trace, if there are no events.
    saw_nodes: bool,
    /// What a top-level `traceEvents` that is not an array holds (`an
    /// object`, `null`), for the error when no array is found.
    events_not_array: Option<&'static str>,
    /// The used top-level members read so far ([`meta::is_used`]), each
    /// with the warnings its value gave (taken back when a repeat of it
    /// replaces it) and whether its repeat was warned about.
    members_read: Vec<MemberRead>,
    /// Texts longer than [`MAX_TEXT_BYTES`] that were cut.
    texts_cut: u64,
    /// The distinct lists it may still keep.
    lists: ListBudget,
    /// The bytes of distinct names and texts it may keep in all.
    texts_budget: usize,
    /// What is left of `texts_budget`.
    texts_left: usize,
    /// Whether the fold passed `texts_budget`: checked after each item,
    /// which then fails.
    texts_over: bool,
    /// Whether a timeline lumos merged of several ranks is read
    /// ([`read_bytes_merged`]) rather than refused.
    merged_allowed: bool,
    /// What the `distributedInfo` read last says of a timeline lumos
    /// merged ([`meta::Applied::merged`]): decided at the end of the
    /// file, where the member kept is known.
    merged_mark: Option<Option<usize>>,
    /// Whether the `traceName` read last is one lumos gave its merged
    /// timelines ([`meta::is_merged_trace_name`]).
    merged_name: bool,
    /// Kept events that end absurdly far past the rest of the trace.
    outliers: Outliers,
    /// Kept events' starts, for those far from the rest of the trace: the
    /// host's events and the device's apart (a device clock days off its
    /// host's is skew, which the graph build warns about, not a damaged
    /// `ts`).
    starts: [Starts; 2],
}

impl<'s> Builder<'s> {
    fn new(
        path: &Path,
        gzipped: bool,
        sink: Option<&'s mut dyn EventSink>,
        sizes: Sizes,
    ) -> Builder<'s> {
        Builder {
            trace: Trace {
                path: path.to_owned(),
                gzipped,
                ..Trace::default()
            },
            sink,
            interned: FxHashMap::default(),
            skipped: FxHashMap::default(),
            shapes: FxHashSet::default(),
            texts: FxHashMap::default(),
            rank_lists: FxHashSet::default(),
            dims_by_text: FxHashMap::default(),
            ranks_by_text: FxHashMap::default(),
            index: 0,
            distributed_rank: None,
            saw_nodes: false,
            events_not_array: None,
            members_read: Vec::new(),
            texts_cut: 0,
            lists: ListBudget {
                left: sizes.distinct_lists,
                refused: 0,
            },
            texts_budget: sizes.distinct_texts,
            texts_left: sizes.distinct_texts,
            texts_over: false,
            merged_allowed: sizes.merged_allowed,
            merged_mark: None,
            merged_name: false,
            outliers: Outliers::default(),
            starts: Default::default(),
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
                    if self.texts_over {
                        return Err(ReadError::new(
                            &self.trace.path,
                            ErrorKind::TooManyTexts {
                                event: self.index,
                                limit: self.texts_budget as u64,
                            },
                        ));
                    }
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
                let flow = Flow {
                    kind,
                    phase,
                    id,
                    pid,
                    tid,
                    ts_ns,
                };
                let kept = match &mut self.sink {
                    Some(sink) => sink.flow(flow),
                    None => Some(flow),
                };
                self.trace.flows.extend(kept);
            }
            p @ (Parsed::TrackName { .. }
            | Parsed::TrackSort { .. }
            | Parsed::ProcessLabels { .. }) => self.add_metadata(p, element),
            Parsed::Metadata => {}
            Parsed::Memory { event, cat } => {
                self.trace.memory.push(event);
                self.skip(cat.bytes(element), SkipReason::NotATask);
            }
            Parsed::Skip { cat, reason } => self.skip(cat.bytes(element), reason),
            Parsed::Repaired { parsed, repairs } => {
                self.note_repairs(repairs, Some(self.index));
                self.add(*parsed, element);
            }
            Parsed::Syntax { .. } => unreachable!("syntax errors stop the fold"),
        }
    }

    /// Adds a metadata event's name, sort index or labels. Out of line:
    /// a few per trace, and inlined they changed how the compiler treats
    /// the events' path.
    #[inline(never)]
    fn add_metadata(&mut self, parsed: Parsed, element: &[u8]) {
        match parsed {
            Parsed::TrackName { pid, tid, mut name } => {
                self.cut_string(&mut name);
                // Each track's name is kept as it comes, not shared: 10,000
                // names of 60 KB in 1 MB of gzip took 600 MB without this.
                self.take_text_budget(name.len());
                let pid = self.ident(&pid, element);
                let tid = tid.map(|t| self.ident(&t, element));
                self.trace.track_names.push(TrackName { pid, tid, name });
            }
            Parsed::TrackSort { pid, tid, index } => {
                let pid = self.ident(&pid, element);
                let tid = tid.map(|t| self.ident(&t, element));
                self.trace.track_sorts.push(TrackSort { pid, tid, index });
            }
            Parsed::ProcessLabels { pid, mut labels } => {
                self.cut_string(&mut labels);
                self.take_text_budget(labels.len());
                let pid = self.ident(&pid, element);
                self.trace
                    .process_labels
                    .push(ProcessLabels { pid, labels });
            }
            _ => unreachable!("only metadata comes here"),
        }
    }

    /// Counts what the parser repaired in event `index` (`None`: in a
    /// top-level member).
    fn note_repairs(&mut self, repairs: Repairs, index: Option<u64>) {
        let s = &mut self.trace.skipped;
        if repairs.non_finite > 0 {
            s.non_finite.count += u64::from(repairs.non_finite);
            s.non_finite.first_index = s.non_finite.first_index.or(index);
        }
        // One count for both: each is text that is not UTF-8, read with
        // U+FFFD, and one warning keeps the stored warnings' shape.
        if repairs.invalid_utf8 || repairs.lone_surrogate {
            s.invalid_utf8.count += 1;
            s.invalid_utf8.first_index = s.invalid_utf8.first_index.or(index);
        }
        if repairs.repeated != 0 {
            s.repeated_members.count += 1;
            s.repeated_members.first_index = s.repeated_members.first_index.or(index);
            s.first_repeated_member = (s.first_repeated_member)
                .or(Some(crate::parse::repeated_member_name(repairs.repeated)));
        }
    }

    fn skip(&mut self, cat: &[u8], reason: SkipReason) {
        let cat = self.cut(cat);
        let by_cat = self.skipped.entry(reason).or_default();
        match by_cat.get_mut(cat) {
            Some(n) => *n += 1,
            None => {
                by_cat.insert(cat.into(), 1);
                self.take_text_budget(cat.len());
            }
        }
        self.trace
            .skipped
            .first_index
            .entry(reason)
            .or_insert(self.index);
    }

    // Inlined into `add`, its one caller: left out of line by the compiler
    // (once `convert_texts` grew), the parsed event was copied into the
    // call, 0.4% more of the reader's instructions on v100.
    #[inline(always)]
    fn add_complete(&mut self, c: Complete, element: &[u8]) {
        let name = self.intern(c.name.bytes(element));
        let pid = self.ident(&c.pid, element);
        let tid = self.ident(&c.tid, element);
        let mut extra = c.extra;
        if let Some(texts) = c.texts {
            let x = extra.get_or_insert_with(Box::default);
            self.convert_texts(x, *texts, element);
            if x.is_empty() {
                extra = None;
            }
        }
        let mut e = Event::new(c.category, name, pid, tid, c.ts_ns, c.dur_ns);
        e.extra = extra;
        let (ts_ns, dur_ns, end) = (e.ts_ns, e.dur_ns, e.end_ns());
        let index = self.index;
        let candidate = || Candidate {
            end,
            index,
            name,
            pid,
            tid,
            ts_ns,
            dur_ns,
        };
        (self.outliers).add(ts_ns, end, candidate);
        (self.starts[usize::from(on_device_clock(c.category))]).add(ts_ns, candidate);
        let kept = [
            ("correlation", e.set_correlation(c.ids.correlation())),
            ("External id", e.set_external_id(c.ids.external_id())),
            ("stream", e.set_stream(c.ids.stream())),
            ("device", e.set_device(c.ids.device())),
        ];
        for (key, _) in kept.iter().filter(|(_, ok)| !ok) {
            self.bad_arg(key);
        }
        let kept = match &mut self.sink {
            Some(sink) => sink.event(e, &self.trace.strings),
            None => Some(e),
        };
        if let Some(e) = kept {
            self.trace.events.push(e);
        }
    }

    /// Counts an argument of the current event that was dropped as
    /// malformed (or, for the packed ids of [`Event`], out of range).
    fn bad_arg(&mut self, key: &'static str) {
        let bad = self.trace.skipped.bad_args.entry(key).or_insert(BadArg {
            count: 0,
            first_index: self.index,
        });
        bad.count += 1;
    }

    /// Counts the malformed collective counts of the current event, by
    /// their bits in [`ExtraTexts::bad_counts`].
    #[cold]
    fn bad_counts(&mut self, bits: u8) {
        for (k, key) in crate::parse::BAD_COUNT_KEYS.iter().enumerate() {
            if bits & (1 << k) != 0 {
                self.bad_arg(key);
            }
        }
    }

    /// Fills in the extras of the current event from its `texts` (of
    /// `element`), each shared with the equal values seen before.
    fn convert_texts(&mut self, x: &mut EventExtra, texts: ExtraTexts, element: &[u8]) {
        if texts.bad_counts != 0 {
            self.bad_counts(texts.bad_counts);
        }
        if let Some(t) = &texts.input_dims {
            x.input_dims = self.input_dims(t.bytes(element));
        }
        if let Some(t) = &texts.input_type {
            x.input_type = self.input_type(t.bytes(element));
        }
        if let Some(c) = x.collective.as_deref_mut() {
            let mut text = |t: Option<Text>| t.map(|t| self.text(t.bytes(element)));
            c.name = text(texts.collective_name);
            c.dtype = text(texts.dtype);
            c.pg_name = text(texts.pg_name);
            c.pg_desc = text(texts.pg_desc);
            c.pg_ranks = texts
                .pg_ranks
                .and_then(|t| self.rank_list(t.bytes(element)));
        }
    }

    /// `Input Dims` of the raw JSON `text`, parsed once per distinct text
    /// and shared with the equal lists seen before; `None` if malformed.
    fn input_dims(&mut self, text: &[u8]) -> Option<InputDims> {
        // Parsed, a list takes up to four times its text: over the limit
        // it is dropped as malformed rather than cut.
        if text.len() > MAX_LIST_TEXT_BYTES {
            self.bad_arg("Input Dims");
            return None;
        }
        let admit = |n| self.lists.admit(n);
        let dims = converted_once(&mut self.dims_by_text, text, admit, |t| {
            InputDims::parse(t).map(|d| shared(&mut self.shapes, &d, || d.clone()))
        });
        match dims {
            Some(Some(d)) => return Some(d),
            Some(None) => self.bad_arg("Input Dims"),
            None => self.dims_refused(text),
        }
        None
    }

    /// An `Input Dims` the budget refused: checked all the same, so that a
    /// malformed one is counted as such rather than as refused.
    #[cold]
    fn dims_refused(&mut self, text: &[u8]) {
        match InputDims::parse(&text_str(text)) {
            Some(_) => self.lists.refused += 1,
            None => self.bad_arg("Input Dims"),
        }
    }

    /// `Input type` (a list: cut, it would no longer be one), shared with
    /// the equal text seen before.
    fn input_type(&mut self, text: &[u8]) -> Option<Arc<str>> {
        if text.len() > MAX_LIST_TEXT_BYTES {
            self.bad_arg("Input type");
            return None;
        }
        let admit = |n| self.lists.admit(n);
        let kept = converted_once(&mut self.texts, text, admit, |t| t.into());
        if kept.is_none() {
            self.lists.refused += 1;
        }
        kept
    }

    /// `text`, shared with the equal text seen before, if any: operators
    /// repeat a handful of `Input type` lists, and collectives a handful
    /// of names, dtypes and groups, millions of times.
    fn text(&mut self, text: &[u8]) -> Arc<str> {
        let text = self.cut(text);
        self.shared_text(text)
    }

    /// [`Builder::text`] without the cut.
    fn shared_text(&mut self, text: &[u8]) -> Arc<str> {
        // Every text is admitted: one is always given back.
        let mut new = None;
        let admit = |n| {
            new = Some(n);
            true
        };
        let kept = converted_once(&mut self.texts, text, admit, |t| t.into())
            .unwrap_or_else(|| text_str(text).into());
        if let Some(n) = new {
            self.take_text_budget(n);
        }
        kept
    }

    /// The `Process Group Ranks` list of `text`, parsed once per distinct
    /// text and shared with the equal lists seen before; `None` if
    /// malformed.
    fn rank_list(&mut self, text: &[u8]) -> Option<Arc<RankList>> {
        if text.len() > MAX_LIST_TEXT_BYTES {
            return None;
        }
        let admit = |n| self.lists.admit(n);
        let ranks = converted_once(&mut self.ranks_by_text, text, admit, |t| {
            RankList::parse(t).map(|r| shared(&mut self.rank_lists, &r, || Arc::new(r.clone())))
        });
        if ranks.is_none() {
            self.lists.refused += 1;
        }
        ranks.flatten()
    }

    /// `text` (UTF-8) cut to at most [`MAX_TEXT_BYTES`] at a character
    /// boundary, counted when cut: a name or category is kept, and a few MB
    /// of gzip could otherwise inflate to many distinct giant ones.
    #[inline(always)]
    fn cut<'t>(&mut self, text: &'t [u8]) -> &'t [u8] {
        if text.len() <= MAX_TEXT_BYTES {
            return text;
        }
        self.cut_long(text)
    }

    /// [`Builder::cut`] of a text over the limit: out of the fold's hot
    /// path, whose inlining it changed (1.7% more instructions inline).
    #[cold]
    #[inline(never)]
    fn cut_long<'t>(&mut self, text: &'t [u8]) -> &'t [u8] {
        self.texts_cut += 1;
        let mut end = MAX_TEXT_BYTES;
        // Back to the first byte of a character (not 0b10xxxxxx).
        while end > 0 && text[end] & 0xc0 == 0x80 {
            end -= 1;
        }
        &text[..end]
    }

    /// [`Builder::cut`] of an owned string.
    fn cut_string(&mut self, text: &mut String) {
        let end = self.cut(text.as_bytes()).len();
        text.truncate(end);
    }

    /// The id of a string given as UTF-8 bytes (checked by the parser).
    fn intern(&mut self, s: &[u8]) -> StrId {
        let s = self.cut(s);
        if let Some(&id) = self.interned.get(s) {
            return id;
        }
        let id = StrId(self.trace.strings.len() as u32);
        self.trace
            .strings
            .push(String::from_utf8_lossy(s).into_owned());
        self.interned.insert(s.into(), id);
        self.take_text_budget(s.len());
        id
    }

    /// Takes a new distinct text of `len` bytes from the budget of
    /// distinct texts, noting when it is spent: the item that spent it is
    /// kept (a few texts of at most [`MAX_TEXT_BYTES`] each past it),
    /// then reading stops.
    fn take_text_budget(&mut self, len: usize) {
        match self.texts_left.checked_sub(len) {
            Some(left) => self.texts_left = left,
            None => self.texts_over = true,
        }
    }

    fn ident(&mut self, id: &PIdent, element: &[u8]) -> Ident {
        match id {
            PIdent::Num(n) => Ident::Num(*n),
            PIdent::Name(s) => Ident::Name(self.intern(s.bytes(element))),
        }
    }

    /// Reads a top-level member into the metadata if it is one the model
    /// uses; the others are not parsed.
    fn add_member(&mut self, key: &str, value: &[u8], offset: u64) -> Result<(), ReadError> {
        if key == "traceName" {
            // The last written is the name (as for any repeated member).
            self.merged_name = meta::is_merged_trace_name(value);
        }
        if !meta::is_used(key) {
            self.saw_nodes |= key == "nodes";
            if key == "traceEvents" {
                // Not an array (the splitter takes those): said if no
                // array follows, where "no traceEvents" hid what is wrong.
                self.events_not_array = Some(json_kind(value));
            }
            return Ok(());
        }
        // JSON leaves a repeated key's meaning open; its readers (Python's
        // `json`, serde_json) keep the last, as the event parser does for
        // a member an event repeats: the first value is forgotten, its
        // warnings with it, and the repeat said once.
        // Two spellings of one field (`hostname`, `hostName`) are one
        // member written twice: the last read, the other said ignored.
        let field = meta::field_of(key);
        let at = match self.members_read.iter().position(|m| m.field == field) {
            Some(at) => {
                let first = &mut self.members_read[at];
                for w in first.warnings.drain(..) {
                    if let Some(i) = self.trace.warnings.iter().rposition(|x| *x == w) {
                        self.trace.warnings.remove(i);
                    }
                }
                meta::forget(key, &mut self.trace.meta);
                if key == "distributedInfo" {
                    self.distributed_rank = None;
                    self.merged_mark = None;
                }
                if first.spellings.iter().any(|s| s == key) {
                    if !std::mem::replace(&mut first.repeat_warned, true) {
                        self.trace.warnings.push(format!(
                            "top-level \"{key}\" appears twice or more: the last is read, as \
                             JSON readers do"
                        ));
                    }
                } else {
                    first.spellings.push(key.to_owned());
                }
                if first.spellings.len() > 1 {
                    let said = spellings_warning(field, &first.spellings, key);
                    let old = first.spellings_warning.replace(said.clone());
                    match old.and_then(|w| self.trace.warnings.iter().position(|x| *x == w)) {
                        Some(i) => self.trace.warnings[i] = said,
                        None => self.trace.warnings.push(said),
                    }
                }
                at
            }
            None => {
                self.members_read.push(MemberRead {
                    field,
                    spellings: vec![key.to_owned()],
                    spellings_warning: None,
                    warnings: Vec::new(),
                    repeat_warned: false,
                });
                self.members_read.len() - 1
            }
        };
        let before = self.trace.warnings.len();
        let read = self.read_member(key, value, offset);
        self.members_read[at].warnings = self.trace.warnings[before..].to_vec();
        read
    }

    /// [`Builder::add_member`] of a member `key` not read before (or
    /// forgotten): its value parsed and applied to the metadata.
    fn read_member(&mut self, key: &str, value: &[u8], offset: u64) -> Result<(), ReadError> {
        // Parsed into a tree, a value takes many times its text (a list of
        // devices 50 times): a few KB are normal, a large one is ignored.
        if value.len() > MAX_META_BYTES {
            self.trace.warnings.push(format!(
                "top-level \"{key}\" of {} MB is over {} MiB: ignored",
                value.len() / 1_000_000,
                MAX_META_BYTES >> 20
            ));
            return Ok(());
        }
        let (json, repairs) = tree::parse(value).map_err(|e| {
            self.syntax(
                offset + e.offset as u64,
                None,
                format!("in top-level \"{key}\": {}", e.message),
            )
        })?;
        self.note_repairs(repairs, None);
        let applied = meta::apply(key, &json, &mut self.trace.meta);
        if applied.merged.is_some() {
            self.merged_mark = applied.merged;
        }
        self.note_repairs(applied.repairs, None);
        if let Some(rank) = applied.distributed_rank {
            self.distributed_rank = rank;
        }
        self.trace.warnings.extend(applied.warnings);
        Ok(())
    }

    /// Refuses a timeline lumos merged of several ranks, by the marks of
    /// the `distributedInfo` and `traceName` kept (the last of each),
    /// unless asked for, rather than read as one rank of nonsense. Known
    /// only at the end of the file: a later `distributedInfo` replaces
    /// an earlier one's mark, as it replaces its rank.
    fn merged(&self) -> Result<(), ReadError> {
        let ranks = match (self.merged_mark, self.merged_name) {
            (Some(ranks), _) => ranks,
            (None, true) => None,
            (None, false) => return Ok(()),
        };
        if self.merged_allowed {
            return Ok(());
        }
        Err(ReadError::new(
            &self.trace.path,
            ErrorKind::MergedTimeline { ranks },
        ))
    }

    fn finish(mut self) -> Trace {
        self.outlier_warning();
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
        let unknown =
            || (t.skipped.counts.iter()).filter(|((_, r), _)| *r == SkipReason::UnknownCategory);
        let count = unknown().count();
        if count > 0 {
            // A few names say what happened; thousands would bury it. The
            // most frequent are named, in the counts' order.
            let mut named: Vec<_> = unknown().collect();
            if named.len() > MAX_CATEGORIES_SHOWN {
                named.sort_by(|a, b| b.1.cmp(a.1));
                named.truncate(MAX_CATEGORIES_SHOWN);
                named.sort_by(|a, b| a.0.cmp(b.0));
            }
            let shown: Vec<String> = (named.iter())
                .map(|((c, _), n)| format!("{c} ({n})"))
                .collect();
            let more = match count - shown.len() {
                0 => String::new(),
                n => format!(" and {n} more"),
            };
            t.warnings.push(format!(
                "events of unknown categories skipped: {}{more}",
                shown.join(", ")
            ));
        }
        if self.lists.refused > 0 {
            t.warnings.push(format!(
                "argument lists left out {}, each event kept without it: a trace keeps its \
                 distinct `Input Dims`, `Input type` and `Process Group Ranks` lists up to {} \
                 MiB of text, and this one has more",
                counted(self.lists.refused, "time", "times"),
                MAX_DISTINCT_LIST_BYTES >> 20
            ));
        }
        if self.texts_cut > 0 {
            t.warnings.push(format!(
                "names, categories or texts longer than {} KiB cut to their first {} KiB \
                 ({})",
                MAX_TEXT_BYTES >> 10,
                MAX_TEXT_BYTES >> 10,
                counted(self.texts_cut, "time", "times")
            ));
        }
        let malformed = |r: &SkipReason| {
            !matches!(
                r,
                SkipReason::NotModeled
                    | SkipReason::NotATask
                    | SkipReason::UnknownCategory
                    | SkipReason::BeginEnd
                    | SkipReason::OtherPhase
            )
        };
        let bad = (t.skipped.counts.iter())
            .filter(|((_, r), _)| malformed(r))
            .map(|(_, n)| n)
            .sum::<u64>();
        if bad > 0 {
            let first = (t.skipped.first_index.iter())
                .filter(|(r, _)| malformed(r))
                .map(|(_, &i)| i)
                .min()
                .unwrap_or(0);
            t.warnings.push(format!(
                "{} skipped (first at traceEvents[{first}])",
                counted(bad, "malformed event", "malformed events")
            ));
        }
        // Valid events, not malformed ones, but unlike the instants and
        // the categories left out on purpose they may time work: say
        // what leaving them out does to the results.
        let valid_unread = [
            (
                SkipReason::BeginEnd,
                "begin/end (\"B\"/\"E\") duration event",
                "begin/end (\"B\"/\"E\") duration events",
                "valid trace events, which lumos does not read (it reads complete \"X\" \
                 events); the spans they mark are not in the graph, so replays, predictions \
                 and reports leave them out",
            ),
            (
                SkipReason::OtherPhase,
                "event of another trace-event phase",
                "events of other trace-event phases",
                "valid trace events of phases lumos does not read (async spans, objects, \
                 samples, marks, clock syncs, memory dumps, contexts); what they mark is not \
                 in the graph",
            ),
        ];
        for (reason, one, many, why) in valid_unread {
            let n = (t.skipped.counts.iter())
                .filter(|((_, r), _)| *r == reason)
                .map(|(_, n)| n)
                .sum::<u64>();
            if n > 0 {
                let first = (t.skipped.first_index.get(&reason)).map_or(0, |&i| i);
                t.warnings.push(format!(
                    "{} skipped (first at traceEvents[{first}]): {why}",
                    counted(n, one, many)
                ));
            }
        }
        for (key, bad) in &t.skipped.bad_args {
            // A collective's counts: say what their loss costs, as the
            // graph's warning on collectives without a size does.
            let cost = match *key {
                "In msg nelems" | "Out msg nelems" => {
                    " (a collective without an element count has no size in bytes: replays take \
                     its measured duration)"
                }
                _ => "",
            };
            t.warnings.push(format!(
                "{} with a malformed {key:?} (first at traceEvents[{}]): kept without it{cost}",
                counted(bad.count, "event", "events"),
                bad.first_index
            ));
        }
        let first = |o: &Occurrences| match o.first_index {
            Some(i) => format!("first at traceEvents[{i}]"),
            None => "in top-level members".into(),
        };
        let s = &t.skipped;
        if s.non_finite.count > 0 {
            t.warnings.push(format!(
                "{} written as NaN or Infinity ({}): read as absent values",
                counted(s.non_finite.count, "number", "numbers"),
                first(&s.non_finite)
            ));
        }
        if s.invalid_utf8.count > 0 {
            t.warnings.push(format!(
                "{} with invalid UTF-8 or lone surrogate escapes ({}): read with U+FFFD \
                 in place of each",
                counted(s.invalid_utf8.count, "event or member", "events or members"),
                first(&s.invalid_utf8)
            ));
        }
        if s.repeated_members.count > 0 {
            t.warnings.push(format!(
                "{} a member twice or more ({}: {:?}): the last value read, as JSON readers do",
                counted(s.repeated_members.count, "event writes", "events write"),
                first(&s.repeated_members),
                s.first_repeated_member.unwrap_or("?"),
            ));
        }
        self.trace
    }
}

/// Whether events of category `c` are timed by the device's clock (GPU
/// work, its annotations and its synchronization records), not the host's.
fn on_device_clock(c: Category) -> bool {
    c.is_gpu_work()
        || matches!(
            c,
            Category::GpuUserAnnotation | Category::CudaSync | Category::CudaEvent
        )
}

impl Builder<'_> {
    /// Refuses a trace with events that start far from the rest
    /// ([`crate::outliers::Starts`]): the events were handed to the
    /// caller's sink as they were read, so they cannot be left out now,
    /// and kept they would stretch the trace's window, steps and replays
    /// over the gap (54 years for one `ts` of 0 among absolute times).
    #[inline(never)]
    fn outlying_starts(&mut self) -> Result<(), ReadError> {
        // The host's first: the middle of its starts breaks a tie of the
        // device's.
        let [host, device] = std::mem::take(&mut self.starts);
        let (host, near) = host.finish_near(None);
        let found = [host, device.finish_near(near).0];
        let Some(o) = found.into_iter().flatten().min_by_key(|o| o.first.index) else {
            return Ok(());
        };
        let t = &self.trace;
        let c = o.first;
        let far = match o.gap_ns {
            Some(gap) => format!(
                "{} {} the other {}, which start within {}",
                duration_words(gap),
                if o.before { "before" } else { "after" },
                counted(o.kept, "event", "events"),
                duration_words(o.span_ns),
            ),
            None => format!(
                "more than {} days of starts apart from the other {}",
                crate::outliers::MAX_DAYS,
                counted(o.kept, "event", "events"),
            ),
        };
        let detail = format!(
            "{} {far}: first {:?} at traceEvents[{}] (ts {:.3} us, pid {}, tid {}); a damaged \
             or edited ts? Read as written, the trace's window, steps and replays would span \
             the gap: remove or fix {}",
            counted(o.count, "event starts", "events start"),
            t.str(c.name),
            c.index,
            c.ts_ns as f64 / 1e3,
            t.ident(c.pid),
            t.ident(c.tid),
            if o.count == 1 { "it" } else { "them" },
        );
        Err(ReadError::new(
            &t.path,
            ErrorKind::OutlyingStarts {
                events: o.count,
                first_index: c.index,
                detail,
            },
        ))
    }

    /// The warning about events that end absurdly far past the rest of
    /// the trace ([`crate::outliers`]), naming the first in file order.
    /// They are kept as written: a `dur` may be damaged, or a real event
    /// may run that long, and the reader keeps what the file says; the
    /// warning says which numbers it makes long.
    #[inline(never)]
    fn outlier_warning(&mut self) {
        let (absurd, limit) = std::mem::take(&mut self.outliers).finish();
        self.trace.absurd_durations = absurd.len() as u64;
        let Some(c) = absurd.first() else {
            return;
        };
        let t = &self.trace;
        let place = |id: Ident| t.ident(id);
        let warning = format!(
            "{} more than {:.3} ms after the trace's last event start ({} times the span of \
             its starts, 1 s at least): first {:?} at traceEvents[{}] (ts {:.3} us, dur \
             {:.3} us, pid {}, tid {}); kept as written, so the steps, spans and replays \
             that hold {} are that long (a damaged or edited dur?)",
            counted(absurd.len() as u64, "event ends", "events end"),
            limit as f64 / 1e6,
            crate::outliers::SPANS,
            t.str(c.name),
            c.index,
            c.ts_ns as f64 / 1e3,
            c.dur_ns as f64 / 1e3,
            place(c.pid),
            place(c.tid),
            if absurd.len() == 1 { "it" } else { "them" },
        );
        self.trace.warnings.push(warning);
    }
}

/// A length of time as a person reads it: "54.2 years", "3.5 days",
/// "2.345 s", "465.260 ms", "12.000 us".
fn duration_words(ns: i64) -> String {
    const DAY: f64 = 86_400e9;
    let f = ns as f64;
    if f >= 365.25 * DAY {
        format!("{:.1} years", f / (365.25 * DAY))
    } else if f >= DAY {
        format!("{:.1} days", f / DAY)
    } else if f >= 1e9 {
        format!("{:.3} s", f / 1e9)
    } else if f >= 1e6 {
        format!("{:.3} ms", f / 1e6)
    } else {
        format!("{:.3} us", f / 1e3)
    }
}

/// `n` and the noun that agrees with it: "1 event", "2 events".
fn counted(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The number after the last `rank` in a file name (`rank3.json.gz`,
/// `foo_rank_12.json`, `rank0of8`), if any. A name that is not UTF-8 is
/// read lossily, as [`crate::trace_files_under`] lists it: what is looked
/// for is ASCII, so `n\xff_rank3.json.gz` is rank 3 (it was no rank, and
/// rank 0 beside `n_rank3.json.gz`'s 3).
pub fn rank_from_file_name(path: &Path) -> Option<u32> {
    let name = path.file_name()?.to_string_lossy().to_ascii_lowercase();
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

    #[cfg(unix)]
    #[test]
    fn rank_from_a_name_that_is_not_utf8() {
        use std::os::unix::ffi::OsStrExt;
        let name = |b: &[u8]| rank_from_file_name(Path::new(std::ffi::OsStr::from_bytes(b)));
        assert_eq!(name(b"n\xff_rank3.json.gz"), Some(3));
        assert_eq!(name(b"rank\xff3.json.gz"), None);
        assert_eq!(name(b"tr\xff.json.gz"), None);
    }

    #[test]
    fn equal_values_are_shared_and_texts_converted_once() {
        let mut seen: FxHashSet<Arc<str>> = FxHashSet::default();
        let a = shared(&mut seen, "x", || "x".into());
        let b = shared(&mut seen, "x", || unreachable!("already seen"));
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(seen.len(), 1);
        let mut by_text = FxHashMap::default();
        let mut calls = 0;
        for text in ["1", "bad", "1", "bad"] {
            let v = converted_once(
                &mut by_text,
                text.as_bytes(),
                |_| true,
                |t| {
                    calls += 1;
                    t.parse::<u32>().ok()
                },
            );
            assert_eq!(v, Some(text.parse().ok()));
        }
        assert_eq!(calls, 2);
    }

    #[test]
    fn distinct_lists_past_the_budget_are_refused() {
        let mut budget = ListBudget {
            left: 6,
            refused: 0,
        };
        let mut by_text = FxHashMap::default();
        let mut keep =
            |t: &str| converted_once(&mut by_text, t.as_bytes(), |n| budget.admit(n), |t| t.len());
        assert_eq!(keep("[1,2]"), Some(5));
        // Seen before: no more of the budget.
        assert_eq!(keep("[1,2]"), Some(5));
        assert_eq!(keep("[3,4]"), None);
        assert_eq!(keep("[]"), None);
        assert_eq!(keep("1"), Some(1));
        assert_eq!(keep("[1,2]"), Some(5));
        assert_eq!(budget.left, 0);
    }
}
