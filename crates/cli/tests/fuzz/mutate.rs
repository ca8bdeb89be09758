//! The fuzzer's cases: a seeded generator of [`Case`]s (an input, a
//! command, mutations of its JSON, an encoding of the result) and the code
//! applying them. Positions are raw random numbers taken modulo the length
//! at the time a mutation applies, so a case is fully described by its
//! `Debug` form and rebuilt from its seed and run number.
//!
//! One file of about 800 lines on purpose: the mutation kinds, the value
//! tables they draw from, and the lenient JSON scanning they share are read
//! together when a failure report names a mutation. `Mutation::apply` is
//! one match of about 160 lines for the same reason: one arm per kind,
//! next to the kind's definition order.

use std::io::Write;
use std::ops::Range;

/// SplitMix64: small, fast, and the same on every platform and version.
pub struct Rng(u64);

impl Rng {
    /// The generator for run `run` of seed `seed`.
    pub fn for_run(seed: u64, run: u64) -> Rng {
        let mut r = Rng(seed ^ run.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        r.next();
        r
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }

    /// True `percent` times in a hundred.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// What to run on the mutated file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    Inspect,
    InspectJson,
    Replay,
    /// `replay --out DIR`: the replayed timeline is written too.
    ReplayOut,
    /// `predict --dp 2` (only on the rank of a job).
    Predict,
    /// `report -o PAGE`: the HTML page of the trace.
    Report,
    /// `report --dp 2 -o PAGE`: the page with a what-if section (only on
    /// the rank of a job), the page and the prediction made of one read.
    ReportPredict,
    /// `ingest -o RANK.lgraph`: the compact graph file.
    Ingest,
    /// `replay --json` of the whole job, one rank of which is the case
    /// (only on the rank of a job).
    ReplayJob,
    /// `report --dp 2 -o PAGE` of the whole job, one rank of which is the
    /// case (only on the rank of a job): the page's joint replay, then the
    /// prediction (the corpus job's ranks repeat no layer block, so it is
    /// made of the files read again, not of ranks lent by the page).
    ReportJobPredict,
}

/// Where deep nesting goes.
#[derive(Debug, Clone, Copy)]
pub enum Place {
    /// A new top-level member with this key.
    Member(&'static str),
    /// A new argument of event `n`.
    Args(u64),
    /// A new element before event `n`.
    Element(u64),
}

/// One edit of the JSON text.
#[derive(Debug, Clone)]
pub enum Mutation {
    /// `count` single-byte xors from `at` on (spread out).
    FlipBits {
        at: u64,
        mask: u8,
        count: u8,
    },
    Truncate {
        at: u64,
    },
    InsertBytes {
        at: u64,
        bytes: Vec<u8>,
    },
    /// A run of zero bytes over the text, as a crash mid-write leaves.
    ZeroFill {
        at: u64,
        len: u32,
    },
    CopyRange {
        from: u64,
        len: u32,
        to: u64,
    },
    DeleteEvents {
        first: u64,
        count: u32,
    },
    DuplicateEvents {
        first: u64,
        count: u32,
        to: u64,
    },
    SwapEvents {
        a: u64,
        b: u64,
    },
    /// `key` (a field or an argument) set to `value` in `spread`
    /// consecutive events: wrong types, huge and non-finite numbers,
    /// repeated ids.
    SetField {
        event: u64,
        key: &'static str,
        value: String,
        spread: u32,
    },
    DropField {
        event: u64,
        key: &'static str,
    },
    /// Arrays (or objects) `depth` deep.
    DeepNesting {
        depth: u32,
        objects: bool,
        place: Place,
    },
    /// A string of `len` bytes as event `event`'s name, or as a member.
    LongString {
        event: u64,
        len: u32,
        member: bool,
    },
    /// Invalid UTF-8 (or a raw control byte, or the escape of a lone
    /// surrogate) inside event `event`'s name.
    InvalidUtf8 {
        event: u64,
        bytes: &'static [u8],
    },
    /// The JSON array form: `[` and the events, with or without `]`.
    ArrayForm {
        closed: bool,
        trailing_comma: bool,
    },
    Bom,
    /// A top-level member the reader reads (or a spelling of one) added
    /// before the others: a repeat, a second spelling, a merged
    /// timeline's mark, a base time no clock gives.
    TopLevelMember {
        key: &'static str,
        value: &'static str,
    },
    NulPadding {
        len: u32,
    },
}

/// How the mutated JSON is written to the file.
#[derive(Debug, Clone, Copy)]
pub enum Encoding {
    Plain,
    Gzip,
    /// Split into this many gzip members, concatenated.
    GzipMembers(u32),
    /// Gzip followed by zero bytes.
    GzipPadded(u32),
    /// Gzip followed by bytes that are not gzip.
    GzipGarbage,
    /// Gzip cut at a point.
    GzipTruncated(u64),
    /// Gzip with one byte xored.
    GzipFlip(u64, u8),
    /// A tar archive holding the JSON.
    Tar,
    /// Gzip of gzip: the trace compressed twice.
    GzipTwice,
}

/// One fuzz run.
#[derive(Debug, Clone)]
pub struct Case {
    /// Index into the fuzzer's inputs.
    pub input: usize,
    pub command: Command,
    pub mutations: Vec<Mutation>,
    pub encoding: Encoding,
}

/// Keys an event has at its top level.
const FIELDS: &[&str] = &[
    "ph", "cat", "name", "pid", "tid", "ts", "dur", "id", "args", "bp", "s",
];

/// Arguments the reader or the graph builder reads.
const ARGS: &[&str] = &[
    "correlation",
    "External id",
    "stream",
    "device",
    "Input Dims",
    "Input type",
    "Sequence number",
    "Fwd thread id",
    "wait_on_stream",
    "wait_on_cuda_event_record_corr_id",
    "event_id",
    "bytes",
    "Collective name",
    "In msg nelems",
    "Out msg nelems",
    "Group size",
    "dtype",
    "Process Group Name",
    "Process Group Ranks",
    "Seq",
    "Src Rank",
    "Dst Rank",
];

/// Values of the wrong type, out of range, non-finite, or plausible but
/// shared between events.
const VALUES: &[&str] = &[
    "\"str\"",
    "\"\"",
    "\"123\"",
    "\"0x1f\"",
    "\"-5.5\"",
    "[]",
    "[1, 2]",
    "{}",
    "{\"a\": 1}",
    "null",
    "true",
    "false",
    "0",
    "-1",
    "1.5",
    "-0",
    "1e308",
    "1e999",
    "-1e999",
    "NaN",
    "Infinity",
    "-Infinity",
    "18446744073709551616",
    "9223372036854775807",
    "-9223372036854775808",
    "-9223372036854775809",
    "123456789012345678901234567890",
    "1e-999",
    "4294967296",
    "\"[0, 1, ...]\"",
    "\"[0, 9223372036854775807, ...]\"",
    "[[1, 2], [3, -1]]",
    "[[9223372036854775807, 9223372036854775807], [4294967296]]",
    "\"ncclDevKernel_AllReduce_Sum_f32_RING_LL\"",
    "\"X\"",
    "\"kernel\"",
    "\"cuda_runtime\"",
    "\"gpu_memcpy\"",
    "\"ac2g\"",
    "\"s\"",
    "\"f\"",
    "\"M\"",
    "\"Float\"",
];

/// Bytes that matter to JSON, to insert.
const TOKENS: &[&[u8]] = &[
    b"{", b"}", b"[", b"]", b",", b":", b"\"", b"\\", b"null", b"-", b"e5", b".", b"\"a\":", b",,",
    b"\x00", b"\xff", b" ", b"\n", b"1",
];

const INVALID_UTF8: &[&[u8]] = &[
    b"\xff",
    b"\x80",
    b"\xc3",
    b"\xe2\x82",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
    b"\xc0\xaf",
    b"\x01",
    // Escapes of lone surrogates (what Python's json writes for
    // surrogateescape text), and a pair, which is valid.
    br"\ud800",
    br"\udc00x",
    br"\ud800\u0041",
    br"\ud83d\ude00",
];

/// Top-level members the reader reads, with values good and bad.
const USED_MEMBERS: &[(&str, &str)] = &[
    ("hostname", "\"node1\""),
    ("hostName", "\"node2\""),
    ("host_name", "\"\""),
    ("distributedInfo", r#"{"rank": 1, "world_size": 2}"#),
    (
        "distributedInfo",
        r#"{"world_size": 2, "merged_ranks": [0, 1]}"#,
    ),
    ("distributedInfo", r#""{\"rank\": 3}""#),
    ("traceName", "\"lumos replayed job\""),
    ("traceName", "\"t\""),
    ("baseTimeNanoseconds", "9223372036854775807"),
    ("baseTimeNanoseconds", "-1"),
    ("baseTimeNanoseconds", "1700000000000000000"),
    ("schemaVersion", "\"1\""),
    ("deviceProperties", "[]"),
    ("displayTimeUnit", "null"),
];

/// Top-level members, some of which the reader reads.
const MEMBERS: &[&str] = &[
    "deviceProperties",
    "distributedInfo",
    "schemaVersion",
    "baseTimeNanoseconds",
    "someUnknownKey",
];

impl Case {
    /// The case of one run: `inputs` inputs, of which `job` (if any) is a
    /// rank of a job, which `predict` and job replays run on.
    pub fn generate(rng: &mut Rng, inputs: usize, job: Option<usize>) -> Case {
        let input = rng.below(inputs as u64) as usize;
        let roll = rng.below(10);
        let command = match roll {
            _ if Some(input) == job && roll <= 1 => Command::Predict,
            _ if Some(input) == job && roll == 2 => Command::ReportPredict,
            _ if Some(input) == job && roll <= 4 => Command::ReplayJob,
            _ if Some(input) == job && roll == 5 => Command::ReportJobPredict,
            0..=2 => Command::Inspect,
            3 => Command::InspectJson,
            4 => Command::Ingest,
            5..=7 => Command::Replay,
            8 => Command::Report,
            _ => Command::ReplayOut,
        };
        let n = 1 + rng.below(3) as usize;
        let mutations = (0..n).map(|_| Mutation::generate(rng)).collect();
        let encoding = match rng.below(100) {
            0..=39 => Encoding::Plain,
            40..=64 => Encoding::Gzip,
            65..=74 => Encoding::GzipMembers(2 + rng.below(4) as u32),
            75..=82 => Encoding::GzipPadded(1 + rng.below(8192) as u32),
            83..=86 => Encoding::GzipGarbage,
            87..=91 => Encoding::GzipTruncated(rng.next()),
            92..=97 => Encoding::GzipFlip(rng.next(), 1 + rng.below(255) as u8),
            98 => Encoding::GzipTwice,
            _ => Encoding::Tar,
        };
        Case {
            input,
            command,
            mutations,
            encoding,
        }
    }

    /// The file's bytes: `json` mutated and encoded.
    pub fn bytes(&self, json: &[u8]) -> Vec<u8> {
        let mut text = json.to_vec();
        for m in &self.mutations {
            m.apply(&mut text);
        }
        self.encoding.apply(&text)
    }

    /// A file name that fits the encoding.
    pub fn file_name(&self) -> &'static str {
        match self.encoding {
            Encoding::Plain => "case.json",
            Encoding::Tar => "case.tar",
            _ => "case.json.gz",
        }
    }
}

impl Mutation {
    fn generate(rng: &mut Rng) -> Mutation {
        let event = rng.next();
        match rng.below(18) {
            0 => Mutation::FlipBits {
                at: rng.next(),
                mask: 1 + rng.below(255) as u8,
                count: 1 + rng.below(8) as u8,
            },
            1 => Mutation::Truncate { at: rng.next() },
            2 => Mutation::InsertBytes {
                at: rng.next(),
                bytes: (0..1 + rng.below(4))
                    .flat_map(|_| rng.pick(TOKENS).to_vec())
                    .collect(),
            },
            3 => Mutation::ZeroFill {
                at: rng.next(),
                len: 1 + rng.below(4096) as u32,
            },
            4 => Mutation::CopyRange {
                from: rng.next(),
                len: 1 + rng.below(5000) as u32,
                to: rng.next(),
            },
            5 => Mutation::DeleteEvents {
                first: event,
                count: 1 + rng.below(50) as u32,
            },
            6 => Mutation::DuplicateEvents {
                first: event,
                count: 1 + rng.below(50) as u32,
                to: rng.next(),
            },
            7 => Mutation::SwapEvents {
                a: event,
                b: rng.next(),
            },
            8 | 9 => {
                let key = if rng.chance(50) {
                    rng.pick(FIELDS)
                } else {
                    rng.pick(ARGS)
                };
                let value = if rng.chance(15) {
                    // A plausible time or id that breaks order or repeats.
                    rng.below(4_000_000_000_000).to_string()
                } else {
                    rng.pick(VALUES).to_owned()
                };
                Mutation::SetField {
                    event,
                    key,
                    value,
                    spread: rng.pick(&[1, 1, 1, 5, 100, 100_000]),
                }
            }
            10 => Mutation::DropField {
                event,
                key: rng.pick(FIELDS),
            },
            11 => Mutation::DeepNesting {
                depth: rng.pick(&[64, 127, 128, 129, 1000, 40_000, 200_000]),
                objects: rng.chance(30),
                place: match rng.below(3) {
                    0 => Place::Member(rng.pick(MEMBERS)),
                    1 => Place::Args(event),
                    _ => Place::Element(event),
                },
            },
            12 => Mutation::LongString {
                event,
                len: rng.pick(&[1 << 10, 1 << 16, 1 << 20, 4 << 20]),
                member: rng.chance(30),
            },
            13 => Mutation::InvalidUtf8 {
                event,
                bytes: rng.pick(INVALID_UTF8),
            },
            14 => Mutation::ArrayForm {
                closed: rng.chance(50),
                trailing_comma: rng.chance(50),
            },
            15 => Mutation::Bom,
            16 => {
                let (key, value) = rng.pick(USED_MEMBERS);
                Mutation::TopLevelMember { key, value }
            }
            _ => Mutation::NulPadding {
                len: 1 + rng.below(10_000) as u32,
            },
        }
    }

    fn apply(&self, text: &mut Vec<u8>) {
        let len = text.len() as u64;
        let at = |x: u64| {
            if len == 0 {
                0
            } else {
                (x % (len + 1)) as usize
            }
        };
        let events = event_spans(text);
        let nth = |x: u64| {
            (!events.is_empty()).then(|| events[(x % events.len() as u64) as usize].clone())
        };
        match self {
            Mutation::FlipBits { at: x, mask, count } => {
                for k in 0..u64::from(*count) {
                    if len > 0 {
                        let i = (x.wrapping_add(k.wrapping_mul(0x2545_f491)) % len) as usize;
                        text[i] ^= mask;
                    }
                }
            }
            Mutation::Truncate { at: x } => text.truncate(at(*x)),
            Mutation::InsertBytes { at: x, bytes } => {
                let i = at(*x);
                text.splice(i..i, bytes.iter().copied());
            }
            Mutation::ZeroFill { at: x, len: n } => {
                let i = at(*x);
                let end = (i + *n as usize).min(text.len());
                text[i..end].fill(0);
            }
            Mutation::CopyRange { from, len: n, to } => {
                let i = at(*from);
                let piece = text[i..(i + *n as usize).min(text.len())].to_vec();
                let j = at(*to);
                text.splice(j..j, piece);
            }
            Mutation::DeleteEvents { first, count } => {
                if let Some(r) = nth(*first) {
                    let k = events.iter().position(|e| *e == r).unwrap_or(0);
                    let last = (k + *count as usize - 1).min(events.len() - 1);
                    // Through the separator after the last one.
                    let end = events.get(last + 1).map_or(events[last].end, |e| e.start);
                    text.drain(r.start..end);
                }
            }
            Mutation::DuplicateEvents { first, count, to } => {
                if let (Some(r), Some(dest)) = (nth(*first), nth(*to)) {
                    let k = events.iter().position(|e| *e == r).unwrap_or(0);
                    let last = (k + *count as usize - 1).min(events.len() - 1);
                    let mut piece = text[r.start..events[last].end].to_vec();
                    piece.extend_from_slice(b",\n");
                    text.splice(dest.start..dest.start, piece);
                }
            }
            Mutation::SwapEvents { a, b } => {
                if let (Some(a), Some(b)) = (nth(*a), nth(*b)) {
                    let (first, second) = if a.start <= b.start { (a, b) } else { (b, a) };
                    if first.end <= second.start {
                        let x = text[first.clone()].to_vec();
                        let y = text[second.clone()].to_vec();
                        text.splice(second, x);
                        text.splice(first, y);
                    }
                }
            }
            Mutation::SetField {
                event,
                key,
                value,
                spread,
            } => {
                if let Some(r) = nth(*event) {
                    let k = events.iter().position(|e| *e == r).unwrap_or(0);
                    let last = (k + *spread as usize).min(events.len());
                    // Back to front, so the earlier spans stay valid.
                    for e in events[k..last].iter().rev() {
                        set_field(text, e.clone(), key, value);
                    }
                }
            }
            Mutation::DropField { event, key } => {
                if let Some(r) = nth(*event) {
                    if let Some((k, v)) = find_field(text, r, key) {
                        // The key, its value and a comma after it.
                        let end = if text.get(v.end) == Some(&b',') {
                            v.end + 1
                        } else {
                            v.end
                        };
                        text.drain(k.start..end);
                    }
                }
            }
            Mutation::DeepNesting {
                depth,
                objects,
                place,
            } => {
                let d = *depth as usize;
                let deep = if *objects {
                    "{\"a\":".repeat(d) + "1" + &"}".repeat(d)
                } else {
                    "[".repeat(d) + &"]".repeat(d)
                };
                match *place {
                    Place::Member(key) => insert_member(text, key, &deep),
                    Place::Args(e) => {
                        if let Some(r) = nth(e) {
                            set_field(text, r, "deep", &deep);
                        }
                    }
                    Place::Element(e) => {
                        if let Some(r) = nth(e) {
                            text.splice(r.start..r.start, format!("{deep},\n").into_bytes());
                        }
                    }
                }
            }
            Mutation::LongString {
                event,
                len: n,
                member,
            } => {
                let long = format!("\"{}\"", "x".repeat(*n as usize));
                match nth(*event) {
                    Some(r) if !member => set_field(text, r, "name", &long),
                    _ => insert_member(text, "longString", &long),
                }
            }
            Mutation::InvalidUtf8 { event, bytes } => {
                if let Some(r) = nth(*event) {
                    if let Some((_, v)) = find_field(text, r, "name") {
                        if text.get(v.start) == Some(&b'"') {
                            text.splice(v.start + 1..v.start + 1, bytes.iter().copied());
                        }
                    }
                }
            }
            Mutation::ArrayForm {
                closed,
                trailing_comma,
            } => {
                if let (Some(first), Some(last)) = (events.first(), events.last()) {
                    let mut out = b"[".to_vec();
                    out.extend_from_slice(&text[first.start..last.end]);
                    if *trailing_comma {
                        out.push(b',');
                    }
                    if *closed {
                        out.push(b']');
                    }
                    *text = out;
                }
            }
            Mutation::Bom => {
                text.splice(0..0, *b"\xef\xbb\xbf");
            }
            Mutation::TopLevelMember { key, value } => insert_member(text, key, value),
            Mutation::NulPadding { len: n } => text.extend(std::iter::repeat_n(0, *n as usize)),
        }
    }
}

impl Encoding {
    fn apply(self, text: &[u8]) -> Vec<u8> {
        let len = text.len().max(1) as u64;
        match self {
            Encoding::Plain => text.to_vec(),
            Encoding::Gzip => lumos_testkit::gzip(text),
            Encoding::GzipMembers(parts) => {
                let size = text.len().div_ceil(parts as usize).max(1);
                text.chunks(size).flat_map(lumos_testkit::gzip).collect()
            }
            Encoding::GzipPadded(zeros) => {
                let mut gz = lumos_testkit::gzip(text);
                gz.extend(std::iter::repeat_n(0, zeros as usize));
                gz
            }
            Encoding::GzipGarbage => {
                let mut gz = lumos_testkit::gzip(text);
                gz.extend_from_slice(b"PK\x03\x04 not gzip");
                gz
            }
            Encoding::GzipTruncated(at) => {
                let mut gz = lumos_testkit::gzip(text);
                gz.truncate((at % len) as usize);
                gz
            }
            Encoding::GzipFlip(at, mask) => {
                let mut gz = lumos_testkit::gzip(text);
                let n = gz.len() as u64;
                gz[(at % n) as usize] ^= mask;
                gz
            }
            Encoding::Tar => tar_of("trace.json", text),
            Encoding::GzipTwice => lumos_testkit::gzip(&lumos_testkit::gzip(text)),
        }
    }
}

/// Byte ranges of the objects in the `traceEvents` array (or the root
/// array), found with a string-aware bracket scan. Whatever `text` is,
/// damaged or not, it gives ranges inside it.
pub fn event_spans(text: &[u8]) -> Vec<Range<usize>> {
    let key = b"\"traceEvents\"";
    let start = match text.windows(key.len()).position(|w| w == key) {
        Some(k) => text[k..].iter().position(|&b| b == b'[').map(|o| k + o),
        None => text.iter().position(|&b| b == b'['),
    };
    let Some(open) = start else {
        return Vec::new();
    };
    let mut spans = Vec::new();
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    let mut element = 0;
    for (i, &c) in text.iter().enumerate().skip(open) {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => in_string = true,
            b'{' | b'[' => {
                if depth == 1 && c == b'{' {
                    element = i;
                }
                depth += 1;
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                if depth == 1 && c == b'}' {
                    spans.push(element..i + 1);
                }
                if depth == 0 {
                    break;
                }
            }
            _ => {}
        }
    }
    spans
}

/// The key's and the value's ranges of the first `"key":` in `event`.
fn find_field(text: &[u8], event: Range<usize>, key: &str) -> Option<(Range<usize>, Range<usize>)> {
    let pattern = format!("\"{key}\"");
    let body = &text[event.clone()];
    let k = event.start
        + body
            .windows(pattern.len())
            .position(|w| w == pattern.as_bytes())?;
    let mut v = k + pattern.len();
    while text.get(v).is_some_and(|b| b.is_ascii_whitespace()) {
        v += 1;
    }
    if text.get(v) != Some(&b':') {
        return None;
    }
    v += 1;
    while text.get(v).is_some_and(|b| b.is_ascii_whitespace()) {
        v += 1;
    }
    let end = value_end(text, v, event.end);
    Some((k..k + pattern.len(), v..end))
}

/// End of the JSON value at `start` (not past `limit`), found leniently.
fn value_end(text: &[u8], start: usize, limit: usize) -> usize {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (i, &c) in text.iter().enumerate().take(limit).skip(start) {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => {
                    in_string = false;
                    if depth == 0 {
                        return i + 1;
                    }
                }
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => in_string = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' if depth == 0 => return i,
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            b',' if depth == 0 => return i,
            _ => {}
        }
    }
    limit.min(text.len()).max(start)
}

/// Sets `key` to `value` in the event at `event`: replaces the value if the
/// key is there, else adds it (arguments into `args` when the event has
/// them).
fn set_field(text: &mut Vec<u8>, event: Range<usize>, key: &str, value: &str) {
    if let Some((_, v)) = find_field(text, event.clone(), key) {
        text.splice(v, value.bytes());
        return;
    }
    let into = if FIELDS.contains(&key) {
        None
    } else {
        find_field(text, event.clone(), "args").filter(|(_, v)| text.get(v.start) == Some(&b'{'))
    };
    let at = match into {
        Some((_, v)) => v.start + 1,
        None => event.start + 1,
    };
    let comma = !matches!(
        text.get(at..)
            .and_then(|t| t.iter().find(|b| !b.is_ascii_whitespace())),
        Some(b'}')
    );
    let member = format!("\"{key}\": {value}{}", if comma { ", " } else { "" });
    text.splice(at..at, member.into_bytes());
}

/// Adds a top-level member right after the root's `{` (or an element
/// after the `[` of a root array).
fn insert_member(text: &mut Vec<u8>, key: &str, value: &str) {
    let Some(i) = text.iter().position(|&b| b == b'{' || b == b'[') else {
        return;
    };
    let piece = if text[i] == b'{' {
        format!("\"{key}\": {value}, ")
    } else {
        format!("{value}, ")
    };
    text.splice(i + 1..i + 1, piece.into_bytes());
}

/// A tar archive holding `data` as `name`.
fn tar_of(name: &str, data: &[u8]) -> Vec<u8> {
    let mut header = [0u8; 512];
    header[..name.len()].copy_from_slice(name.as_bytes());
    header[100..108].copy_from_slice(b"0000644\0");
    header[124..136].copy_from_slice(format!("{:011o}\0", data.len()).as_bytes());
    header[156] = b'0';
    header[257..263].copy_from_slice(b"ustar\0");
    header[263..265].copy_from_slice(b"00");
    header[148..156].copy_from_slice(b"        ");
    let sum: u32 = header.iter().map(|&b| u32::from(b)).sum();
    let mut checksum = Vec::new();
    let _ = write!(checksum, "{sum:06o}\0 ");
    header[148..156].copy_from_slice(&checksum);
    let mut out = header.to_vec();
    out.extend_from_slice(data);
    out.resize(out.len().div_ceil(512) * 512 + 1024, 0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_and_fields() {
        let text = br#"{"a": [{"x": 1}], "traceEvents": [{"ph": "X", "args": {"s": "}"}}, 3, {"ph": "M"}]}"#;
        let spans = event_spans(text);
        assert_eq!(spans.len(), 2);
        assert_eq!(&text[spans[1].clone()], br#"{"ph": "M"}"#);
        let mut t = text.to_vec();
        set_field(&mut t, spans[0].clone(), "stream", "7");
        assert!(String::from_utf8_lossy(&t).contains(r#""args": {"stream": 7, "s""#));
    }
}
