//! Parses one `traceEvents` element into what the [`crate::Trace`] keeps.
//!
//! A small validating JSON parser, specialized for the shape of an event: it
//! matches the keys the model uses, converts their values in place (times to
//! exact integer nanoseconds, ids to integers), and skips everything else
//! without building anything. It runs on the rayon pool, one element at a
//! time, and does all the per-event work except interning, which the
//! sequential fold in `read.rs` does.
//!
//! Values are lenient where exporters disagree on types: a numeric argument
//! written as a string or with another JSON type reads as a number or as
//! absent rather than failing the event. A `ph`, `cat`, `name`, `pid`,
//! `tid` or `args` of the wrong JSON type skips the event
//! ([`SkipReason::BadFieldType`]). Any JSON syntax error fails the file,
//! except after the category of an event the model leaves out.
//!
//! An event is left out once its `ph` is `"X"` and its `cat` is not a
//! task's (`python_function`, often most of a trace recorded with
//! `with_stack`, or an unknown category), when nothing after them could
//! change that: no escape (a key spelled with one) and no second `"ph"` or
//! `"cat"`, found sixteen or 32 bytes a step. The parser then jumps to the
//! element's closing brace (`Parser::pass_over_left_out`), so the rest is
//! checked only by the splitter (strings closed, brackets matched, nesting
//! bounded): a bad number or a field of the wrong type there is not
//! reported, and a `NaN` there is not counted. The event is skipped for
//! its category, as a full parse would skip it.
//!
//! Lenient where common writers are: `NaN`, `Infinity` and `-Infinity`
//! (which Python's `json.dump` writes) read as `null` and are counted, and
//! an element holding invalid UTF-8 is parsed with the bad bytes replaced
//! by U+FFFD (see [`crate::repair`]), as is a `\uXXXX` escape of a lone
//! surrogate (`\ud800` without a low surrogate after it, or a `\udc00`
//! alone), which no Rust string can hold and which Python's `json` writes
//! for names decoded with `surrogateescape`; all come back as
//! [`Parsed::Repaired`]. Every escape goes through `Parser::escape`, and
//! an event with one is never passed over, so none goes uncounted.
//!
//! One file of about 1,750 lines on purpose: the event's fields, the JSON
//! scanner under them (`Parser`, `scan_plain`) and the number conversions
//! are one hot loop whose parts share `Parser`'s private state (position,
//! depth, the wrong-type flag); split into modules they would need that
//! state made visible to each other, for no gain in what a reader follows.
//! (The byte-level helpers at the end, `scan_plain`, `skip_ws`,
//! `digit_run`, share nothing and could move to a module of their own.)
//! Its tests are in `parse/tests.rs`.
//!
//! Plain integers and plain strings, nearly every value in a trace, take
//! fast paths (`Parser::plain_int`, `Parser::opt_str`) that read them
//! straight into the field; anything else falls back to the general
//! `Parser::value`, so both give the same results and errors.

use std::borrow::Cow;

use crate::model::{
    ActivityArgs, Category, CollectiveArgs, EventExtra, FlowKind, FlowPhase, MemoryEvent,
    SkipReason,
};

use crate::MAX_NESTING;

/// A string of an element that does not borrow it: a byte range of the
/// element's text (most strings), the unescaped text of a string that had
/// escapes, or the `-` that labels an event without a category. 16 bytes
/// (a `u32` range, a thin box), so that [`Parsed`] stays small enough to
/// move without a `memcpy` call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Text {
    Span(u32, u32),
    /// Rare (escapes, repairs): boxed twice so the variant is one pointer
    /// (a `String` is three, a `Box<str>` two).
    #[allow(clippy::box_collection)]
    Owned(Box<String>),
    Dash,
}

impl Text {
    /// The bytes, given the text of the element it came from (valid UTF-8).
    pub fn bytes<'b>(&'b self, element: &'b [u8]) -> &'b [u8] {
        match self {
            Text::Span(start, end) => &element[*start as usize..*end as usize],
            Text::Owned(s) => s.as_bytes(),
            Text::Dash => b"-",
        }
    }

    /// An owned text.
    pub fn owned(s: impl Into<String>) -> Text {
        Text::Owned(Box::new(s.into()))
    }

    /// `s`, a string of the element `base` or an owned one.
    fn of(base: &str, s: Cow<'_, str>) -> Text {
        match s {
            Cow::Borrowed(b) => {
                let start = b.as_ptr() as usize - base.as_ptr() as usize;
                debug_assert!(start + b.len() <= base.len());
                Text::span(start, b)
            }
            Cow::Owned(o) => Text::owned(o),
        }
    }

    /// The string `s` found at byte `start` of its element: a span, or a
    /// copy if it ends past what a `u32` holds (an element over 4 GiB).
    fn span(start: usize, s: &str) -> Text {
        match (u32::try_from(start), u32::try_from(start + s.len())) {
            (Ok(a), Ok(b)) => Text::Span(a, b),
            _ => Text::owned(s),
        }
    }
}

/// A `pid` / `tid`: a number (numeric strings included) or a name.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PIdent {
    Num(i64),
    Name(Text),
}

impl PIdent {
    fn of(strs: &Strs<'_>, raw: RawIdent<'_>) -> PIdent {
        match raw {
            RawIdent::Num(n) => PIdent::Num(n),
            RawIdent::Name(s) => PIdent::Name(strs.text(s)),
        }
    }
}

/// A `pid` / `tid` as a JSON value.
#[derive(Debug, Clone, PartialEq)]
enum IdentValue<'a> {
    Num(i64),
    Name(Cow<'a, str>),
}

/// A `pid` / `tid` while parsing.
#[derive(Debug, Clone, Copy, PartialEq)]
enum RawIdent<'a> {
    Num(i64),
    Name(RawStr<'a>),
}

/// A string of the element while parsing: borrowed from it, or the
/// `k`-th unescaped string of the [`Parser`] (rare). `Copy`, unlike a
/// `Cow`, so that [`RawEvent`], made and dropped for every element, has
/// nothing to drop (its `Copy` derive proves it).
#[derive(Debug, Clone, Copy, PartialEq)]
enum RawStr<'a> {
    Borrowed(&'a str),
    Unescaped(usize),
}

/// What the [`RawStr`]s of one element refer to: the element's text and
/// the parser's unescaped strings.
struct Strs<'s> {
    base: &'s str,
    unescaped: &'s [String],
}

impl<'s> Strs<'s> {
    fn str(&self, r: RawStr<'s>) -> &'s str {
        match r {
            RawStr::Borrowed(b) => b,
            RawStr::Unescaped(k) => &self.unescaped[k],
        }
    }

    /// `r` as a [`Text`] of the element: a span, or an owned copy.
    fn text(&self, r: RawStr<'_>) -> Text {
        match r {
            RawStr::Borrowed(b) => Text::of(self.base, Cow::Borrowed(b)),
            RawStr::Unescaped(k) => Text::owned(self.unescaped[k].as_str()),
        }
    }
}

/// A kept complete event, before interning. Strings are [`Text`]s of the
/// element it came from.
#[derive(Debug)]
pub(crate) struct Complete {
    pub category: Category,
    pub name: Text,
    pub pid: PIdent,
    pub tid: PIdent,
    pub ts_ns: i64,
    pub dur_ns: i64,
    /// `correlation`, `External id`, `stream`, `device`.
    pub ids: EventIds,
    /// The arguments beyond these, except the texts in `texts`.
    pub extra: Option<Box<EventExtra>>,
    /// The texts of `extra` still to convert, if any.
    pub texts: Option<Box<ExtraTexts>>,
}

/// The four `args` ids that [`crate::model::Event`] has slots for, each
/// optional: one byte of flags instead of an `Option` (16 bytes) each,
/// which keeps [`Parsed`] under the 128 bytes that moves inline.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct EventIds {
    /// The values in the order of the accessors; `i64`s as their bits.
    values: [u64; 4],
    /// Bit `k` set if `values[k]` is there.
    present: u8,
}

impl EventIds {
    fn new(
        correlation: Option<u64>,
        external_id: Option<u64>,
        stream: Option<i64>,
        device: Option<i64>,
    ) -> EventIds {
        let all = [
            correlation,
            external_id,
            stream.map(|v| v as u64),
            device.map(|v| v as u64),
        ];
        let mut ids = EventIds::default();
        for (k, v) in all.into_iter().enumerate() {
            if let Some(v) = v {
                ids.values[k] = v;
                ids.present |= 1 << k;
            }
        }
        ids
    }

    fn get(&self, k: usize) -> Option<u64> {
        (self.present & (1 << k) != 0).then_some(self.values[k])
    }

    /// `correlation`.
    pub fn correlation(&self) -> Option<u64> {
        self.get(0)
    }

    /// `External id`.
    pub fn external_id(&self) -> Option<u64> {
        self.get(1)
    }

    /// `stream`.
    pub fn stream(&self) -> Option<i64> {
        self.get(2).map(|v| v as i64)
    }

    /// `device`.
    pub fn device(&self) -> Option<i64> {
        self.get(3).map(|v| v as i64)
    }
}

/// The texts of an event's arguments that the fold converts into shared
/// values (`Input Dims`, `Input type`, collective names and groups). A
/// trace repeats a handful of each millions of times, and the fold shares
/// equal values anyway: converted there, once per distinct text, each
/// repeat costs a hash lookup instead of a parse and an allocation here.
#[derive(Debug, Default)]
pub(crate) struct ExtraTexts {
    /// `Input Dims`, as raw JSON text.
    pub input_dims: Option<Text>,
    /// `Input type`, as raw JSON text.
    pub input_type: Option<Text>,
    /// The collective's texts; set only when the event has collective
    /// arguments ([`EventExtra::collective`]).
    pub collective_name: Option<Text>,
    pub dtype: Option<Text>,
    pub pg_name: Option<Text>,
    pub pg_desc: Option<Text>,
    /// `Process Group Ranks`, unparsed.
    pub pg_ranks: Option<Text>,
    /// Bit `k` set if the count [`BAD_COUNT_KEYS`]`[k]` was malformed and
    /// left out; the fold counts it in [`crate::Skipped::bad_args`].
    pub bad_counts: u8,
}

/// The collective counts read as absent when malformed (a negative or
/// fractional `In msg nelems`, one past 2^64, a `Group size` past 2^32),
/// by their bit in [`ExtraTexts::bad_counts`]. Read as plain absent, a
/// collective lost its size without a word.
pub(crate) const BAD_COUNT_KEYS: [&str; 3] = ["In msg nelems", "Out msg nelems", "Group size"];

impl ExtraTexts {
    /// Every text, for converting them all alike.
    fn all_mut(&mut self) -> [&mut Option<Text>; 7] {
        [
            &mut self.input_dims,
            &mut self.input_type,
            &mut self.collective_name,
            &mut self.dtype,
            &mut self.pg_name,
            &mut self.pg_desc,
            &mut self.pg_ranks,
        ]
    }
}

/// What one element of `traceEvents` amounts to. It borrows nothing, so the
/// fold can run while the next chunk's buffer is being parsed.
#[derive(Debug)]
pub(crate) enum Parsed {
    Complete(Complete),
    Flow {
        kind: FlowKind,
        phase: FlowPhase,
        id: u64,
        pid: PIdent,
        tid: PIdent,
        ts_ns: i64,
    },
    /// A `thread_name` / `process_name` metadata event.
    TrackName {
        pid: PIdent,
        tid: Option<PIdent>,
        name: String,
    },
    /// A `thread_sort_index` / `process_sort_index` metadata event.
    TrackSort {
        pid: PIdent,
        tid: Option<PIdent>,
        index: i64,
    },
    /// A `process_labels` metadata event.
    ProcessLabels {
        pid: PIdent,
        labels: String,
    },
    /// Other metadata events: neither kept nor counted as skipped.
    Metadata,
    /// A `[memory]` instant event: kept in [`crate::Trace::memory`], and
    /// counted as skipped like every instant event (it is not a task).
    Memory {
        event: MemoryEvent,
        cat: Text,
    },
    /// Not kept; `cat` is the category as written, or `-`.
    Skip {
        cat: Text,
        reason: SkipReason,
    },
    /// Malformed JSON, at a byte offset in the element.
    Syntax {
        offset: usize,
        message: String,
    },
    /// What an element that needed repairs amounts to: `non_finite`
    /// numbers (`NaN`, `Infinity`) read as null, and its invalid UTF-8 or
    /// lone surrogate escapes replaced. Rare, so boxed: the common
    /// variants stay small.
    Repaired {
        parsed: Box<Parsed>,
        repairs: Repairs,
    },
}

/// What the parser repaired in one element or member.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Repairs {
    /// `NaN`, `Infinity` or `-Infinity` literals, read as null.
    pub non_finite: u32,
    /// Whether invalid UTF-8 was replaced by U+FFFD.
    pub invalid_utf8: bool,
    /// Whether a `\uXXXX` escape of a lone surrogate was read as U+FFFD.
    /// Counted with `invalid_utf8` (`Skipped::invalid_utf8`): to whoever
    /// reads the names, both are text the trace could not spell in UTF-8.
    pub lone_surrogate: bool,
    /// The first member the event writes twice or more among those the
    /// parser reads (`ts`, `args.name`), if any: the last value is read,
    /// as JSON readers do, and the event counted
    /// (`Skipped::repeated_members`).
    /// 0 for none, else 1 + the bit of its field ([`repeated_member_name`]
    /// names it): one byte, so that the repairs stay eight.
    pub repeated: u8,
}

impl Repairs {
    /// True if nothing was repaired.
    pub fn is_empty(&self) -> bool {
        self.non_finite == 0 && !self.invalid_utf8 && !self.lone_surrogate && self.repeated == 0
    }
}

impl Parsed {
    /// `self`, marked as needing `repairs` if there were any.
    fn with_repairs(self, repairs: Repairs) -> Parsed {
        if repairs.is_empty() {
            self
        } else {
            Parsed::Repaired {
                parsed: Box::new(self),
                repairs,
            }
        }
    }

    /// The same element with every [`Text::Span`] of `base` copied out, for
    /// elements parsed from a repaired copy of their text (whose spans do
    /// not index the original).
    pub fn into_owned(self, base: &str) -> Parsed {
        let own = |t: Text| match t {
            Text::Span(a, b) => Text::owned(&base[a as usize..b as usize]),
            other => other,
        };
        let own_id = |id: PIdent| match id {
            PIdent::Name(t) => PIdent::Name(own(t)),
            num => num,
        };
        match self {
            Parsed::Complete(mut c) => {
                c.name = own(c.name);
                c.pid = own_id(c.pid);
                c.tid = own_id(c.tid);
                for text in c.texts.iter_mut().flat_map(|t| t.all_mut()) {
                    *text = text.take().map(own);
                }
                Parsed::Complete(c)
            }
            Parsed::Flow {
                kind,
                phase,
                id,
                pid,
                tid,
                ts_ns,
            } => Parsed::Flow {
                kind,
                phase,
                id,
                pid: own_id(pid),
                tid: own_id(tid),
                ts_ns,
            },
            Parsed::TrackName { pid, tid, name } => Parsed::TrackName {
                pid: own_id(pid),
                tid: tid.map(own_id),
                name,
            },
            Parsed::TrackSort { pid, tid, index } => Parsed::TrackSort {
                pid: own_id(pid),
                tid: tid.map(own_id),
                index,
            },
            Parsed::ProcessLabels { pid, labels } => Parsed::ProcessLabels {
                pid: own_id(pid),
                labels,
            },
            Parsed::Skip { cat, reason } => Parsed::Skip {
                cat: own(cat),
                reason,
            },
            Parsed::Memory { event, cat } => Parsed::Memory {
                event,
                cat: own(cat),
            },
            Parsed::Repaired { parsed, repairs } => Parsed::Repaired {
                parsed: Box::new(parsed.into_owned(base)),
                repairs,
            },
            other @ (Parsed::Metadata | Parsed::Syntax { .. }) => other,
        }
    }
}

/// A JSON syntax error at a byte offset in the parsed text.
#[derive(Debug)]
pub(crate) struct SyntaxError {
    pub offset: usize,
    pub message: String,
}

/// Boxed so that results stay small on the hot path.
pub(crate) type Result<T> = std::result::Result<T, Box<SyntaxError>>;

/// Parses the element `text` (which starts with `{`), as the splitter cut
/// it: its strings closed, its brackets matched and nothing after its
/// closing brace. An event left out for its category is not read past its
/// `cat` (see the module's documentation), so on text the splitter would
/// reject that part of the check is the splitter's alone.
pub(crate) fn parse_event(text: &[u8]) -> Parsed {
    match as_str(text) {
        Some(s) => parse_event_str(s),
        None => crate::repair::parse_lossy(text, parse_event_str),
    }
}

/// `text` as a `str` if it is valid UTF-8. Trace text is nearly all ASCII,
/// which `<[u8]>::is_ascii` checks a word at a time; only text with other
/// bytes pays for full UTF-8 validation.
#[inline]
fn as_str(text: &[u8]) -> Option<&str> {
    if text.is_ascii() {
        // SAFETY: ASCII is valid UTF-8.
        Some(unsafe { std::str::from_utf8_unchecked(text) })
    } else {
        std::str::from_utf8(text).ok()
    }
}

/// [`parse_event`] of text known to be UTF-8.
pub(crate) fn parse_event_str(s: &str) -> Parsed {
    let mut p = Parser::new(s);
    // Filled in place: the struct is large, and moving it costs.
    let mut ev = RawEvent::default();
    let parsed = match p.event(&mut ev).and_then(|()| p.end()) {
        Ok(()) if p.bad_type => Parsed::Skip {
            cat: Text::Dash,
            reason: SkipReason::BadFieldType,
        },
        Ok(()) => ev.take_parsed(&Strs {
            base: s,
            unescaped: &p.unescaped,
        }),
        Err(e) => {
            return Parsed::Syntax {
                offset: e.offset,
                message: e.message,
            }
        }
    };
    let repeated = p.seen.repeated();
    if p.non_finite == 0 && !p.lone_surrogate && !repeated {
        return parsed;
    }
    let mut repairs = p.repairs();
    if repeated {
        repairs.repeated = first_repeated_member(s);
    }
    parsed.with_repairs(repairs)
}

/// The first member of the event `s` whose key names a field an earlier
/// member named (`ts`, or `args.name`), among those the parser reads, as
/// a [`Repairs::repeated`] code.
/// The slow path of the check in [`Parser::event`] and [`Parser::args`]
/// (a sum and an OR of one bit per field differ once a bit is added
/// twice): it reads the event again, its keys only.
#[cold]
#[inline(never)]
fn first_repeated_member(s: &str) -> u8 {
    let mut p = Parser::new(s);
    let mut seen = 0u64;
    let mut first = 0;
    let mut note = |bit: u64| {
        if seen & bit != 0 && first == 0 {
            first = 1 + bit.trailing_zeros() as u8;
        }
        seen |= bit;
    };
    let _ = p.object(|p, key| {
        match EVENT_KEYS.iter().position(|&k| k == key) {
            Some(8) => {
                note(1 << 8);
                if p.b.get(p.i) == Some(&b'{') {
                    return p.object(|p, key| {
                        // Not `ArgKey::of`: with a second caller, it was
                        // no longer inlined into the hot loop.
                        let k = (ARG_KEY_NAMES.iter().position(|n| n[5..] == key)).or_else(|| {
                            OTHER_SPELLINGS
                                .iter()
                                .find(|o| o.0 == key)
                                .map(|o| o.1 as usize)
                        });
                        if let Some(k) = k {
                            note(ArgKey::bit_at(k));
                        }
                        p.skip_value()
                    });
                }
            }
            Some(k) => note(1 << k),
            None => {}
        }
        p.skip_value()
    });
    first
}

/// The name of the member a [`Repairs::repeated`] code gives (`ts`,
/// `args.name`).
pub(crate) fn repeated_member_name(code: u8) -> &'static str {
    let bit = usize::from(code.saturating_sub(1));
    match bit.checked_sub(EVENT_KEYS.len()) {
        None => EVENT_KEYS[bit],
        Some(k) => ARG_KEY_NAMES.get(k).copied().unwrap_or("?"),
    }
}

/// The `args` keys [`ArgKey::of`] reads in a second spelling.
const OTHER_SPELLINGS: [(&str, ArgKey); 2] = [
    ("Input dims", ArgKey::InputDims),
    ("external id", ArgKey::ExternalId),
];

/// The event's members the parser reads, in the order of their bits in
/// the check for repeated members ([`Seen::note`]); `args` last.
const EVENT_KEYS: [&str; 9] = ["ph", "ts", "id", "cat", "pid", "tid", "dur", "name", "args"];

/// True if every byte of `b` is ASCII: 64 bytes a step (eight words
/// OR-ed, which LLVM turns into vector loads), where `<[u8]>::is_ascii`
/// takes a word at a time.
pub(crate) fn all_ascii(b: &[u8]) -> bool {
    let mut blocks = b.chunks_exact(64);
    for block in &mut blocks {
        let high = block
            .chunks_exact(8)
            .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")))
            .fold(0, |acc, w| acc | w);
        if high & HI != 0 {
            return false;
        }
    }
    blocks.remainder().is_ascii()
}

/// Parses a `traceEvents` element that is not an object: skipped as
/// [`SkipReason::NotAnObject`] when it is valid JSON.
pub(crate) fn parse_non_object(text: &[u8]) -> Parsed {
    match as_str(text) {
        Some(s) => parse_non_object_str(s),
        None => crate::repair::parse_lossy(text, parse_non_object_str),
    }
}

fn parse_non_object_str(s: &str) -> Parsed {
    let mut p = Parser::new(s);
    p.ws();
    match p.skip_value().and_then(|()| p.end()) {
        Ok(()) => Parsed::Skip {
            cat: Text::Dash,
            reason: SkipReason::NotAnObject,
        }
        .with_repairs(p.repairs()),
        Err(e) => Parsed::Syntax {
            offset: e.offset,
            message: e.message,
        },
    }
}

/// The sum and the OR of one bit per member read ([`Seen::note`]): they
/// differ once a member repeats.
#[derive(Default, Clone, Copy)]
struct Seen {
    sum: u64,
    or: u64,
}

impl Seen {
    /// Notes a member that sets the field of `bit` (one bit per field:
    /// [`EVENT_KEYS`], then [`ArgKey::bit`]). Two instructions a member,
    /// and no branch: whether a field was set twice is told once per
    /// event, by the sum and the OR differing (a bit added twice
    /// carries); which one, on the slow path ([`first_repeated_member`]).
    /// The sum wraps only after 2^64 members.
    #[inline(always)]
    fn note(&mut self, bit: u64) {
        self.sum = self.sum.wrapping_add(bit);
        self.or |= bit;
    }

    /// Whether a member was noted twice.
    #[inline(always)]
    fn repeated(&self) -> bool {
        self.sum != self.or
    }
}

/// The fields of an event as written, converted but not yet checked.
#[derive(Default, Clone, Copy)]
struct RawEvent<'a> {
    ph: Option<RawStr<'a>>,
    cat: Option<RawStr<'a>>,
    name: Option<RawStr<'a>>,
    pid: Option<RawIdent<'a>>,
    tid: Option<RawIdent<'a>>,
    ts: Option<Micros>,
    dur: Option<Micros>,
    id: Option<u64>,
    /// Whether `args` was an object.
    has_args: bool,
    args: RawArgs<'a>,
    /// `Category::parse` of `cat`, where [`Parser::pass_over_left_out`]
    /// has already worked it out; else `None`.
    category: Option<Category>,
}

#[derive(Default, Clone, Copy)]
struct RawArgs<'a> {
    correlation: Option<u64>,
    external_id: Option<u64>,
    stream: Option<i64>,
    device: Option<i64>,
    /// `name` of `thread_name` / `process_name` metadata events.
    name: Option<RawStr<'a>>,
    /// `sort_index` of `thread_sort_index` / `process_sort_index` ones.
    sort_index: Option<i64>,
    /// `labels` of `process_labels` ones.
    labels: Option<RawStr<'a>>,
    /// The arguments of `[memory]` instant events.
    memory: MemoryArgs,
    /// The fields that go to [`EventExtra`], made when the first of their
    /// keys is seen: most events have none, and setting their 22 fields
    /// to `None` for every element cost about 30 instructions.
    extra: Option<ExtraArgs<'a>>,
    /// Whether any field that goes to [`EventExtra`] was seen.
    has_extra: bool,
}

impl<'a> RawArgs<'a> {
    /// The extra fields, made empty on first use.
    #[inline(always)]
    fn extra(&mut self) -> &mut ExtraArgs<'a> {
        self.extra.get_or_insert_with(ExtraArgs::default)
    }
}

/// The arguments of an event that go to [`EventExtra`], as written.
#[derive(Default, Clone, Copy)]
struct ExtraArgs<'a> {
    sequence_number: Option<i64>,
    fwd_thread_id: Option<i64>,
    wait_on_stream: Option<i64>,
    wait_on_cuda_event_record_corr_id: Option<i64>,
    wait_on_cuda_event_id: Option<i64>,
    event_id: Option<i64>,
    graph_id: Option<i64>,
    graph_node_id: Option<i64>,
    bytes: Option<u64>,
    collective_name: Option<RawStr<'a>>,
    in_nelems: Option<u64>,
    out_nelems: Option<u64>,
    group_size: Option<u64>,
    dtype: Option<RawStr<'a>>,
    pg_name: Option<RawStr<'a>>,
    pg_desc: Option<RawStr<'a>>,
    pg_ranks: Option<RawStr<'a>>,
    seq: Option<i64>,
    src_rank: Option<i64>,
    dst_rank: Option<i64>,
    /// Raw JSON text.
    input_dims: Option<&'a str>,
    /// Raw JSON text.
    input_type: Option<&'a str>,
}

/// `[memory]` event arguments (`profile_memory=True`).
#[derive(Default, Clone, Copy)]
struct MemoryArgs {
    device_type: Option<i64>,
    device_id: Option<i64>,
    bytes: Option<i64>,
    total_allocated: Option<i64>,
    total_reserved: Option<i64>,
}

impl<'a> RawEvent<'a> {
    /// What the event amounts to; its strings are in `strs`.
    fn take_parsed(&mut self, strs: &Strs<'a>) -> Parsed {
        let ph = self.ph.map(|ph| strs.str(ph));
        if ph == Some("M") {
            return self.take_metadata(strs);
        }
        let raw_cat = self.cat.take().unwrap_or(RawStr::Borrowed(""));
        let cat = strs.str(raw_cat);
        let label = |cat: &str| {
            if cat.is_empty() {
                Text::Dash
            } else {
                strs.text(raw_cat)
            }
        };
        let skip = |cat, reason| Parsed::Skip {
            cat: label(cat),
            reason,
        };
        let Some(ph) = ph else {
            return skip(cat, SkipReason::MissingPhase);
        };
        match ph {
            "X" => {}
            "s" | "f" | "t" => {
                let kind = match cat {
                    "ac2g" | "async_cpu_to_gpu" | "async" => FlowKind::Launch,
                    "fwdbwd" => FlowKind::FwdBwd,
                    _ => return skip(cat, SkipReason::BadFlow),
                };
                let phase = if ph == "s" {
                    FlowPhase::Start
                } else {
                    FlowPhase::End
                };
                let (Some(id), Some(Micros::Ns(ts_ns)), Some(pid), Some(tid)) =
                    (self.id, self.ts, self.pid.take(), self.tid.take())
                else {
                    return skip(cat, SkipReason::BadFlow);
                };
                return Parsed::Flow {
                    kind,
                    phase,
                    id,
                    pid: PIdent::of(strs, pid),
                    tid: PIdent::of(strs, tid),
                    ts_ns,
                };
            }
            "i" | "I" if self.name.map(|n| strs.str(n)) == Some("[memory]") => {
                return match self.memory_event() {
                    Some(event) => Parsed::Memory {
                        event,
                        cat: label(cat),
                    },
                    None => skip(cat, SkipReason::NotATask),
                };
            }
            "i" | "I" | "C" => return skip(cat, SkipReason::NotATask),
            "B" | "E" => return skip(cat, SkipReason::BeginEnd),
            // The Chrome trace format's other phases: async and flow-v1
            // spans, objects, samples, marks, clock syncs, memory dumps,
            // contexts.
            "b" | "n" | "e" | "S" | "T" | "p" | "F" | "N" | "O" | "D" | "P" | "R" | "c" | "v"
            | "V" | "(" | ")" => return skip(cat, SkipReason::OtherPhase),
            _ => return skip(cat, SkipReason::UnsupportedPhase),
        }
        let Some(category) = self.category.or_else(|| Category::parse(cat)) else {
            let reason = if is_known_unmodeled(cat) {
                SkipReason::NotModeled
            } else {
                SkipReason::UnknownCategory
            };
            return skip(cat, reason);
        };
        let ts_ns = match self.ts {
            None | Some(Micros::Invalid) => return skip(cat, SkipReason::MissingTs),
            Some(Micros::OutOfRange) => return skip(cat, SkipReason::TimeOutOfRange),
            Some(Micros::Ns(t)) => t,
        };
        let dur_ns = match self.dur {
            None | Some(Micros::Invalid) => return skip(cat, SkipReason::MissingDur),
            Some(Micros::OutOfRange) => return skip(cat, SkipReason::TimeOutOfRange),
            Some(Micros::Ns(d)) if d < 0 => return skip(cat, SkipReason::NegativeDur),
            Some(Micros::Ns(d)) => d,
        };
        if ts_ns.checked_add(dur_ns).is_none() {
            return skip(cat, SkipReason::TimeOutOfRange);
        }
        let Some(name) = self.name.take() else {
            return skip(cat, SkipReason::MissingName);
        };
        let (Some(pid), Some(tid)) = (self.pid.take(), self.tid.take()) else {
            return skip(cat, SkipReason::MissingPidTid);
        };
        let args = &self.args;
        // `has_extra` is set only once a value went into `args.extra`.
        let raw_extra = args.extra.as_ref().filter(|_| args.has_extra);
        let extra = raw_extra.map(extra_from);
        let texts = raw_extra.and_then(|a| extra_texts(a, strs, extra.as_ref()));
        // With texts still to convert, whether the extras are empty is
        // known only once they are (a malformed `Input Dims` is dropped).
        let extra = match texts {
            Some(_) => extra,
            None => extra.filter(|e| !e.is_empty()),
        };
        Parsed::Complete(Complete {
            category,
            name: strs.text(name),
            pid: PIdent::of(strs, pid),
            tid: PIdent::of(strs, tid),
            ts_ns,
            dur_ns,
            ids: EventIds::new(args.correlation, args.external_id, args.stream, args.device),
            extra: extra.map(Box::new),
            texts: texts.map(Box::new),
        })
    }

    /// A `[memory]` event's allocator state; `None` without a time or a
    /// byte count.
    fn memory_event(&self) -> Option<MemoryEvent> {
        let Some(Micros::Ns(ts_ns)) = self.ts else {
            return None;
        };
        let m = &self.args.memory;
        Some(MemoryEvent {
            ts_ns,
            device_type: m.device_type.unwrap_or(-1),
            device_id: m.device_id.unwrap_or(-1),
            bytes: m.bytes?,
            total_allocated: m.total_allocated,
            total_reserved: m.total_reserved,
        })
    }

    fn take_metadata(&mut self, strs: &Strs<'a>) -> Parsed {
        let (Some(name), Some(pid)) = (self.name.map(|n| strs.str(n)), self.pid.take()) else {
            return Parsed::Metadata;
        };
        let sort_tid = match name {
            "thread_sort_index" => Some(self.tid.take()),
            "process_sort_index" => Some(None),
            _ => None,
        };
        if let Some(tid) = sort_tid {
            let Some(index) = self.args.sort_index.filter(|_| self.has_args) else {
                return Parsed::Metadata;
            };
            return Parsed::TrackSort {
                pid: PIdent::of(strs, pid),
                tid: tid.map(|t| PIdent::of(strs, t)),
                index,
            };
        }
        if name == "process_labels" {
            let Some(labels) = self.args.labels.take().filter(|_| self.has_args) else {
                return Parsed::Metadata;
            };
            return Parsed::ProcessLabels {
                pid: PIdent::of(strs, pid),
                labels: strs.str(labels).to_owned(),
            };
        }
        let Some(label) = self.args.name.take().filter(|_| self.has_args) else {
            return Parsed::Metadata;
        };
        let tid = match name {
            "thread_name" => self.tid.take(),
            "process_name" => None,
            _ => return Parsed::Metadata,
        };
        Parsed::TrackName {
            pid: PIdent::of(strs, pid),
            tid: tid.map(|t| PIdent::of(strs, t)),
            name: strs.str(label).to_owned(),
        }
    }
}

/// The extras of `a`, its texts left out (see [`ExtraTexts`]).
fn extra_from(a: &ExtraArgs) -> EventExtra {
    let collective = if a.collective_name.is_some()
        || a.pg_name.is_some()
        || a.in_nelems.is_some()
        || a.seq.is_some()
    {
        let count = |v: Option<u64>| v.filter(|&n| n != u64::ABSENT);
        Some(Box::new(CollectiveArgs {
            in_nelems: count(a.in_nelems),
            out_nelems: count(a.out_nelems),
            group_size: a.group_size.and_then(|g| u32::try_from(g).ok()),
            seq: a.seq,
            src_rank: a.src_rank,
            dst_rank: a.dst_rank,
            ..CollectiveArgs::default()
        }))
    } else {
        None
    };
    let activity = ActivityArgs {
        wait_on_stream: a.wait_on_stream,
        wait_on_event_record_correlation: a.wait_on_cuda_event_record_corr_id,
        event_id: a.wait_on_cuda_event_id.or(a.event_id),
        graph_id: a.graph_id,
        graph_node_id: a.graph_node_id,
        bytes: a.bytes,
    };
    EventExtra {
        sequence_number: a.sequence_number,
        fwd_thread_id: a.fwd_thread_id,
        activity: (!activity.is_empty()).then(|| Box::new(activity)),
        collective,
        input_dims: None,
        input_type: None,
    }
}

/// The texts of `a` that go to `extra` (see [`ExtraTexts`]), as texts of
/// the element `base`; `None` if there are none.
fn extra_texts(a: &ExtraArgs, strs: &Strs<'_>, extra: Option<&EventExtra>) -> Option<ExtraTexts> {
    let text = |s: &Option<RawStr<'_>>| s.map(|s| strs.text(s));
    let raw = |s: Option<&str>| s.map(|s| strs.text(RawStr::Borrowed(s)));
    let mut t = ExtraTexts {
        input_dims: raw(a.input_dims),
        input_type: raw(a.input_type),
        ..ExtraTexts::default()
    };
    if extra.is_some_and(|e| e.collective.is_some()) {
        t.collective_name = text(&a.collective_name);
        t.dtype = text(&a.dtype);
        t.pg_name = text(&a.pg_name);
        t.pg_desc = text(&a.pg_desc);
        t.pg_ranks = text(&a.pg_ranks);
    }
    t.bad_counts = bad_counts(a);
    let any = t.all_mut().into_iter().any(|t| t.is_some()) || t.bad_counts != 0;
    any.then_some(t)
}

/// Bit `k` set for each collective count [`BAD_COUNT_KEYS`]`[k]` of `a`
/// that was written but holds no count in range (read by [`Parser::id`]
/// as the absent value: negative, a fraction, past 2^64 or the absent
/// value itself, a string holding no integer; a `Group size` past 2^32).
fn bad_counts(a: &ExtraArgs) -> u8 {
    let bad = |v: Option<u64>, max: u64| v.is_some_and(|n| n == u64::ABSENT || n > max);
    u8::from(bad(a.in_nelems, u64::MAX))
        | u8::from(bad(a.out_nelems, u64::MAX)) << 1
        | u8::from(bad(a.group_size, u64::from(u32::MAX))) << 2
}

/// The `args` members the model reads, by key.
#[derive(Clone, Copy)]
enum ArgKey {
    Correlation,
    ExternalId,
    Stream,
    Device,
    Name,
    SortIndex,
    Labels,
    SequenceNumber,
    FwdThreadId,
    WaitOnStream,
    WaitOnEventRecordCorrId,
    WaitOnEventId,
    EventId,
    GraphId,
    GraphNodeId,
    Bytes,
    CollectiveName,
    InNelems,
    OutNelems,
    GroupSize,
    Dtype,
    PgName,
    PgDesc,
    PgRanks,
    Seq,
    SrcRank,
    DstRank,
    InputDims,
    InputType,
    MemDeviceType,
    MemDeviceId,
    MemBytes,
    MemTotalAllocated,
    MemTotalReserved,
}

impl ArgKey {
    /// The key's bit in the check for repeated members
    /// ([`Seen::note`]), after the event's own nine.
    #[inline(always)]
    fn bit(self) -> u64 {
        Self::bit_at(self as usize)
    }

    /// [`ArgKey::bit`] of the `k`-th variant.
    #[inline(always)]
    fn bit_at(k: usize) -> u64 {
        1 << (EVENT_KEYS.len() + k)
    }

    /// The key `k`; `None` for a key the model does not read. A `match`
    /// on strings tries its arms one after another; matching on the length
    /// first leaves one to three comparisons for any key, known or not
    /// (kernels carry a dozen arguments the model never reads).
    #[inline]
    fn of(k: &[u8]) -> Option<ArgKey> {
        use ArgKey as K;
        Some(match k.len() {
            3 if k == b"Seq" => K::Seq,
            4 if k == b"name" => K::Name,
            5 => match k {
                b"bytes" => K::Bytes,
                b"dtype" => K::Dtype,
                b"Bytes" => K::MemBytes,
                _ => return None,
            },
            6 => match k {
                b"stream" => K::Stream,
                b"device" => K::Device,
                b"labels" => K::Labels,
                _ => return None,
            },
            8 => match k {
                b"event_id" => K::EventId,
                b"graph id" => K::GraphId,
                b"Src Rank" => K::SrcRank,
                b"Dst Rank" => K::DstRank,
                _ => return None,
            },
            9 if k == b"Device Id" => K::MemDeviceId,
            10 => match k {
                b"sort_index" => K::SortIndex,
                b"Group size" => K::GroupSize,
                b"Input Dims" | b"Input dims" => K::InputDims,
                b"Input type" => K::InputType,
                _ => return None,
            },
            11 => match k {
                b"External id" | b"external id" => K::ExternalId,
                b"correlation" => K::Correlation,
                b"Device Type" => K::MemDeviceType,
                _ => return None,
            },
            13 => match k {
                b"Fwd thread id" => K::FwdThreadId,
                b"graph node id" => K::GraphNodeId,
                b"In msg nelems" => K::InNelems,
                _ => return None,
            },
            14 => match k {
                b"wait_on_stream" => K::WaitOnStream,
                b"Out msg nelems" => K::OutNelems,
                b"Total Reserved" => K::MemTotalReserved,
                _ => return None,
            },
            15 => match k {
                b"Sequence number" => K::SequenceNumber,
                b"Collective name" => K::CollectiveName,
                b"Total Allocated" => K::MemTotalAllocated,
                _ => return None,
            },
            18 if k == b"Process Group Name" => K::PgName,
            19 if k == b"Process Group Ranks" => K::PgRanks,
            21 if k == b"wait_on_cuda_event_id" => K::WaitOnEventId,
            25 if k == b"Process Group Description" => K::PgDesc,
            33 if k == b"wait_on_cuda_event_record_corr_id" => K::WaitOnEventRecordCorrId,
            _ => return None,
        })
    }
}

/// Each [`ArgKey`]'s name as a warning gives it, in the order of the
/// variants (the first spelling of a key written two ways).
const ARG_KEY_NAMES: [&str; 34] = [
    "args.correlation",
    "args.External id",
    "args.stream",
    "args.device",
    "args.name",
    "args.sort_index",
    "args.labels",
    "args.Sequence number",
    "args.Fwd thread id",
    "args.wait_on_stream",
    "args.wait_on_cuda_event_record_corr_id",
    "args.wait_on_cuda_event_id",
    "args.event_id",
    "args.graph id",
    "args.graph node id",
    "args.bytes",
    "args.Collective name",
    "args.In msg nelems",
    "args.Out msg nelems",
    "args.Group size",
    "args.dtype",
    "args.Process Group Name",
    "args.Process Group Description",
    "args.Process Group Ranks",
    "args.Seq",
    "args.Src Rank",
    "args.Dst Rank",
    "args.Input Dims",
    "args.Input type",
    "args.Device Type",
    "args.Device Id",
    "args.Bytes",
    "args.Total Allocated",
    "args.Total Reserved",
];

/// Stores `v`; true if it is a value (for [`RawArgs::has_extra`]).
fn set<T>(field: &mut Option<T>, v: Option<T>) -> bool {
    *field = v;
    field.is_some()
}

/// Categories Kineto writes that the model deliberately leaves out.
pub(crate) fn is_known_unmodeled(cat: &str) -> bool {
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

/// A time in microseconds as written, converted to integer nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Micros {
    Ns(i64),
    OutOfRange,
    Invalid,
}

/// A JSON number: its text (grammar checked) and the parts the
/// conversions need, computed while scanning.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Number<'a> {
    text: &'a str,
    neg: bool,
    /// The integer part, or `None` if it does not fit in a u64.
    int: Option<u64>,
    /// Whether there is a fraction.
    has_frac: bool,
    /// The first three fraction digits as an integer (`.5` gives 500).
    frac3: u64,
    /// Whether the fourth fraction digit is 5 or more.
    round_up: bool,
    has_exp: bool,
}

/// A number as a JSON parser would hand it over: unsigned, negative or
/// floating (fractions, exponents, and integers out of 64-bit range).
pub(crate) enum NumValue {
    U(u64),
    I(i64),
    F(f64),
}

impl Number<'_> {
    pub fn value(&self) -> NumValue {
        if !self.has_frac && !self.has_exp {
            if let Some(u) = self.int {
                if !self.neg {
                    return NumValue::U(u);
                }
                if u <= 1 << 63 {
                    return NumValue::I((u as i64).wrapping_neg());
                }
            }
        }
        NumValue::F(self.text.parse().unwrap_or(f64::NAN))
    }

    /// Microseconds to ns, exactly for plain decimals (`1669783687464181`,
    /// `88511388202.785`); rounded half away from zero past the third
    /// decimal. Exponents go through f64.
    #[inline]
    fn micros(&self) -> Micros {
        if self.has_exp {
            return micros_from_f64(self.text.parse().unwrap_or(f64::NAN));
        }
        let ns = self
            .int
            .and_then(|int| int.checked_mul(1000))
            .and_then(|n| n.checked_add(self.frac3 + u64::from(self.round_up)))
            .and_then(|n| i64::try_from(n).ok());
        match ns {
            Some(n) => Micros::Ns(if self.neg { -n } else { n }),
            None => Micros::OutOfRange,
        }
    }
}

fn digits_u64(digits: &[u8]) -> Option<u64> {
    let mut v: u64 = 0;
    for &d in digits {
        v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    Some(v)
}

fn micros_from_f64(v: f64) -> Micros {
    let ns = (v * 1000.0).round();
    if ns.is_nan() {
        Micros::Invalid
    } else if ns.abs() >= 9.2e18 {
        // Infinite too: `1e999` parses as infinity.
        Micros::OutOfRange
    } else {
        Micros::Ns(ns as i64)
    }
}

/// Exact decimal microseconds (`"1234.567"`) to ns, for times written as
/// strings, read as the same text written as a number reads: rounded half
/// away from zero past the third decimal, and an exponent (`"1e3"`)
/// through f64. A string is the slow path (few writers quote times), so
/// it is read apart from the number's digits.
pub(crate) fn parse_decimal_micros(s: &str) -> Micros {
    let s = s.trim();
    if s.bytes().any(|b| b == b'e' || b == b'E') {
        return match s.parse::<f64>() {
            Ok(v) if v.is_finite() => micros_from_f64(v),
            Ok(_) => Micros::OutOfRange,
            Err(_) => Micros::Invalid,
        };
    }
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    if int.is_empty() && frac.is_empty()
        || !int.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
    {
        return Micros::Invalid;
    }
    let mut ns: i64 = 0;
    for b in int.bytes() {
        ns = match ns
            .checked_mul(10)
            .and_then(|n| n.checked_add((b - b'0') as i64))
        {
            Some(n) => n,
            None => return Micros::OutOfRange,
        };
    }
    let Some(mut ns) = ns.checked_mul(1000) else {
        return Micros::OutOfRange;
    };
    let mut scale = 100;
    for b in frac.bytes().take(3) {
        // The fraction can still overflow: "9223372036854775.9".
        let Some(sum) = ns.checked_add((b - b'0') as i64 * scale) else {
            return Micros::OutOfRange;
        };
        ns = sum;
        scale /= 10;
    }
    if frac.as_bytes().get(3).is_some_and(|&b| b >= b'5') {
        let Some(up) = ns.checked_add(1) else {
            return Micros::OutOfRange;
        };
        ns = up;
    }
    Micros::Ns(if neg { -ns } else { ns })
}

/// One JSON value, with containers already skipped.
enum Value<'a> {
    Null,
    Bool,
    Num(Number<'a>),
    Str(Cow<'a, str>),
    Container,
}

/// Conversions of a [`Value`] for the fields of a [`RawEvent`]. `Err(())` is
/// a wrong JSON type.
impl<'a> Value<'a> {
    /// `ph`, `cat`, `name`: a string or null.
    fn opt_str(self) -> std::result::Result<Option<Cow<'a, str>>, ()> {
        match self {
            Value::Null => Ok(None),
            Value::Str(s) => Ok(Some(s)),
            _ => Err(()),
        }
    }

    /// `pid`, `tid`: an integer, a string, or null.
    fn ident(self) -> std::result::Result<Option<IdentValue<'a>>, ()> {
        match self {
            Value::Null => Ok(None),
            Value::Num(n) => match n.value() {
                NumValue::U(u) => i64::try_from(u)
                    .map(|v| Some(IdentValue::Num(v)))
                    .map_err(drop),
                NumValue::I(i) => Ok(Some(IdentValue::Num(i))),
                NumValue::F(f) if f.fract() == 0.0 && f.abs() < 9.0e18 => {
                    Ok(Some(IdentValue::Num(f as i64)))
                }
                NumValue::F(_) => Err(()),
            },
            Value::Str(s) => Ok(Some(match s.trim().parse::<i64>() {
                Ok(n) => IdentValue::Num(n),
                Err(_) => IdentValue::Name(s),
            })),
            _ => Err(()),
        }
    }

    /// `ts`, `dur`: any JSON value; null reads as absent.
    fn micros(self) -> Option<Micros> {
        match self {
            Value::Null => None,
            Value::Num(n) => Some(n.micros()),
            Value::Str(s) => Some(parse_decimal_micros(&s)),
            Value::Bool | Value::Container => Some(Micros::Invalid),
        }
    }

    /// A lenient integer: a number, or a string holding one (decimal or
    /// `0x` or `0X` hex); anything else reads as absent.
    fn int<T: FromJsonNumber>(self) -> Option<T> {
        match self {
            Value::Num(n) => match n.value() {
                NumValue::U(u) => T::from_u64(u),
                NumValue::I(i) => T::from_i64(i),
                NumValue::F(f) if f.fract() == 0.0 && f.abs() < 9.0e18 => T::from_i64(f as i64),
                NumValue::F(_) => None,
            },
            Value::Str(s) => {
                let v = s.trim();
                // Either case of the prefix: `0X1F` is as much hex
                // (C's `%#X`), and read as absent it was counted as a
                // malformed id.
                match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
                    Some(hex) => u64::from_str_radix(hex, 16).ok().and_then(T::from_u64),
                    None => v
                        .parse::<i64>()
                        .ok()
                        .and_then(T::from_i64)
                        .or_else(|| v.parse::<u64>().ok().and_then(T::from_u64)),
                }
            }
            _ => None,
        }
    }

    /// A lenient string: numbers are written out; other types read as
    /// absent.
    fn lenient_str(self) -> Option<Cow<'a, str>> {
        match self {
            Value::Str(s) => Some(s),
            Value::Num(n) => Some(Cow::Owned(match n.value() {
                NumValue::U(u) => u.to_string(),
                NumValue::I(i) => i.to_string(),
                NumValue::F(f) => f.to_string(),
            })),
            _ => None,
        }
    }
}

trait FromJsonNumber: Sized {
    /// The value [`crate::Event`] packs as "absent" (see [`Parser::id`]).
    const ABSENT: Self;
    fn from_i64(v: i64) -> Option<Self>;
    fn from_u64(v: u64) -> Option<Self>;
}

impl FromJsonNumber for i64 {
    const ABSENT: i64 = i64::MIN;
    fn from_i64(v: i64) -> Option<Self> {
        Some(v)
    }
    fn from_u64(v: u64) -> Option<Self> {
        i64::try_from(v).ok()
    }
}

impl FromJsonNumber for u64 {
    const ABSENT: u64 = u64::MAX;
    fn from_i64(v: i64) -> Option<Self> {
        u64::try_from(v).ok()
    }
    fn from_u64(v: u64) -> Option<Self> {
        Some(v)
    }
}

/// Bytes that end the fast scan of a string: `"`, `\` and control bytes.
static STRING_SPECIAL: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

/// The scanner under the event parser; [`crate::tree`] builds member
/// documents with it too.
pub(crate) struct Parser<'a> {
    s: &'a str,
    /// `s` as bytes, always: [`Parser::slice`] relies on it.
    b: &'a [u8],
    pub i: usize,
    depth: usize,
    /// Set when a field the event needs had the wrong JSON type.
    bad_type: bool,
    /// `NaN` / `Infinity` literals read as null so far.
    pub non_finite: u32,
    /// Set when a `\uXXXX` escape was a lone surrogate, read as U+FFFD.
    pub lone_surrogate: bool,
    /// The strings with escapes that [`RawStr::Unescaped`] refers to.
    unescaped: Vec<String>,
    /// The members of the event read so far, those of its `args` too.
    seen: Seen,
}

impl<'a> Parser<'a> {
    pub fn new(s: &'a str) -> Parser<'a> {
        Parser {
            s,
            b: s.as_bytes(),
            i: 0,
            depth: 0,
            bad_type: false,
            non_finite: 0,
            lone_surrogate: false,
            unescaped: Vec::new(),
            seen: Seen::default(),
        }
    }

    /// What was repaired so far (never invalid UTF-8: the parser reads a
    /// `str`, and [`crate::repair`] adds that).
    pub fn repairs(&self) -> Repairs {
        Repairs {
            non_finite: self.non_finite,
            invalid_utf8: false,
            lone_surrogate: self.lone_surrogate,
            repeated: 0,
        }
    }

    /// The text being parsed, as bytes.
    #[inline(always)]
    pub fn bytes(&self) -> &'a [u8] {
        self.b
    }

    /// `s[start..end]` where the bytes at `start - 1` and `end` are ASCII
    /// (a quote, or the text around a number) or the ends of `s`, so both
    /// are character boundaries and the check `&s[start..end]` makes is not
    /// needed. Sliced through `b`: the callers have most often just
    /// compared `end` with its length, so only `start <= end` is left to
    /// check. (Slicing `s` with `get`, as before, cost about 13
    /// instructions a string, 6% of a runtime event's parse.) A range
    /// outside `s` is a bug, and panics.
    #[inline(always)]
    fn slice(&self, start: usize, end: usize) -> &'a str {
        debug_assert!(self.s.is_char_boundary(start) && self.s.is_char_boundary(end));
        let bytes = &self.b[start..end];
        // SAFETY: `b` is `s`'s bytes (it is set only in `new`), and the
        // callers pass boundaries next to ASCII bytes (see above), so the
        // range holds whole characters of valid UTF-8.
        unsafe { std::str::from_utf8_unchecked(bytes) }
    }

    #[cold]
    #[inline(never)]
    pub fn fail<T>(&self, offset: usize, message: impl Into<String>) -> Result<T> {
        Err(Box::new(SyntaxError {
            offset,
            message: message.into(),
        }))
    }

    /// "found ..." for the byte at `i`.
    fn found(&self) -> String {
        match self.b.get(self.i) {
            None => "the end of the event".into(),
            Some(&c) if c.is_ascii_graphic() => format!("'{}'", c as char),
            Some(&c) => format!("byte 0x{c:02x}"),
        }
    }

    #[inline]
    pub fn ws(&mut self) {
        // Most often there is no whitespace, or a single space.
        match self.b.get(self.i) {
            Some(&c) if c > b' ' => return,
            Some(b' ') if self.b.get(self.i + 1).is_some_and(|&c| c > b' ') => {
                self.i += 1;
                return;
            }
            _ => {}
        }
        self.i = skip_ws(self.b, self.i);
    }

    /// Expects `c` (after whitespace).
    #[inline]
    fn eat(&mut self, c: u8, what: &str) -> Result<()> {
        // `c` itself first: in compact JSON there is never whitespace.
        if self.b.get(self.i) == Some(&c) {
            self.i += 1;
            return Ok(());
        }
        self.ws();
        if self.b.get(self.i) == Some(&c) {
            self.i += 1;
            Ok(())
        } else {
            Err(self.expected(what))
        }
    }

    /// "expected `what`, found ..." at `self.i`; out of the hot path.
    #[cold]
    #[inline(never)]
    pub fn expected(&self, what: &str) -> Box<SyntaxError> {
        Box::new(SyntaxError {
            offset: self.i,
            message: format!("expected {what}, found {}", self.found()),
        })
    }

    /// Only whitespace may follow.
    #[inline]
    pub fn end(&mut self) -> Result<()> {
        // An element ends at its closing brace (the splitter cut it there).
        if self.i == self.b.len() {
            return Ok(());
        }
        self.ws();
        if self.i < self.b.len() {
            return self.fail(
                self.i,
                format!("unexpected {} after the value", self.found()),
            );
        }
        Ok(())
    }

    /// After a member: `true` if another follows (`,`), `false` at `close`.
    #[inline(always)]
    pub fn next_member(&mut self, close: u8, what: &str) -> Result<bool> {
        // The separator itself first, as in `eat`.
        match self.b.get(self.i) {
            Some(b',') => {
                self.i += 1;
                return Ok(true);
            }
            Some(&c) if c == close => {
                self.i += 1;
                return Ok(false);
            }
            _ => {}
        }
        self.ws();
        match self.b.get(self.i) {
            Some(b',') => {
                self.i += 1;
                Ok(true)
            }
            Some(&c) if c == close => {
                self.i += 1;
                Ok(false)
            }
            _ => Err(self.no_next_member(close, what)),
        }
    }

    #[cold]
    #[inline(never)]
    fn no_next_member(&self, close: u8, what: &str) -> Box<SyntaxError> {
        self.expected(&format!("',' or '{}' {what}", close as char))
    }

    /// Object members: calls `member` with each key, positioned at the
    /// value, which `member` must consume.
    #[inline(always)]
    pub fn object(
        &mut self,
        mut member: impl FnMut(&mut Self, Cow<'a, str>) -> Result<()>,
    ) -> Result<()> {
        self.eat(b'{', "'{'")?;
        self.ws();
        if self.b.get(self.i) == Some(&b'}') {
            self.i += 1;
            return Ok(());
        }
        loop {
            // The key's quote first, as in `eat`.
            if self.b.get(self.i) != Some(&b'"') {
                self.ws();
                if self.b.get(self.i) != Some(&b'"') {
                    return Err(self.expected("a key"));
                }
            }
            let key = self.string()?;
            self.eat(b':', "':' after a key")?;
            self.ws();
            member(self, key)?;
            if !self.next_member(b'}', "after an object member")? {
                return Ok(());
            }
        }
    }

    /// [`Parser::object`] for objects most of whose members are not read
    /// (kernels carry a dozen arguments, of which the model reads four):
    /// `known` gives the key of each member `member` reads, and the others
    /// are skipped here without calling `member`, whose saved registers
    /// cost about 20 instructions a call.
    #[inline(always)]
    fn object_known<K>(
        &mut self,
        known: impl Fn(&[u8]) -> Option<K>,
        mut member: impl FnMut(&mut Self, K) -> Result<()>,
    ) -> Result<()> {
        self.object(|p, key| match known(key.as_bytes()) {
            Some(k) => member(p, k),
            None => p.skip_value(),
        })
    }

    #[inline(always)]
    fn event(&mut self, ev: &mut RawEvent<'a>) -> Result<()> {
        // `move`: the closure holds the one reference `ev`; without it,
        // it captures a reference to each field it assigns (edition 2021
        // captures disjoint fields), which costs two instructions a field
        // to set up for every object. `inline(always)`: grown by the
        // check for repeated members, the closure was left out of line, a
        // call per member (11% more of the reader's instructions on v100).
        self.object(
            #[inline(always)]
            move |p, key| {
                // On the length first, as in `ArgKey::of`: one or two
                // comparisons for any key.
                let k = key.as_bytes();
                match k.len() {
                    2 if k == b"ph" => {
                        p.seen.note(1 << 0);
                        ev.ph = p.raw_str()?;
                        p.pass_over_left_out(ev);
                    }
                    2 if k == b"ts" => {
                        p.seen.note(1 << 1);
                        ev.ts = p.micros()?;
                    }
                    2 if k == b"id" => {
                        p.seen.note(1 << 2);
                        ev.id = p.int()?;
                    }
                    3 if k == b"cat" => {
                        p.seen.note(1 << 3);
                        ev.cat = p.raw_str()?;
                        ev.category = None;
                        p.pass_over_left_out(ev);
                    }
                    3 if k == b"pid" => {
                        p.seen.note(1 << 4);
                        ev.pid = p.ident()?;
                    }
                    3 if k == b"tid" => {
                        p.seen.note(1 << 5);
                        ev.tid = p.ident()?;
                    }
                    3 if k == b"dur" => {
                        p.seen.note(1 << 6);
                        ev.dur = p.micros()?;
                    }
                    4 if k == b"name" => {
                        p.seen.note(1 << 7);
                        ev.name = p.raw_str()?;
                    }
                    4 if k == b"args" => {
                        p.seen.note(1 << 8);
                        match p.b.get(p.i) {
                            // `args` holds values only after an earlier `args`
                            // object (`has_args`): resetting costs, so only then.
                            Some(b'{') => {
                                if ev.has_args {
                                    ev.args = RawArgs::default();
                                }
                                ev.has_args = true;
                                p.args(&mut ev.args)?;
                            }
                            _ => {
                                if ev.has_args {
                                    ev.args = RawArgs::default();
                                }
                                ev.has_args = false;
                                if !matches!(p.value()?, Value::Null) {
                                    p.bad_type = true;
                                }
                            }
                        }
                    }
                    _ => p.skip_value()?,
                }
                Ok(())
            },
        )
    }

    /// Once `ev` is known to be a complete event of a category the model
    /// leaves out (`"ph": "X"` and a `cat` that is not a task's), moves to
    /// its closing brace: what follows cannot change how it is read (see
    /// [`cannot_change_the_event`]), so it is not parsed. Its structure
    /// (strings, brackets, nesting) was checked by the splitter; its
    /// values are not read, so neither their syntax nor their types are
    /// checked, and a `NaN` among them is not counted.
    #[inline]
    fn pass_over_left_out(&mut self, ev: &mut RawEvent<'a>) {
        #[cfg(test)]
        if tests::READ_ALL.get() {
            return;
        }
        // By reference and one at a time: this runs for every event.
        let Some(RawStr::Borrowed(cat)) = &ev.cat else {
            return;
        };
        if !matches!(&ev.ph, Some(RawStr::Borrowed("X"))) {
            return;
        }
        ev.category = Category::parse(cat);
        if ev.category.is_some() || self.bad_type {
            return;
        }
        let close = self.b.len() - 1;
        if self.b.get(close) == Some(&b'}') && cannot_change_the_event(&self.b[self.i..close]) {
            self.i = close;
        }
    }

    /// Reads a value and converts it; a wrong type sets `bad_type` and
    /// gives `None`.
    fn typed<T>(
        &mut self,
        convert: impl FnOnce(Value<'a>) -> std::result::Result<T, ()>,
    ) -> Result<Option<T>> {
        let v = self.value()?;
        match convert(v) {
            Ok(t) => Ok(Some(t)),
            Err(()) => {
                self.bad_type = true;
                Ok(None)
            }
        }
    }

    #[inline(always)]
    fn args(&mut self, a: &mut RawArgs<'a>) -> Result<()> {
        // `move`, as in `event`: one reference, not 37 (about 75
        // instructions for every `args` object).
        self.object_known(ArgKey::of, move |p, key| {
            use ArgKey as K;
            p.seen.note(key.bit());
            let extra = match key {
                K::Correlation => {
                    a.correlation = p.id()?;
                    false
                }
                K::ExternalId => {
                    a.external_id = p.id()?;
                    false
                }
                K::Stream => {
                    a.stream = p.id()?;
                    false
                }
                K::Device => {
                    a.device = p.id()?;
                    false
                }
                K::Name => {
                    a.name = p.lenient_str()?;
                    false
                }
                K::SortIndex => {
                    a.sort_index = p.int()?;
                    false
                }
                K::Labels => {
                    a.labels = p.lenient_str()?;
                    false
                }
                K::SequenceNumber => set(&mut a.extra().sequence_number, p.int()?),
                K::FwdThreadId => set(&mut a.extra().fwd_thread_id, p.int()?),
                K::WaitOnStream => set(&mut a.extra().wait_on_stream, p.int()?),
                K::WaitOnEventRecordCorrId => {
                    set(&mut a.extra().wait_on_cuda_event_record_corr_id, p.int()?)
                }
                K::WaitOnEventId => set(&mut a.extra().wait_on_cuda_event_id, p.int()?),
                K::EventId => set(&mut a.extra().event_id, p.int()?),
                K::GraphId => set(&mut a.extra().graph_id, p.int()?),
                K::GraphNodeId => set(&mut a.extra().graph_node_id, p.int()?),
                K::Bytes => set(&mut a.extra().bytes, p.int()?),
                K::CollectiveName => set(&mut a.extra().collective_name, p.lenient_str()?),
                // `id`, not `int`: a malformed count reads as the
                // absent value, which `extra_texts` marks for the fold to
                // count (read as plain absent, the collective lost its
                // size without a word).
                K::InNelems => set(&mut a.extra().in_nelems, p.id()?),
                K::OutNelems => set(&mut a.extra().out_nelems, p.id()?),
                K::GroupSize => set(&mut a.extra().group_size, p.id()?),
                K::Dtype => set(&mut a.extra().dtype, p.lenient_str()?),
                K::PgName => set(&mut a.extra().pg_name, p.lenient_str()?),
                K::PgDesc => set(&mut a.extra().pg_desc, p.lenient_str()?),
                K::PgRanks => set(&mut a.extra().pg_ranks, p.lenient_str()?),
                K::Seq => set(&mut a.extra().seq, p.int()?),
                K::SrcRank => set(&mut a.extra().src_rank, p.int()?),
                K::DstRank => set(&mut a.extra().dst_rank, p.int()?),
                K::InputDims => set(&mut a.extra().input_dims, p.raw_value()?),
                K::InputType => set(&mut a.extra().input_type, p.raw_value()?),
                // `[memory]` arguments: not extras of a complete event.
                K::MemDeviceType => {
                    a.memory.device_type = p.int()?;
                    false
                }
                K::MemDeviceId => {
                    a.memory.device_id = p.int()?;
                    false
                }
                K::MemBytes => {
                    a.memory.bytes = p.int()?;
                    false
                }
                K::MemTotalAllocated => {
                    a.memory.total_allocated = p.int()?;
                    false
                }
                K::MemTotalReserved => {
                    a.memory.total_reserved = p.int()?;
                    false
                }
            };
            a.has_extra |= extra;
            Ok(())
        })
    }

    /// The text of the value here; `None` for `null`.
    fn raw_value(&mut self) -> Result<Option<&'a str>> {
        let start = self.i;
        self.skip_value()?;
        let text = &self.s[start..self.i];
        Ok((text != "null").then_some(text))
    }

    /// The plain integer here (no sign, fraction or exponent, at most 19
    /// digits) and where it ends, or `None` for any other value: the
    /// common case of [`Parser::int`] and [`Parser::micros`], read without
    /// building a [`Number`].
    #[inline(always)]
    fn plain_int(&self) -> Option<(usize, u64)> {
        let (end, v) = self.int_part(self.i)?;
        match self.b.get(end) {
            Some(b'.' | b'e' | b'E') => None,
            _ => Some((end, v)),
        }
    }

    /// The integer part of a number without a sign at `start` (at most 19
    /// digits, no leading zero unless alone), its end and value; what
    /// follows is not looked at.
    #[inline(always)]
    fn int_part(&self, start: usize) -> Option<(usize, u64)> {
        // Most integers (ids, pids, durations) have fewer than eight
        // digits and eight bytes follow them: one load finds and converts
        // them, with no loop. Longer ones are out of line.
        if let Some(chunk) = self.b.get(start..start + 8) {
            let t = digits_minus_zero(chunk);
            let n = digit_count(t);
            if n < 8 {
                if n == 0 || (chunk[0] == b'0' && n > 1) {
                    return None;
                }
                return Some((start + n, swar_value(t, n)));
            }
        }
        self.int_part_long(start)
    }

    /// [`Parser::int_part`] for times: absolute timestamps have 16 digits,
    /// which the second load converts here, inline, where the general
    /// [`Parser::int_part_long`] is a call that loads and checks the first
    /// eight again (about 107 instructions a timestamp with it, measured
    /// on the v100 trace).
    #[inline(always)]
    fn time_int_part(&self, start: usize) -> Option<(usize, u64)> {
        if let Some(chunk) = self.b.get(start..start + 16) {
            let high = digits_minus_zero(&chunk[..8]);
            let n = digit_count(high);
            if n < 8 {
                if n == 0 || (chunk[0] == b'0' && n > 1) {
                    return None;
                }
                return Some((start + n, swar_value(high, n)));
            }
            let low = digits_minus_zero(&chunk[8..]);
            let m = digit_count(low);
            // Sixteen digits and more, or a leading zero (an error, which
            // the general path reports): out of line.
            if m < 8 && chunk[0] != b'0' {
                let v = swar_value(high, 8);
                if m == 0 {
                    return Some((start + 8, v));
                }
                return Some((start + 8 + m, v * POW10[m] + swar_value(low, m)));
            }
            if m == 8 && chunk[0] != b'0' && !self.b.get(start + 16).is_some_and(u8::is_ascii_digit)
            {
                return Some((
                    start + 16,
                    swar_value(high, 8) * POW10[8] + swar_value(low, 8),
                ));
            }
        }
        self.int_part(start)
    }

    /// [`Parser::int_part`] for eight digits or more (timestamps have 16),
    /// or near the end of the element.
    #[inline(never)]
    fn int_part_long(&self, start: usize) -> Option<(usize, u64)> {
        let b = self.b;
        if let Some(run) = sixteen_or_fewer_digits(b, start) {
            return run;
        }
        let mut i = start;
        let mut v: u64 = 0;
        loop {
            let Some(chunk) = b.get(i..i + 8) else {
                // Near the end: the rest a byte at a time.
                (i, v) = digit_run_from(b, i, v);
                break;
            };
            let t = digits_minus_zero(chunk);
            let n = digit_count(t);
            if n > 0 {
                v = v.wrapping_mul(POW10[n]).wrapping_add(swar_value(t, n));
                i += n;
            }
            if n < 8 {
                break;
            }
        }
        let len = i - start;
        if len == 0 || len > 19 || (b[start] == b'0' && len > 1) {
            return None;
        }
        Some((i, v))
    }

    /// The fraction digits of a number at `start` (after the `.`), if
    /// there are one to seven and no exponent follows: where they end,
    /// the first three as an integer (`.5` gives 500), and whether the
    /// fourth is 5 or more, as [`Parser::number`] computes them.
    #[inline(always)]
    fn short_fraction(&self, start: usize) -> Option<(usize, u64, bool)> {
        let chunk = self.b.get(start..start + 8)?;
        let n = digit_count(digits_minus_zero(chunk));
        if n == 0 || n == 8 || matches!(chunk[n], b'e' | b'E') {
            return None;
        }
        let d = |k: usize| u64::from(chunk[k] - b'0');
        let frac3 = match n {
            1 => d(0) * 100,
            2 => d(0) * 100 + d(1) * 10,
            _ => d(0) * 100 + d(1) * 10 + d(2),
        };
        Some((start + n, frac3, n > 3 && d(3) >= 5))
    }

    /// `ph`, `cat`, `name` (see [`Value::opt_str`]). Inlined: three
    /// fields of every element, where a call, its saved registers and its
    /// result through memory cost about 40 instructions over the scan.
    #[inline(always)]
    fn opt_str(&mut self) -> Result<Option<Cow<'a, str>>> {
        match self.b.get(self.i) {
            Some(b'"') => self.string().map(Some),
            _ => self.opt_str_other(),
        }
    }

    /// [`Parser::opt_str`] of anything but a string: rare, out of line.
    #[inline(never)]
    fn opt_str_other(&mut self) -> Result<Option<Cow<'a, str>>> {
        Ok(self.typed(Value::opt_str)?.flatten())
    }

    /// `pid`, `tid` (see [`Value::ident`]).
    #[inline(always)]
    fn ident(&mut self) -> Result<Option<RawIdent<'a>>> {
        match self.plain_int() {
            Some((end, v)) => {
                self.i = end;
                let id = i64::try_from(v).ok().map(RawIdent::Num);
                self.bad_type |= id.is_none();
                Ok(id)
            }
            None => Ok(self.typed(Value::ident)?.flatten().map(|id| match id {
                IdentValue::Num(n) => RawIdent::Num(n),
                IdentValue::Name(s) => RawIdent::Name(self.keep(s)),
            })),
        }
    }

    /// `s` as a [`RawStr`]: unescaped strings move to the parser's list.
    #[inline(always)]
    fn keep(&mut self, s: Cow<'a, str>) -> RawStr<'a> {
        match s {
            Cow::Borrowed(b) => RawStr::Borrowed(b),
            Cow::Owned(o) => self.keep_owned(o),
        }
    }

    #[cold]
    #[inline(never)]
    fn keep_owned(&mut self, s: String) -> RawStr<'a> {
        self.unescaped.push(s);
        RawStr::Unescaped(self.unescaped.len() - 1)
    }

    /// `ph`, `cat`, `name`, kept (see [`Parser::keep`]).
    #[inline(always)]
    fn raw_str(&mut self) -> Result<Option<RawStr<'a>>> {
        let s = self.opt_str()?;
        Ok(s.map(|s| self.keep(s)))
    }

    /// A lenient string argument (see [`Value::lenient_str`]), kept.
    fn lenient_str(&mut self) -> Result<Option<RawStr<'a>>> {
        let s = self.value()?.lenient_str();
        Ok(s.map(|s| self.keep(s)))
    }

    /// A lenient integer value (see [`Value::int`]).
    #[inline(always)]
    fn int<T: FromJsonNumber>(&mut self) -> Result<Option<T>> {
        match self.plain_int() {
            Some((end, v)) => {
                self.i = end;
                Ok(T::from_u64(v))
            }
            None => Ok(self.value()?.int()),
        }
    }

    /// One of the four ids an [`crate::Event`] packs (`correlation`,
    /// `External id`, `stream`, `device`): a lenient integer (see
    /// [`Value::int`]), where any other value but `null` (a fraction, a
    /// negative `correlation`, a string that holds no integer, an object)
    /// reads as the value the packed event keeps for "absent". Its setter
    /// then refuses it and the fold counts it in [`crate::Skipped::bad_args`]
    /// (read as plain absent, it was dropped without a word). Plain
    /// integers cost what [`Parser::int`] costs; the rest is out of line.
    #[inline(always)]
    fn id<T: FromJsonNumber>(&mut self) -> Result<Option<T>> {
        match self.plain_int() {
            Some((end, v)) => {
                self.i = end;
                Ok(Some(T::from_u64(v).unwrap_or(T::ABSENT)))
            }
            None => self.id_not_plain(),
        }
    }

    /// [`Parser::id`] of anything but a plain integer.
    #[cold]
    #[inline(never)]
    fn id_not_plain<T: FromJsonNumber>(&mut self) -> Result<Option<T>> {
        Ok(match self.value()? {
            // `null`, and `NaN` (counted apart, in `Skipped::non_finite`).
            Value::Null => None,
            v => Some(v.int().unwrap_or(T::ABSENT)),
        })
    }

    /// A time value (see [`Value::micros`]). Plain integers and decimals
    /// with up to seven fraction digits (`1669783687464181`, `5112.002`)
    /// are converted here, anything else by the general path.
    #[inline(always)]
    fn micros(&mut self) -> Result<Option<Micros>> {
        if let Some((end, int)) = self.time_int_part(self.i) {
            let frac = match self.b.get(end) {
                Some(b'e' | b'E') => None,
                Some(b'.') => self.short_fraction(end + 1),
                _ => Some((end, 0, false)),
            };
            if let Some((end, frac3, round_up)) = frac {
                self.i = end;
                let ns = int
                    .checked_mul(1000)
                    .and_then(|n| n.checked_add(frac3 + u64::from(round_up)))
                    .and_then(|n| i64::try_from(n).ok());
                return Ok(Some(ns.map_or(Micros::OutOfRange, Micros::Ns)));
            }
        }
        Ok(self.value()?.micros())
    }

    /// Reads the value here (containers are skipped).
    fn value(&mut self) -> Result<Value<'a>> {
        match self.b.get(self.i) {
            Some(b'"') => Ok(Value::Str(self.string()?)),
            Some(b'0'..=b'9') => Ok(Value::Num(self.number()?)),
            Some(b'-') if self.b.get(self.i + 1) != Some(&b'I') => Ok(Value::Num(self.number()?)),
            Some(b'N' | b'I' | b'-') => self.non_finite().map(|()| Value::Null),
            Some(b'n') => self.literal("null").map(|()| Value::Null),
            Some(b't') => self.literal("true").map(|()| Value::Bool),
            Some(b'f') => self.literal("false").map(|()| Value::Bool),
            Some(b'{' | b'[') => self.skip_value().map(|()| Value::Container),
            _ => Err(self.expected("a value")),
        }
    }

    /// Skips the value here, checking its syntax.
    pub fn skip_value(&mut self) -> Result<()> {
        match self.b.get(self.i) {
            Some(b'"') => self.skip_string(),
            Some(b'0'..=b'9') => match self.int_part(self.i) {
                // Plain decimals too (`"blocks per SM": 7943.757576`, in
                // every kernel's arguments), whose value is not needed:
                // without building a `Number`. Exponents, and anything
                // the general path would reject, go to `number`, so the
                // end and any error are the same.
                Some((end, _)) => match self.b.get(end) {
                    Some(b'e' | b'E') => self.number().map(drop),
                    Some(b'.') => match digit_run(self.b, end + 1).0 {
                        frac_end
                            if frac_end > end + 1
                                && !matches!(self.b.get(frac_end), Some(b'e' | b'E')) =>
                        {
                            self.i = frac_end;
                            Ok(())
                        }
                        _ => self.number().map(drop),
                    },
                    _ => {
                        self.i = end;
                        Ok(())
                    }
                },
                None => self.number().map(drop),
            },
            Some(b'-') if self.b.get(self.i + 1) != Some(&b'I') => self.number().map(drop),
            Some(b'N' | b'I' | b'-') => self.non_finite(),
            Some(b'n') => self.literal("null"),
            Some(b't') => self.literal("true"),
            Some(b'f') => self.literal("false"),
            Some(b'{') => {
                self.enter()?;
                self.object(|p, _| p.skip_value())?;
                self.leave();
                Ok(())
            }
            Some(b'[') => {
                if let Some(end) = self.plain_array_end() {
                    self.i = end;
                    return Ok(());
                }
                self.enter()?;
                self.i += 1;
                self.ws();
                if self.b.get(self.i) == Some(&b']') {
                    self.i += 1;
                } else {
                    loop {
                        self.ws();
                        self.skip_value()?;
                        if !self.next_member(b']', "after an array element")? {
                            break;
                        }
                    }
                }
                self.leave();
                Ok(())
            }
            _ => Err(self.expected("a value")),
        }
    }

    /// The end of the array at `self.i` when it holds only arrays, plain
    /// integers and strings without escapes (operators' `Input Dims`,
    /// `Input Strides`, `Concrete Inputs`, `Input type`, kernels' `grid`
    /// and `block`), checked as JSON in one loop; `None` for anything
    /// else, valid or not, which the general path then reads (so errors,
    /// repairs and the nesting limit are its own). The general path
    /// recurses into `skip_value` for each element: a kernel's `grid` or
    /// `block` (three integers) cost 338 instructions there, 280 here
    /// (callgrind, 5 December 2026).
    #[inline(never)]
    fn plain_array_end(&self) -> Option<usize> {
        let b = self.b;
        let mut i = self.i;
        let mut depth = 0;
        loop {
            // A value, or the end of an array just opened.
            match b.get(i)? {
                b'[' => {
                    depth += 1;
                    if self.depth + depth > MAX_NESTING {
                        return None;
                    }
                    i = ws_end(b, i + 1);
                    if b.get(i) != Some(&b']') {
                        continue;
                    }
                    i += 1;
                    depth -= 1;
                }
                b'0' => i = plain_number_end(b, i + 1)?,
                b'1'..=b'9' => i = plain_number_end(b, digit_run(b, i + 1).0)?,
                b'"' => {
                    let end = scan_plain(b, i + 1);
                    if b.get(end) != Some(&b'"') {
                        return None;
                    }
                    i = end + 1;
                }
                _ => return None,
            }
            // After a value: the arrays it closes, then a comma or the end.
            loop {
                if depth == 0 {
                    return Some(i);
                }
                i = ws_end(b, i);
                match b.get(i)? {
                    b',' => {
                        i = ws_end(b, i + 1);
                        break;
                    }
                    b']' => {
                        i += 1;
                        depth -= 1;
                    }
                    _ => return None,
                }
            }
        }
    }

    /// Counts one more level of nesting; [`crate::tree`] calls it too.
    pub fn enter(&mut self) -> Result<()> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return self.fail(self.i, format!("nesting deeper than {MAX_NESTING} levels"));
        }
        Ok(())
    }

    /// Leaves a level entered with [`Parser::enter`].
    pub fn leave(&mut self) {
        self.depth -= 1;
    }

    /// `NaN`, `Infinity` or `-Infinity` here: not JSON, but what Python's
    /// `json.dump` writes for non-finite floats. Read as null, and counted.
    #[cold]
    pub fn non_finite(&mut self) -> Result<()> {
        for word in ["NaN", "Infinity", "-Infinity"] {
            if self.b[self.i..].starts_with(word.as_bytes()) {
                self.i += word.len();
                self.non_finite += 1;
                return Ok(());
            }
        }
        match self.b.get(self.i) {
            Some(b'-') => self.number().map(drop),
            _ => Err(self.expected("a value")),
        }
    }

    pub fn literal(&mut self, word: &str) -> Result<()> {
        if self.b[self.i..].starts_with(word.as_bytes()) {
            self.i += word.len();
            Ok(())
        } else {
            self.fail(self.i, format!("invalid literal, expected {word}"))
        }
    }

    pub fn number(&mut self) -> Result<Number<'a>> {
        let b = self.b;
        let start = self.i;
        let mut i = start;
        let neg = b.get(i) == Some(&b'-');
        if neg {
            i += 1;
        }
        let int_start = i;
        let mut int: u64 = 0;
        match b.get(i) {
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => (i, int) = digit_run(b, i),
            _ => return self.fail(i, "invalid number: expected a digit"),
        }
        // Up to 19 digits always fit; longer ones are checked digit by digit.
        let int = if i - int_start <= 19 {
            Some(int)
        } else {
            digits_u64(&b[int_start..i])
        };
        let has_frac = b.get(i) == Some(&b'.');
        let (mut frac3, mut round_up) = (0u64, false);
        if has_frac {
            i += 1;
            let f = i;
            i = digit_run(b, i).0;
            let digit = |k: usize| u64::from(b[f + k] - b'0');
            match i - f {
                0 => return self.fail(i, "invalid number: expected a digit after '.'"),
                1 => frac3 = digit(0) * 100,
                2 => frac3 = digit(0) * 100 + digit(1) * 10,
                n => {
                    frac3 = digit(0) * 100 + digit(1) * 10 + digit(2);
                    round_up = n > 3 && digit(3) >= 5;
                }
            }
        }
        let has_exp = matches!(b.get(i), Some(b'e' | b'E'));
        if has_exp {
            i += 1;
            if let Some(b'+' | b'-') = b.get(i) {
                i += 1;
            }
            let e = i;
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            if i == e {
                return self.fail(i, "invalid number: expected a digit in the exponent");
            }
        }
        self.i = i;
        Ok(Number {
            text: self.slice(start, i),
            neg,
            int,
            has_frac,
            frac3,
            round_up,
            has_exp,
        })
    }

    /// Index of the first `"`, `\` or control byte at or after `i`.
    #[inline]
    fn scan_plain(&self, i: usize) -> usize {
        scan_plain(self.b, i)
    }

    /// The string starting at the quote here, unescaped.
    #[inline(always)]
    pub fn string(&mut self) -> Result<Cow<'a, str>> {
        // Every caller has checked the opening quote: the unchecked reads
        // below rely on the text starting at an ASCII byte.
        debug_assert_eq!(self.b.get(self.i), Some(&b'"'));
        let start = self.i + 1;
        // Most keys and short values end within one 16-byte load: taken
        // on its own, it leaves out `scan_plain`'s loop and end checks.
        // The closing quote found there is inside the text and after
        // `start`, which the compiler cannot tell (the mask's 16 bits, and
        // `start + tz` not wrapping), so its byte and the slice are read
        // without the two checks: about 11 instructions a string in all.
        #[cfg(target_arch = "x86_64")]
        if start + 16 <= self.b.len() {
            let mask = string_specials(self.b, start);
            if mask != 0 {
                let j = start + mask.trailing_zeros() as usize;
                debug_assert!(mask < 1 << 16 && j < self.b.len());
                // SAFETY: `mask` has 16 bits (a byte mask of 16 bytes), so
                // `start <= j < start + 16 <= b.len()`.
                if unsafe { *self.b.get_unchecked(j) } == b'"' {
                    self.i = j + 1;
                    // SAFETY: `start <= j < b.len()` (above); `b` is `s`'s
                    // bytes and both ends are next to ASCII quotes, so the
                    // range holds whole characters of valid UTF-8.
                    let text =
                        unsafe { std::str::from_utf8_unchecked(self.b.get_unchecked(start..j)) };
                    return Ok(Cow::Borrowed(text));
                }
            }
        }
        let j = self.scan_plain(start);
        if self.b.get(j) == Some(&b'"') {
            self.i = j + 1;
            return Ok(Cow::Borrowed(self.slice(start, j)));
        }
        self.string_rest(start, j)
    }

    /// [`Parser::string`] from the first byte that is not plain text, at
    /// `j`: an escape, or an error. Out of line: rare, and it keeps the
    /// inlined fast path small.
    #[inline(never)]
    fn string_rest(&mut self, start: usize, j: usize) -> Result<Cow<'a, str>> {
        match self.b.get(j) {
            Some(b'\\') => {
                let mut out = String::with_capacity(j - start + 16);
                out.push_str(self.slice(start, j));
                self.i = j;
                self.string_slow(start - 1, Some(&mut out))?;
                Ok(Cow::Owned(out))
            }
            _ => self.string_error(start - 1, j),
        }
    }

    fn skip_string(&mut self) -> Result<()> {
        let start = self.i;
        let j = self.scan_plain(start + 1);
        match self.b.get(j) {
            Some(b'"') => {
                self.i = j + 1;
                Ok(())
            }
            Some(b'\\') => {
                self.i = j;
                self.string_slow(start, None)
            }
            _ => self.string_error(start, j),
        }
    }

    fn string_error<T>(&self, open: usize, at: usize) -> Result<T> {
        match self.b.get(at) {
            None => self.fail(open, "unterminated string"),
            Some(&c) => self.fail(at, format!("control character 0x{c:02x} in a string")),
        }
    }

    /// The rest of a string from an escape at `self.i`, appending the text
    /// to `out` if given. `open` is the opening quote.
    fn string_slow(&mut self, open: usize, mut out: Option<&mut String>) -> Result<()> {
        loop {
            let j = self.scan_plain(self.i);
            if let Some(o) = out.as_deref_mut() {
                o.push_str(&self.s[self.i..j]);
            }
            self.i = j;
            match self.b.get(j) {
                Some(b'"') => {
                    self.i += 1;
                    return Ok(());
                }
                Some(b'\\') => {
                    let c = self.escape()?;
                    if let Some(o) = out.as_deref_mut() {
                        o.push(c);
                    }
                }
                _ => return self.string_error(open, j),
            }
        }
    }

    /// The character an escape at `self.i` stands for. A surrogate pair
    /// is one character; a lone surrogate becomes U+FFFD and is noted
    /// (`lone_surrogate`).
    fn escape(&mut self) -> Result<char> {
        let at = self.i;
        let c = match self.b.get(at + 1) {
            Some(b'"') => '"',
            Some(b'\\') => '\\',
            Some(b'/') => '/',
            Some(b'b') => '\u{8}',
            Some(b'f') => '\u{c}',
            Some(b'n') => '\n',
            Some(b'r') => '\r',
            Some(b't') => '\t',
            Some(b'u') => {
                let hi = self.hex4(at + 2)?;
                self.i = at + 6;
                if (0xD800..0xDC00).contains(&hi)
                    && self.b.get(self.i) == Some(&b'\\')
                    && self.b.get(self.i + 1) == Some(&b'u')
                {
                    let lo = self.hex4(self.i + 2)?;
                    if (0xDC00..0xE000).contains(&lo) {
                        self.i += 6;
                        let cp = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                        return Ok(char::from_u32(cp).unwrap_or('\u{fffd}'));
                    }
                }
                // `from_u32` refuses exactly the surrogates, D800..=DFFF,
                // and a pair was taken above: so this one is alone.
                return Ok(match char::from_u32(hi) {
                    Some(c) => c,
                    None => {
                        self.lone_surrogate = true;
                        '\u{fffd}'
                    }
                });
            }
            _ => return self.fail(at, "invalid escape in a string"),
        };
        self.i = at + 2;
        Ok(c)
    }

    fn hex4(&self, at: usize) -> Result<u32> {
        let Some(digits) = self.b.get(at..at + 4) else {
            return self.fail(at, "invalid \\u escape");
        };
        let mut v = 0u32;
        for &d in digits {
            let Some(x) = (d as char).to_digit(16) else {
                return self.fail(at, "invalid \\u escape");
            };
            v = v * 16 + x;
        }
        Ok(v)
    }
}

/// Whether `rest`, the members of an event after its `ph` and `cat`,
/// cannot change what the event is read as: it holds no escape (an
/// escaped key could spell `ph` or `cat`) and no string `"ph"` or `"cat"`
/// (a repeated key overrides the first). 32 or 16 bytes a step, looking
/// closer only at quotes before a `p` or a `c`: on `python_function`
/// events a `memchr2` call per quote cost about 3.5 times the
/// instructions of the 16-byte steps, and the 32-byte steps cost about a
/// quarter less than those.
fn cannot_change_the_event(rest: &[u8]) -> bool {
    #[cfg(target_arch = "x86_64")]
    if rest.len() > 32 && std::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 was detected just above.
        return unsafe { inert_avx2(rest) };
    }
    inert_sse2(rest)
}

/// Whether a `"` at `at` in `rest` opens the string `"ph"` or `"cat"`.
#[inline(always)]
fn names_ph_or_cat(rest: &[u8], at: usize) -> bool {
    let after = &rest[at + 1..];
    after.starts_with(b"ph\"") || after.starts_with(b"cat\"")
}

/// No escape in `backslashes`, and none of `quotes` (bit k: a quote at
/// `i + k`) opens `"ph"` or `"cat"`.
#[inline(always)]
fn inert_at(rest: &[u8], i: usize, mut quotes: u32, backslashes: u32) -> bool {
    if backslashes != 0 {
        return false;
    }
    while quotes != 0 {
        if names_ph_or_cat(rest, i + quotes.trailing_zeros() as usize) {
            return false;
        }
        quotes &= quotes - 1;
    }
    true
}

/// [`cannot_change_the_event`] a byte at a time.
fn inert_bytes(rest: &[u8]) -> bool {
    (rest.iter().enumerate())
        .all(|(at, &c)| c != b'\\' && !(c == b'"' && names_ph_or_cat(rest, at)))
}

/// [`cannot_change_the_event`] 16 bytes a step where SSE2 is.
fn inert_sse2(rest: &[u8]) -> bool {
    #[cfg(target_arch = "x86_64")]
    if rest.len() > 16 {
        return inert_steps(rest, 16, |i| quotes_before_p_or_c(rest, i));
    }
    inert_bytes(rest)
}

/// [`cannot_change_the_event`] of `rest`, longer than `width`, a step of
/// `width` (16 or 32) bytes at a time: `masks(i)` gives the quotes before
/// a `p` or a `c` and the backslashes of `rest[i..i + width]`, reading up
/// to `rest[i + width]`.
#[inline(always)]
fn inert_steps(rest: &[u8], width: usize, masks: impl Fn(usize) -> (u32, u32)) -> bool {
    let mut i = 0;
    while i + width < rest.len() {
        let (quotes, backslashes) = masks(i);
        if !inert_at(rest, i, quotes, backslashes) {
            return false;
        }
        i += width;
    }
    // The last `width + 1` bytes, overlapping those already seen (bits for
    // `width` of them: a quote in the last byte opens nothing, and a
    // backslash there is checked apart). All `width` seen: none left.
    let last = rest.len() - width - 1;
    let (quotes, backslashes) = masks(last);
    let seen = (i - last) as u32;
    rest[rest.len() - 1] != b'\\'
        && inert_at(
            rest,
            i,
            quotes.checked_shr(seen).unwrap_or(0),
            backslashes.checked_shr(seen).unwrap_or(0),
        )
}

/// For k in 0..16: bit k of the first mask set where `b[i + k]` is a `"`
/// followed by `p` or `c`, and of the second where it is a `\`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn quotes_before_p_or_c(b: &[u8], i: usize) -> (u32, u32) {
    use std::arch::x86_64::*;
    assert!(i + 17 <= b.len());
    // SAFETY: SSE2 is part of the x86_64 baseline, and both 16-byte
    // unaligned loads are inside `b` (asserted above).
    #[allow(unused_unsafe)]
    unsafe {
        let at = |k: usize| _mm_loadu_si128(b.as_ptr().add(i + k) as *const __m128i);
        let (v, next) = (at(0), at(1));
        let is = |v, c: u8| _mm_cmpeq_epi8(v, _mm_set1_epi8(c as i8));
        let quote = _mm_and_si128(is(v, b'"'), _mm_or_si128(is(next, b'p'), is(next, b'c')));
        (
            _mm_movemask_epi8(quote) as u32,
            _mm_movemask_epi8(is(v, b'\\')) as u32,
        )
    }
}

/// [`cannot_change_the_event`] 32 bytes a step, for `rest` longer than
/// 32 bytes.
///
/// # Safety
///
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn inert_avx2(rest: &[u8]) -> bool {
    use std::arch::x86_64::*;
    assert!(rest.len() > 32);
    inert_steps(rest, 32, |i| {
        assert!(i + 33 <= rest.len());
        // SAFETY: both 32-byte unaligned loads are inside `rest`
        // (asserted above), and the caller has AVX2.
        unsafe {
            let at = |k: usize| _mm256_loadu_si256(rest.as_ptr().add(i + k) as *const __m256i);
            let (v, next) = (at(0), at(1));
            let is = |v, c: u8| _mm256_cmpeq_epi8(v, _mm256_set1_epi8(c as i8));
            let quote =
                _mm256_and_si256(is(v, b'"'), _mm256_or_si256(is(next, b'p'), is(next, b'c')));
            (
                _mm256_movemask_epi8(quote) as u32,
                _mm256_movemask_epi8(is(v, b'\\')) as u32,
            )
        }
    })
}

/// Index of the first `"`, `\` or control byte of `b` at or after `i`
/// (`b.len()` if none): what a string may hold unescaped.
#[inline]
pub(crate) fn scan_plain(b: &[u8], mut i: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    if b.len() >= 16 {
        while i + 16 <= b.len() {
            let mask = string_specials(b, i);
            if mask != 0 {
                return i + mask.trailing_zeros() as usize;
            }
            i += 16;
        }
        if i >= b.len() {
            return b.len();
        }
        // The last 16 bytes, overlapping some already seen: one more load
        // instead of the byte loop (keys near the end of an element).
        let last = b.len() - 16;
        let mask = string_specials(b, last) >> (i - last);
        return if mask != 0 {
            i + mask.trailing_zeros() as usize
        } else {
            b.len()
        };
    }
    scan_plain_swar(b, i)
}

/// [`scan_plain`] without SIMD: on x86_64 only for texts shorter than 16
/// bytes, so out of line there (inlined, its constants were set up in
/// registers on the hot path of every member: about 3 instructions each).
#[cfg_attr(target_arch = "x86_64", inline(never))]
fn scan_plain_swar(b: &[u8], mut i: usize) -> usize {
    // Eight bytes at a time while they are plain.
    while i + 8 <= b.len() {
        let w = u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        let special = has_byte(w, b'"') | has_byte(w, b'\\') | has_less_than(w, 0x20);
        if special != 0 {
            return i + (special.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < b.len() && !STRING_SPECIAL[b[i] as usize] {
        i += 1;
    }
    i
}

/// Bit k set if `b[i + k]` is `"`, `\` or a control byte, for k in 0..16.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn string_specials(b: &[u8], i: usize) -> u32 {
    use std::arch::x86_64::*;
    assert!(i + 16 <= b.len());
    // SAFETY: SSE2 is part of the x86_64 baseline, and the 16-byte
    // unaligned load is inside `b` (asserted above).
    #[allow(unused_unsafe)]
    unsafe {
        let v = _mm_loadu_si128(b.as_ptr().add(i) as *const __m128i);
        let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
        let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
        // v <= 0x1f, unsigned: max(v, 0x1f) == 0x1f.
        let limit = _mm_set1_epi8(0x1f);
        let control = _mm_cmpeq_epi8(_mm_max_epu8(v, limit), limit);
        _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, backslash), control)) as u32
    }
}

/// [`skip_ws`], with the common cases first: most often there is no
/// whitespace, or a single space. [`Parser::ws`] does the same on its
/// own position and keeps its own copy: written as a call to this, it
/// cost 4% more instructions on the synthesized 100 MB rank (callgrind
/// of the release build, 5 December 2026).
#[inline(always)]
fn ws_end(b: &[u8], i: usize) -> usize {
    match b.get(i) {
        Some(&c) if c > b' ' => i,
        Some(b' ') if b.get(i + 1).is_some_and(|&c| c > b' ') => i + 1,
        _ => skip_ws(b, i),
    }
}

/// Index of the first byte of `b` at or after `i` that is not JSON
/// whitespace (`b.len()` if none). Pretty-printed traces indent every
/// line, so runs of several spaces after a newline are common: they are
/// skipped 16 bytes at a time.
#[inline]
fn skip_ws(b: &[u8], mut i: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    if b.len() >= 16 {
        while i + 16 <= b.len() {
            let ws = whitespace(b, i);
            if ws != 0xffff {
                return i + (!ws).trailing_zeros() as usize;
            }
            i += 16;
        }
        if i >= b.len() {
            return b.len();
        }
        // The last 16 bytes, overlapping: the whitespace before an
        // element's closing brace.
        let last = b.len() - 16;
        let other = !whitespace(b, last) >> (i - last) & (0xffff >> (i - last));
        return if other != 0 {
            i + other.trailing_zeros() as usize
        } else {
            b.len()
        };
    }
    while let Some(b' ' | b'\n' | b'\r' | b'\t') = b.get(i) {
        i += 1;
    }
    i
}

/// Bit k set if `b[i + k]` is JSON whitespace, for k in 0..16.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn whitespace(b: &[u8], i: usize) -> u32 {
    use std::arch::x86_64::*;
    assert!(i + 16 <= b.len());
    // SAFETY: SSE2 is part of the x86_64 baseline, and the 16-byte
    // unaligned load is inside `b` (asserted above).
    #[allow(unused_unsafe)]
    unsafe {
        let v = _mm_loadu_si128(b.as_ptr().add(i) as *const __m128i);
        let is = |c: u8| _mm_cmpeq_epi8(v, _mm_set1_epi8(c as i8));
        let ws = _mm_or_si128(
            _mm_or_si128(is(b' '), is(b'\n')),
            _mm_or_si128(is(b'\r'), is(b'\t')),
        );
        _mm_movemask_epi8(ws) as u32
    }
}

/// The run of ASCII digits at `b[i..]`: where it ends, and its value
/// (wrapping past 20 digits, which the caller checks). Up to eight digits
/// are found and converted at once where eight bytes remain (timestamps
/// have 16 digits, most other numbers fewer than eight).
#[inline]
fn digit_run(b: &[u8], mut i: usize) -> (usize, u64) {
    let mut v: u64 = 0;
    while let Some(chunk) = b.get(i..i + 8) {
        let w = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        // Each byte minus '0'; a digit gives 0..=9.
        let t = w ^ (LO * u64::from(b'0'));
        // High bit of each byte above 9 (exact: no carries between bytes).
        let non_digit = (((t & !HI).wrapping_add(LO * 0x76)) | t) & HI;
        let n = (non_digit.trailing_zeros() / 8) as usize;
        if n == 0 {
            return (i, v);
        }
        v = v.wrapping_mul(POW10[n]).wrapping_add(swar_value(t, n));
        i += n;
        if n < 8 {
            return (i, v);
        }
    }
    while let Some(d) = b.get(i).map(|c| c.wrapping_sub(b'0')).filter(|&d| d < 10) {
        v = v.wrapping_mul(10).wrapping_add(u64::from(d));
        i += 1;
    }
    (i, v)
}

/// `end`, the end of an integer's digits, if no digit, fraction or
/// exponent follows (a leading zero, or a number that is not a plain
/// integer: for the general path).
#[inline(always)]
fn plain_number_end(b: &[u8], end: usize) -> Option<usize> {
    match b.get(end) {
        Some(b'0'..=b'9' | b'.' | b'e' | b'E') => None,
        _ => Some(end),
    }
}

/// Eight bytes of text minus `'0'` each: a digit gives 0..=9.
#[inline(always)]
fn digits_minus_zero(chunk: &[u8]) -> u64 {
    u64::from_le_bytes(chunk.try_into().expect("8 bytes")) ^ (LO * u64::from(b'0'))
}

/// [`Parser::int_part`] of a run of 8 to 16 digits at `b[start..]` where
/// 16 bytes follow: `Some(None)` for a leading zero, `None` if the run is
/// shorter or longer (or the bytes are missing). Timestamps have 16
/// digits: two loads convert them with no loop, where the general loop
/// takes three rounds.
#[inline(always)]
fn sixteen_or_fewer_digits(b: &[u8], start: usize) -> Option<Option<(usize, u64)>> {
    let chunk = b.get(start..start + 16)?;
    let high = digits_minus_zero(&chunk[..8]);
    if digit_count(high) != 8 {
        return None;
    }
    let low = digits_minus_zero(&chunk[8..]);
    let n = digit_count(low);
    if n == 8 && b.get(start + 16).is_some_and(u8::is_ascii_digit) {
        return None;
    }
    if chunk[0] == b'0' {
        return Some(None);
    }
    let low_value = if n == 0 { 0 } else { swar_value(low, n) };
    Some(Some((
        start + 8 + n,
        swar_value(high, 8) * POW10[n] + low_value,
    )))
}

/// How many of the eight bytes of `t` ([`digits_minus_zero`]) are digits
/// before the first that is not.
#[inline(always)]
fn digit_count(t: u64) -> usize {
    // High bit of each byte above 9 (exact: no carries between bytes).
    let non_digit = (((t & !HI).wrapping_add(LO * 0x76)) | t) & HI;
    (non_digit.trailing_zeros() / 8) as usize
}

/// The value of the first `n` (1..=8) digits of `t`, eight bytes of text
/// minus `'0'` each, the first digit in the lowest byte.
#[inline(always)]
fn swar_value(t: u64, n: usize) -> u64 {
    // The n digits moved to the top bytes, zeros below them: the value of
    // all eight is the value of the n. Pairs, then fours, then eight
    // (Lemire's method).
    let t = t << (8 * (8 - n));
    let t = t.wrapping_mul(10).wrapping_add(t >> 8) & 0x00ff_00ff_00ff_00ff;
    let t = t.wrapping_mul(100).wrapping_add(t >> 16) & 0x0000_ffff_0000_ffff;
    t.wrapping_mul(10000).wrapping_add(t >> 32) & 0xffff_ffff
}

/// The digits at `b[i..]` one at a time, appended to `v`: where they end
/// and the value (wrapping; the caller checks the length).
#[inline]
fn digit_run_from(b: &[u8], mut i: usize, mut v: u64) -> (usize, u64) {
    while let Some(d) = b.get(i).map(|c| c.wrapping_sub(b'0')).filter(|&d| d < 10) {
        v = v.wrapping_mul(10).wrapping_add(u64::from(d));
        i += 1;
    }
    (i, v)
}

/// 10^n for n in 0..=8.
const POW10: [u64; 9] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
];

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

/// High bit of each byte of `w` equal to `c`, exactly (no false positives).
#[inline]
fn has_byte(w: u64, c: u8) -> u64 {
    let x = w ^ (LO * u64::from(c));
    !(((x & !HI).wrapping_add(!HI)) | x | !HI)
}

/// High bit of each byte of `w` below `n` (n <= 128), exactly.
#[inline]
fn has_less_than(w: u64, n: u8) -> u64 {
    // A byte b < n iff b has its high bit clear and (b & 0x7f) + (128 - n)
    // does not reach 128.
    let low = (w & !HI).wrapping_add(LO * u64::from(128 - n));
    !(low | w) & HI
}

#[cfg(test)]
mod tests;
