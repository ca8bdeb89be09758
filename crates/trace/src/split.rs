//! Splits a trace's JSON text into top-level members and `traceEvents`
//! elements without building a document, so a file can be parsed in bounded
//! chunks and the elements parsed in parallel.
//!
//! The splitter checks only bracket structure and strings; each element is
//! then parsed by a real JSON parser, which reports any other syntax error.

use std::ops::Range;

/// A complete piece of the input found by [`Splitter::scan`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Item {
    /// A JSON object inside `traceEvents`.
    Event(Range<usize>),
    /// Any other JSON value inside `traceEvents`.
    NonObject(Range<usize>),
    /// A top-level member other than `traceEvents`.
    Member { key: String, value: Range<usize> },
}

/// A structural error, at an offset relative to the scanned buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScanError {
    pub offset: usize,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    BeforeRoot,
    /// Inside the root object, before a key (or `,` / `}`).
    ExpectKey,
    /// After a key, before `:`.
    ExpectColon,
    /// After `:`, before the value.
    ExpectValue,
    /// Inside the events array.
    InEvents,
    /// The root value is complete.
    Done,
}

/// Incremental splitter; feed it growing buffers with [`Splitter::scan`].
pub(crate) struct Splitter {
    state: State,
    /// True when the root is the events array itself (`[ {...}, ... ]`).
    root_is_array: bool,
    key: String,
    saw_events: bool,
    /// Elements of `traceEvents` seen so far.
    pub events_seen: u64,
    stack: Vec<u8>,
}

const WS: u8 = 1;
const QUOTE: u8 = 2;
const OPEN: u8 = 3;
const CLOSE: u8 = 4;

static CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    t[b' ' as usize] = WS;
    t[b'\n' as usize] = WS;
    t[b'\r' as usize] = WS;
    t[b'\t' as usize] = WS;
    t[b'"' as usize] = QUOTE;
    t[b'{' as usize] = OPEN;
    t[b'[' as usize] = OPEN;
    t[b'}' as usize] = CLOSE;
    t[b']' as usize] = CLOSE;
    t
};

impl Splitter {
    pub fn new() -> Splitter {
        Splitter {
            state: State::BeforeRoot,
            root_is_array: false,
            key: String::new(),
            saw_events: false,
            events_seen: 0,
            stack: Vec::with_capacity(16),
        }
    }

    /// True once the root value has been closed.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// True if the root was an object and had a `traceEvents` array, or was
    /// itself an array.
    pub fn saw_events(&self) -> bool {
        self.saw_events
    }

    /// Where the splitter is, for "truncated" messages.
    pub fn context(&self) -> String {
        match self.state {
            State::BeforeRoot => "before any JSON value".into(),
            State::InEvents => format!("inside traceEvents after {} events", self.events_seen),
            State::Done => "after the end".into(),
            _ if self.saw_events => "in the top-level object after traceEvents".into(),
            _ => "in the top-level object before traceEvents".into(),
        }
    }

    /// Scans complete items from `buf[*pos..]`, appending them to `out`.
    /// Stops at the first incomplete item, leaving `*pos` at its start, so the
    /// caller can drop `buf[..*pos]`, read more and call again. With `eof`
    /// set, a trailing scalar that runs to the end counts as complete.
    pub fn scan(
        &mut self,
        buf: &[u8],
        pos: &mut usize,
        eof: bool,
        out: &mut Vec<Item>,
    ) -> Result<(), ScanError> {
        let err = |offset: usize, message: String| Err(ScanError { offset, message });
        loop {
            let Some(i) = skip_ws(buf, *pos) else {
                *pos = buf.len();
                return Ok(());
            };
            *pos = i;
            let c = buf[i];
            match self.state {
                State::Done => {
                    return err(i, format!("unexpected {} after the top-level value", show(c)));
                }
                State::BeforeRoot => match c {
                    b'{' => {
                        self.state = State::ExpectKey;
                        *pos = i + 1;
                    }
                    b'[' => {
                        self.root_is_array = true;
                        self.saw_events = true;
                        self.state = State::InEvents;
                        *pos = i + 1;
                    }
                    _ => {
                        return err(
                            i,
                            format!("the top level is {}, not an object or array", show(c)),
                        )
                    }
                },
                State::ExpectKey => match c {
                    b',' => *pos = i + 1,
                    b'}' => {
                        self.state = State::Done;
                        *pos = i + 1;
                    }
                    b'"' => {
                        let Some(end) = string_end(buf, i)? else {
                            return Ok(());
                        };
                        self.key = String::from_utf8_lossy(&buf[i + 1..end - 1]).into_owned();
                        self.state = State::ExpectColon;
                        *pos = end;
                    }
                    _ => return err(i, format!("expected a key, found {}", show(c))),
                },
                State::ExpectColon => {
                    if c != b':' {
                        return err(i, format!("expected ':' after a key, found {}", show(c)));
                    }
                    self.state = State::ExpectValue;
                    *pos = i + 1;
                }
                State::ExpectValue => {
                    if self.key == "traceEvents" && c == b'[' {
                        self.saw_events = true;
                        self.state = State::InEvents;
                        *pos = i + 1;
                        continue;
                    }
                    let Some(end) = self.value_end(buf, i, eof)? else {
                        return Ok(());
                    };
                    out.push(Item::Member {
                        key: std::mem::take(&mut self.key),
                        value: i..end,
                    });
                    self.state = State::ExpectKey;
                    *pos = end;
                }
                State::InEvents => match c {
                    b',' => *pos = i + 1,
                    b']' => {
                        self.state = if self.root_is_array {
                            State::Done
                        } else {
                            State::ExpectKey
                        };
                        *pos = i + 1;
                    }
                    _ => {
                        let Some(end) = self.value_end(buf, i, eof)? else {
                            return Ok(());
                        };
                        self.events_seen += 1;
                        out.push(if c == b'{' {
                            Item::Event(i..end)
                        } else {
                            Item::NonObject(i..end)
                        });
                        *pos = end;
                    }
                },
            }
        }
    }

    /// End (exclusive) of the JSON value starting at `start`, or `None` if
    /// the buffer ends first.
    fn value_end(
        &mut self,
        buf: &[u8],
        start: usize,
        eof: bool,
    ) -> Result<Option<usize>, ScanError> {
        match CLASS[buf[start] as usize] {
            QUOTE => string_end(buf, start),
            OPEN => self.nested_end(buf, start),
            CLOSE => Err(ScanError {
                offset: start,
                message: format!("unexpected {}", show(buf[start])),
            }),
            _ => {
                let rest = &buf[start..];
                match rest
                    .iter()
                    .position(|&b| matches!(b, b',' | b']' | b'}') || CLASS[b as usize] == WS)
                {
                    Some(n) => Ok(Some(start + n)),
                    None if eof => Ok(Some(buf.len())),
                    None => Ok(None),
                }
            }
        }
    }

    fn nested_end(&mut self, buf: &[u8], start: usize) -> Result<Option<usize>, ScanError> {
        self.stack.clear();
        let mut i = start;
        while i < buf.len() {
            match CLASS[buf[i] as usize] {
                QUOTE => match string_end(buf, i)? {
                    Some(end) => {
                        i = end;
                        continue;
                    }
                    None => return Ok(None),
                },
                OPEN => self.stack.push(buf[i]),
                CLOSE => {
                    let open = self.stack.pop();
                    let want = if buf[i] == b'}' { b'{' } else { b'[' };
                    if open != Some(want) {
                        return Err(ScanError {
                            offset: i,
                            message: format!("mismatched {}", show(buf[i])),
                        });
                    }
                    if self.stack.is_empty() {
                        return Ok(Some(i + 1));
                    }
                }
                _ => {}
            }
            i += 1;
        }
        Ok(None)
    }
}

fn skip_ws(buf: &[u8], mut i: usize) -> Option<usize> {
    while i < buf.len() {
        if CLASS[buf[i] as usize] != WS {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// End (exclusive) of the string whose opening quote is at `start`.
fn string_end(buf: &[u8], start: usize) -> Result<Option<usize>, ScanError> {
    let mut i = start + 1;
    loop {
        match memchr::memchr2(b'"', b'\\', &buf[i.min(buf.len())..]) {
            None => return Ok(None),
            Some(n) => {
                let at = i + n;
                if buf[at] == b'"' {
                    return Ok(Some(at + 1));
                }
                i = at + 2;
                if i > buf.len() {
                    return Ok(None);
                }
            }
        }
    }
}

fn show(c: u8) -> String {
    if c.is_ascii_graphic() {
        format!("'{}'", c as char)
    } else {
        format!("byte 0x{c:02x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split_all(text: &str) -> Result<Vec<Item>, ScanError> {
        let mut s = Splitter::new();
        let mut out = Vec::new();
        let mut pos = 0;
        s.scan(text.as_bytes(), &mut pos, true, &mut out)?;
        assert!(s.is_done(), "not done: {}", s.context());
        Ok(out)
    }

    #[test]
    fn splits_members_and_events() {
        let text = r#"{"a": 1, "traceEvents": [{"x": "}{"}, 3, {"y": [1,{}]}], "b": {"c": "\""}}"#;
        let items = split_all(text).unwrap();
        let pieces: Vec<String> = items
            .iter()
            .map(|it| match it {
                Item::Event(r) => format!("E{}", &text[r.clone()]),
                Item::NonObject(r) => format!("N{}", &text[r.clone()]),
                Item::Member { key, value } => format!("M{key}={}", &text[value.clone()]),
            })
            .collect();
        assert_eq!(
            pieces,
            [
                "Ma=1",
                r#"E{"x": "}{"}"#,
                "N3",
                r#"E{"y": [1,{}]}"#,
                r#"Mb={"c": "\""}"#
            ]
        );
    }

    #[test]
    fn every_split_point_gives_the_same_items() {
        let text = r#"{"schemaVersion": 1, "traceEvents": [{"a": "x\\"}, {"b": [1, 2]}, "s"], "t": true}"#;
        let whole = split_all(text).unwrap();
        for cut in 0..text.len() {
            let mut s = Splitter::new();
            let mut out = Vec::new();
            let mut pos = 0;
            s.scan(&text.as_bytes()[..cut], &mut pos, false, &mut out).unwrap();
            s.scan(text.as_bytes(), &mut pos, true, &mut out).unwrap();
            assert_eq!(out, whole, "cut at {cut}");
        }
    }

    #[test]
    fn reports_mismatched_brackets() {
        let e = split_all(r#"{"traceEvents": [{"a": [1}]}"#).unwrap_err();
        assert_eq!(e.offset, 25);
    }
}
