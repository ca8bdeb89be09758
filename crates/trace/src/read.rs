//! Reading a file: detect gzip, split the JSON into chunks of events, parse
//! each chunk's events in parallel, and fold them into a [`Trace`] in order.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::error::{ErrorKind, ReadError};
use crate::model::*;
use crate::raw::{Micros, RawArgs, RawEvent, RawIdent};
use crate::split::{Item, Splitter};

/// Bytes of JSON read per chunk. Large enough that parallel parsing pays,
/// small enough that the buffer stays a small part of peak memory.
const CHUNK: usize = 4 << 20;

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
    read_from(path, BufReader::with_capacity(1 << 16, file), progress)
}

/// Reads a trace from bytes already in memory; `path` only names it in
/// errors and in [`Trace::path`].
pub fn read_bytes(path: &Path, data: &[u8]) -> Result<Trace, ReadError> {
    read_from(path, data, &|_| {})
}

fn read_from<R: BufRead>(
    path: &Path,
    mut input: R,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Trace, ReadError> {
    let head = input
        .fill_buf()
        .map_err(|e| ReadError::new(path, ErrorKind::Io(e)))?;
    let gzipped = head.starts_with(&[0x1f, 0x8b]);
    if gzipped {
        let decoder = flate2::bufread::MultiGzDecoder::new(input);
        read_json(path, decoder, true, progress)
    } else {
        read_json(path, input, false, progress)
    }
}

fn read_json<R: Read>(
    path: &Path,
    mut src: R,
    gzipped: bool,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Trace, ReadError> {
    let err = |kind| ReadError::new(path, kind);
    let mut builder = Builder::new(path, gzipped);
    let mut splitter = Splitter::new();
    let mut buf: Vec<u8> = Vec::with_capacity(CHUNK + (CHUNK >> 2));
    // Offset of buf[0] in the uncompressed stream.
    let mut base: u64 = 0;
    let mut pos = 0usize;
    let mut eof = false;
    let mut items = Vec::new();
    loop {
        // Read at least CHUNK new bytes, so an item larger than a chunk
        // still completes after a few rounds.
        let target = buf.len() + CHUNK;
        while !eof && buf.len() < target {
            let old = buf.len();
            buf.resize(target, 0);
            match src.read(&mut buf[old..]) {
                Ok(0) => {
                    buf.truncate(old);
                    eof = true;
                }
                Ok(n) => buf.truncate(old + n),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => buf.truncate(old),
                Err(e) => {
                    buf.truncate(old);
                    let uncompressed = base + buf.len() as u64;
                    return Err(err(if gzipped {
                        ErrorKind::Gzip {
                            uncompressed,
                            source: e,
                        }
                    } else {
                        ErrorKind::Io(e)
                    }));
                }
            }
        }
        items.clear();
        splitter
            .scan(&buf, &mut pos, eof, &mut items)
            .map_err(|e| {
                err(ErrorKind::Syntax {
                    offset: base + e.offset as u64,
                    event: None,
                    message: e.message,
                })
            })?;
        builder.take_items(&buf, base, &items)?;
        progress(base + pos as u64);
        if eof {
            let total = base + buf.len() as u64;
            if total == 0 || (buf.iter().all(|b| b.is_ascii_whitespace()) && base == 0) {
                return Err(err(ErrorKind::Empty));
            }
            if !splitter.is_done() {
                return Err(err(ErrorKind::Truncated {
                    offset: total,
                    context: splitter.context(),
                }));
            }
            if !splitter.saw_events() {
                return Err(err(ErrorKind::NotATrace(
                    "the top-level object has no traceEvents array".into(),
                )));
            }
            builder.trace.json_bytes = total;
            return Ok(builder.finish());
        }
        buf.drain(..pos);
        base += pos as u64;
        pos = 0;
    }
}

/// Folds parsed items into a [`Trace`].
struct Builder {
    trace: Trace,
    interned: FxHashMap<String, StrId>,
    /// Index of the next `traceEvents` element.
    index: u64,
    distributed_rank: Option<u32>,
}

enum Parsed<'a> {
    Event(Box<RawEvent<'a>>),
    BadType,
    Syntax { offset: usize, message: String },
}

fn parse_event(bytes: &[u8]) -> Parsed<'_> {
    match sonic_rs::from_slice::<RawEvent>(bytes) {
        Ok(e) => Parsed::Event(Box::new(e)),
        Err(e) if e.is_syntax() || e.is_eof() => Parsed::Syntax {
            offset: e.offset(),
            message: e.to_string(),
        },
        Err(_) => Parsed::BadType,
    }
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
            index: 0,
            distributed_rank: None,
        }
    }

    fn take_items(&mut self, buf: &[u8], base: u64, items: &[Item]) -> Result<(), ReadError> {
        let parsed: Vec<Option<Parsed>> = items
            .par_iter()
            .with_min_len(512)
            .map(|it| match it {
                Item::Event(r) => Some(parse_event(&buf[r.clone()])),
                _ => None,
            })
            .collect();
        for (item, parsed) in items.iter().zip(parsed) {
            match (item, parsed) {
                (Item::Event(r), Some(Parsed::Event(raw))) => {
                    let _ = r;
                    self.add_event(*raw);
                    self.index += 1;
                }
                (Item::Event(_), Some(Parsed::BadType)) => {
                    self.trace
                        .skipped
                        .add("-", SkipReason::BadFieldType, self.index);
                    self.index += 1;
                }
                (Item::Event(r), Some(Parsed::Syntax { offset, message })) => {
                    return Err(ReadError::new(
                        &self.trace.path,
                        ErrorKind::Syntax {
                            offset: base + (r.start + offset) as u64,
                            event: Some(self.index),
                            message,
                        },
                    ));
                }
                (Item::NonObject(r), _) => {
                    if let Err(e) = sonic_rs::from_slice::<sonic_rs::Value>(&buf[r.clone()]) {
                        return Err(ReadError::new(
                            &self.trace.path,
                            ErrorKind::Syntax {
                                offset: base + (r.start + e.offset()) as u64,
                                event: Some(self.index),
                                message: e.to_string(),
                            },
                        ));
                    }
                    self.trace
                        .skipped
                        .add("-", SkipReason::NotAnObject, self.index);
                    self.index += 1;
                }
                (Item::Member { key, value }, _) => {
                    self.add_member(key, &buf[value.clone()], base + value.start as u64)?
                }
                (Item::Event(_), None) => unreachable!("events are always parsed"),
            }
        }
        Ok(())
    }

    fn intern(&mut self, s: &str) -> StrId {
        if let Some(&id) = self.interned.get(s) {
            return id;
        }
        let id = StrId(self.trace.strings.len() as u32);
        self.trace.strings.push(s.to_owned());
        self.interned.insert(s.to_owned(), id);
        id
    }

    fn ident(&mut self, raw: &RawIdent) -> Ident {
        match raw {
            RawIdent::Num(n) => Ident::Num(*n),
            RawIdent::Str(s) => match s.trim().parse::<i64>() {
                Ok(n) => Ident::Num(n),
                Err(_) => Ident::Name(self.intern(s)),
            },
        }
    }

    fn add_event(&mut self, raw: RawEvent) {
        let idx = self.index;
        let cat = raw.cat.as_deref().unwrap_or("");
        let cat_label = if cat.is_empty() { "-" } else { cat };
        let Some(ph) = raw.ph.as_deref() else {
            self.trace
                .skipped
                .add(cat_label, SkipReason::MissingPhase, idx);
            return;
        };
        match ph {
            "X" => self.add_complete(raw, idx),
            "M" => self.add_metadata(raw, idx),
            "s" | "f" | "t" => self.add_flow(raw, idx),
            "i" | "I" | "C" => self.trace.skipped.add(cat_label, SkipReason::NotATask, idx),
            _ => self
                .trace
                .skipped
                .add(cat_label, SkipReason::UnsupportedPhase, idx),
        }
    }

    fn add_complete(&mut self, raw: RawEvent, idx: u64) {
        let cat = raw.cat.as_deref().unwrap_or("");
        let cat_label = if cat.is_empty() { "-" } else { cat };
        let Some(category) = Category::parse(cat) else {
            let reason = if is_known_unmodeled(cat) {
                SkipReason::NotModeled
            } else {
                SkipReason::UnknownCategory
            };
            self.trace.skipped.add(cat_label, reason, idx);
            return;
        };
        let skip = |b: &mut Self, r| b.trace.skipped.add(cat_label, r, idx);
        let ts = match raw.ts {
            None | Some(Micros::Invalid) => return skip(self, SkipReason::MissingTs),
            Some(Micros::OutOfRange) => return skip(self, SkipReason::TimeOutOfRange),
            Some(Micros::Ns(t)) => t,
        };
        let dur = match raw.dur {
            None | Some(Micros::Invalid) => return skip(self, SkipReason::MissingDur),
            Some(Micros::OutOfRange) => return skip(self, SkipReason::TimeOutOfRange),
            Some(Micros::Ns(d)) if d < 0 => return skip(self, SkipReason::NegativeDur),
            Some(Micros::Ns(d)) => d,
        };
        if ts.checked_add(dur).is_none() {
            return skip(self, SkipReason::TimeOutOfRange);
        }
        let Some(name) = raw.name.as_deref() else {
            return skip(self, SkipReason::MissingName);
        };
        let (Some(pid), Some(tid)) = (raw.pid.as_ref(), raw.tid.as_ref()) else {
            return skip(self, SkipReason::MissingPidTid);
        };
        let name = self.intern(name);
        let pid = self.ident(pid);
        let tid = self.ident(tid);
        let args = raw.args.unwrap_or_default();
        let extra = extra_from(&args);
        self.trace.events.push(Event {
            category,
            name,
            pid,
            tid,
            ts_ns: ts,
            dur_ns: dur,
            correlation: args.correlation.0,
            external_id: args.external_id.0,
            stream: args.stream.0,
            device: args.device.0,
            extra: (!extra.is_empty()).then(|| Box::new(extra)),
        });
    }

    fn add_metadata(&mut self, raw: RawEvent, _idx: u64) {
        let (Some(name), Some(pid)) = (raw.name.as_deref(), raw.pid.as_ref()) else {
            return;
        };
        let Some(label) = raw.args.as_ref().and_then(|a| a.name.0.as_deref()) else {
            return;
        };
        let label = label.to_owned();
        let tid = match name {
            "thread_name" => raw.tid.as_ref().map(|t| self.ident(t)),
            "process_name" => None,
            _ => return,
        };
        let pid = self.ident(pid);
        self.trace.track_names.push(TrackName {
            pid,
            tid,
            name: label,
        });
    }

    fn add_flow(&mut self, raw: RawEvent, idx: u64) {
        let cat = raw.cat.as_deref().unwrap_or("");
        let kind = match cat {
            "ac2g" | "async_cpu_to_gpu" | "async" => FlowKind::Launch,
            "fwdbwd" => FlowKind::FwdBwd,
            _ => {
                let label = if cat.is_empty() { "-" } else { cat };
                return self.trace.skipped.add(label, SkipReason::BadFlow, idx);
            }
        };
        let (Some(id), Some(Micros::Ns(ts)), Some(pid), Some(tid)) =
            (raw.id.0, raw.ts, raw.pid.as_ref(), raw.tid.as_ref())
        else {
            return self.trace.skipped.add(cat, SkipReason::BadFlow, idx);
        };
        let phase = if raw.ph.as_deref() == Some("s") {
            FlowPhase::Start
        } else {
            FlowPhase::End
        };
        let pid = self.ident(pid);
        let tid = self.ident(tid);
        self.trace.flows.push(Flow {
            kind,
            phase,
            id,
            pid,
            tid,
            ts_ns: ts,
        });
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
        self.trace
    }
}

fn extra_from(a: &RawArgs) -> EventExtra {
    let collective = if a.collective_name.0.is_some()
        || a.pg_name.0.is_some()
        || a.in_nelems.0.is_some()
        || a.seq.0.is_some()
    {
        Some(CollectiveArgs {
            name: a.collective_name.0.as_deref().map(Into::into),
            in_nelems: a.in_nelems.0,
            out_nelems: a.out_nelems.0,
            group_size: a.group_size.0.and_then(|g| u32::try_from(g).ok()),
            dtype: a.dtype.0.as_deref().map(Into::into),
            pg_name: a.pg_name.0.as_deref().map(Into::into),
            pg_desc: a.pg_desc.0.as_deref().map(Into::into),
            pg_ranks: a.pg_ranks.0.as_deref().and_then(RankList::parse),
            seq: a.seq.0,
            src_rank: a.src_rank.0,
            dst_rank: a.dst_rank.0,
        })
    } else {
        None
    };
    EventExtra {
        sequence_number: a.sequence_number.0,
        fwd_thread_id: a.fwd_thread_id.0,
        wait_on_stream: a.wait_on_stream.0,
        wait_on_event_record_correlation: a.wait_on_cuda_event_record_corr_id.0,
        event_id: a.wait_on_cuda_event_id.0.or(a.event_id.0),
        graph_id: a.graph_id.0,
        graph_node_id: a.graph_node_id.0,
        bytes: a.bytes.0,
        collective,
        input_dims: a.input_dims.as_ref().map(|v| v.as_raw_str().to_owned()),
        input_type: a.input_type.as_ref().map(|v| v.as_raw_str().to_owned()),
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

/// Categories Kineto writes that the model deliberately leaves out.
fn is_known_unmodeled(cat: &str) -> bool {
    matches!(
        cat,
        "python_function"
            | "Python"
            | "Trace"
            | "overhead"
            | "cpu_instant_event"
            | "Memory"
            | "memory"
            | "external_correlation"
            | "mtia_runtime"
            | "mtia_ccp_events"
            | "mtia_insight"
            | "mtia_counters"
            | "glow_runtime"
            | "cuda_profiler_range"
            | "hpu_op"
            | "xpu_runtime"
            | "xpu_driver"
            | "xpu_scope_profiler"
            | "xpu_sync"
            | "collective_comm"
            | "privateuse1_runtime"
            | "privateuse1_driver"
            | "hardware_counters"
    )
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
