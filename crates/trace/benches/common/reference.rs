//! General JSON parsers reading a trace, to set the reader's speed against
//! (the read benchmark's `reference/*` group and `read_trace --reference`):
//! serde_json and sonic-rs, a SIMD parser, deserializing only the members
//! the model reads and skipping the rest (`serde_json-typed`,
//! `sonic-rs-typed`), and sonic-rs building its whole document
//! (`sonic-rs-dom`), its fastest path. See docs/PERFORMANCE.md, "Against general
//! JSON parsers". A fourth, `structural-index`, is not a parser but a
//! bound: simdjson's two stages cut down to finding the members the model
//! reads (structural.rs; PERFORMANCE.md, "Eleventh round"), and
//! `structural-index-stage1` its first stage alone (it counts positions,
//! not events).

use std::borrow::Cow;

use serde::de::IgnoredAny;
use serde::Deserialize;

#[path = "structural.rs"]
mod structural;

/// The reference parsers' names, as [`parse_reference`] takes them.
pub const PARSERS: [&str; 5] = [
    "serde_json-typed",
    "sonic-rs-typed",
    "sonic-rs-dom",
    "structural-index",
    "structural-index-stage1",
];

/// The members of an event that the model reads: what a reader written
/// on serde would deserialize.
#[derive(Deserialize)]
#[allow(dead_code)] // read by the deserializer only
struct TypedEvent<'a> {
    #[serde(borrow)]
    ph: Option<Cow<'a, str>>,
    #[serde(borrow)]
    cat: Option<Cow<'a, str>>,
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    pid: Option<IdOrName<'a>>,
    tid: Option<IdOrName<'a>>,
    id: Option<IdOrName<'a>>,
    ts: Option<f64>,
    dur: Option<f64>,
    #[serde(borrow)]
    args: Option<TypedArgs<'a>>,
}

/// `pid`, `tid` and flow ids are numbers or strings in Kineto traces.
#[derive(Deserialize)]
#[serde(untagged)]
#[allow(dead_code)]
enum IdOrName<'a> {
    Number(i64),
    Name(#[serde(borrow)] Cow<'a, str>),
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct TypedArgs<'a> {
    #[serde(rename = "External id")]
    external_id: Option<i64>,
    correlation: Option<i64>,
    stream: Option<i64>,
    device: Option<i64>,
    #[serde(rename = "Input Dims")]
    input_dims: Option<IgnoredAny>,
    #[serde(rename = "Input type", borrow)]
    input_type: Option<Vec<Cow<'a, str>>>,
}

#[derive(Deserialize)]
struct TypedTrace<'a> {
    #[serde(rename = "traceEvents", borrow)]
    events: Vec<TypedEvent<'a>>,
}

/// Whether [`parse_reference`]'s count for `how` is of events (stage one
/// alone counts index positions).
#[allow(dead_code)] // used by the benchmark, not by `read_trace`
pub fn counts_events(how: &str) -> bool {
    how != "structural-index-stage1"
}

/// Parses `bytes` with the reference parser `how`; returns the events
/// found (see [`counts_events`]).
pub fn parse_reference(how: &str, bytes: &[u8]) -> usize {
    match how {
        "serde_json-typed" => {
            let trace: TypedTrace = serde_json::from_slice(bytes).unwrap();
            trace.events.len()
        }
        "sonic-rs-typed" => {
            let trace: TypedTrace = sonic_rs::from_slice(bytes).unwrap();
            trace.events.len()
        }
        "sonic-rs-dom" => {
            use sonic_rs::{JsonContainerTrait, JsonValueTrait};
            let doc: sonic_rs::Value = sonic_rs::from_slice(bytes).unwrap();
            doc.get("traceEvents")
                .and_then(|e| e.as_array())
                .unwrap()
                .len()
        }
        "structural-index" => structural::walk_trace(bytes, true).events as usize,
        "structural-index-stage1" => structural::walk_trace(bytes, false).events as usize,
        _ => panic!("no reference parser {how}; one of {PARSERS:?}"),
    }
}
