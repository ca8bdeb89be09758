//! Splits a trace's JSON text into top-level members and `traceEvents`
//! elements without building a document, so a file can be parsed in bounded
//! chunks and the elements parsed in parallel.
//!
//! The splitter checks only bracket structure, strings and nesting depth
//! (at most [`MAX_NESTING`] levels in any value, so that no parser after it
//! recurses deeper); each element is then parsed by a real JSON parser,
//! which reports any other syntax error. Members the reader does not use
//! are never parsed: this is the only check they get.
//!
//! Lenient where writers are: a UTF-8 byte order mark before the root, the
//! JSON array form (`[{...}, {...}`) with or without its closing `]`,
//! stray and trailing commas, and zero bytes after the root (padding).

use std::ops::Range;

use crate::MAX_NESTING;

/// The UTF-8 byte order mark, which some Windows tools write.
const BOM: &[u8] = b"\xef\xbb\xbf";

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
    /// How the tests scan objects (the same items either way).
    #[cfg(test)]
    test_mode: TestMode,
}

/// The ways of scanning a run of objects that the tests compare.
#[cfg(test)]
#[derive(Clone, Copy, PartialEq, Eq)]
enum TestMode {
    /// [`Splitter::object_run`], as outside tests.
    Runs,
    /// [`Splitter::object_run_with`] with the portable masks.
    PortableRuns,
    /// Each object by itself, through [`Splitter::value_end`].
    OneAtATime,
}

/// The brackets open at a point of a value, innermost last: a stack of at
/// most [`MAX_NESTING`] bits in one integer, where a `Vec` would check its
/// capacity and length at every bracket.
#[derive(Default)]
struct OpenBrackets {
    /// Bit k is 1 if the bracket k levels out from the innermost is `{`, 0
    /// for `[`.
    braces: u128,
    depth: usize,
}

const _: () = assert!(MAX_NESTING <= u128::BITS as usize);

impl OpenBrackets {
    /// Opens `{` (`brace`) or `[`; false if that is too deep.
    #[inline(always)]
    fn push(&mut self, brace: bool) -> bool {
        if self.depth == MAX_NESTING {
            return false;
        }
        self.braces = (self.braces << 1) | u128::from(brace);
        self.depth += 1;
        true
    }

    /// Closes with `}` (`brace`) or `]`; false if that is not what is open.
    #[inline(always)]
    fn pop(&mut self, brace: bool) -> bool {
        if self.depth == 0 || (self.braces & 1 == 1) != brace {
            return false;
        }
        self.braces >>= 1;
        self.depth -= 1;
        true
    }
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
            #[cfg(test)]
            test_mode: TestMode::Runs,
        }
    }

    /// True once the root value has been closed.
    #[cfg(test)]
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// True if the input may end here, given that it ends between values:
    /// after the root, or inside a root array (the Trace Event Format lets
    /// its array form end without the `]`, as a tracer killed mid-run
    /// leaves it).
    pub fn may_end(&self) -> bool {
        self.state == State::Done || (self.root_is_array && self.state == State::InEvents)
    }

    /// True once the first non-whitespace byte has been seen.
    pub fn saw_root(&self) -> bool {
        self.state != State::BeforeRoot
    }

    /// Index in `traceEvents` of the element being scanned, if inside it.
    pub fn current_event(&self) -> Option<u64> {
        (self.state == State::InEvents).then_some(self.events_seen)
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
                // Zero padding after the root, as some tools leave it.
                State::Done if c == 0 => *pos = i + 1,
                State::Done if c == b'{' || c == b'[' => {
                    return err(
                        i,
                        "a second JSON value after the top-level one: one value per line \
                         (JSON Lines) is not a trace"
                            .into(),
                    );
                }
                State::Done => {
                    return err(
                        i,
                        format!("unexpected {} after the top-level value", show(c)),
                    );
                }
                State::BeforeRoot if c == BOM[0] => {
                    let rest = &buf[i..];
                    if rest.starts_with(BOM) {
                        *pos = i + BOM.len();
                    } else if BOM.starts_with(rest) && !eof {
                        // The mark is cut by the end of the buffer.
                        return Ok(());
                    } else {
                        return err(
                            i,
                            format!("the top level is {}, not an object or array", show(c)),
                        );
                    }
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
                        self.key = member_key(&buf[i..end]);
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
                        if self.saw_events {
                            // JSON readers keep the last array, as lumos
                            // does for other repeated members; but the
                            // first's events were streamed to the fold (and
                            // a graph build) already, and reading both
                            // would count every event the two share twice.
                            return err(
                                i,
                                format!(
                                    "a second \"traceEvents\" array (the first held {} \
                                     events): which of them is the trace is unclear (JSON \
                                     readers keep the last; lumos reads events as they come \
                                     and has read the first)",
                                    self.events_seen
                                ),
                            );
                        }
                        self.saw_events = true;
                        self.state = State::InEvents;
                        *pos = i + 1;
                        continue;
                    }
                    let end = self.value_end(buf, i, eof).map_err(|e| ScanError {
                        message: format!("in top-level \"{}\": {}", self.key, e.message),
                        ..e
                    })?;
                    let Some(end) = end else {
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
                    // Objects, nearly every element: a run of them at once.
                    b'{' if !self.one_at_a_time() => {
                        if !self.object_run(buf, pos, out)? {
                            return Ok(());
                        }
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

    /// True if objects are scanned one at a time (only in tests).
    #[inline(always)]
    fn one_at_a_time(&self) -> bool {
        #[cfg(test)]
        return self.test_mode == TestMode::OneAtATime;
        #[cfg(not(test))]
        false
    }

    /// Scans the `traceEvents` elements from the object opening at `*pos`
    /// for as long as objects follow each other (separated by whitespace
    /// and commas), appending them to `out`, as the main loop of
    /// [`Splitter::scan`] would one at a time with
    /// [`Splitter::nested_end`]. Here the 64-byte blocks run on one grid
    /// across the elements, so each block is classified once, where
    /// `nested_end` starts a new block at every element (and the loop
    /// around it costs about 140 instructions an element). Leaves `*pos`
    /// after the run (at the next byte that is not whitespace, a comma or
    /// `{`, or the end of `buf`) and returns true; or, if `buf` ends inside
    /// an element, at its start, returning false. On an error, `*pos` is
    /// the start of the element, as in the main loop.
    fn object_run(
        &mut self,
        buf: &[u8],
        pos: &mut usize,
        out: &mut Vec<Item>,
    ) -> Result<bool, ScanError> {
        #[cfg(test)]
        if self.test_mode == TestMode::PortableRuns {
            return self.object_run_with(buf, pos, out, Block::at, prefix_xor);
        }
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("pclmulqdq") {
            // SAFETY: the CPU has AVX2 and PCLMULQDQ (checked just above).
            return unsafe { self.object_run_avx2(buf, pos, out) };
        }
        self.object_run_with(buf, pos, out, Block::at, prefix_xor)
    }

    /// [`Splitter::object_run`] with AVX2 and PCLMULQDQ, as
    /// [`Splitter::nested_end_avx2`].
    ///
    /// # Safety
    ///
    /// The CPU must support AVX2 and PCLMULQDQ.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,pclmulqdq")]
    unsafe fn object_run_avx2(
        &mut self,
        buf: &[u8],
        pos: &mut usize,
        out: &mut Vec<Item>,
    ) -> Result<bool, ScanError> {
        self.object_run_with(
            buf,
            pos,
            out,
            |buf, p| {
                // SAFETY: this function's caller checked for AVX2.
                unsafe { Block::at_avx2(buf, p) }
            },
            |x| {
                // SAFETY: this function's caller checked for PCLMULQDQ.
                unsafe { prefix_xor_clmul(x) }
            },
        )
    }

    /// [`Splitter::object_run`], building block masks with `block` and
    /// taking prefix XORs with `xor`.
    #[inline(always)]
    fn object_run_with(
        &mut self,
        buf: &[u8],
        pos: &mut usize,
        out: &mut Vec<Item>,
        block: impl Fn(&[u8], usize) -> Block,
        xor: impl Fn(u64) -> u64 + Copy,
    ) -> Result<bool, ScanError> {
        debug_assert_eq!(buf.get(*pos), Some(&b'{'));
        // The state of the strings carries across elements unchanged:
        // between two elements there are only whitespace and commas (no
        // quote or backslash), and each ends outside any string.
        let mut carry = Carry::default();
        let mut open = OpenBrackets::default();
        let mut p = *pos;
        while p < buf.len() {
            let mut brackets = block(buf, p).brackets_outside_strings(&mut carry, xor);
            while brackets != 0 {
                let i = p + brackets.trailing_zeros() as usize;
                brackets &= brackets - 1;
                let c = buf[i];
                if c == b'{' || c == b'[' {
                    // At depth 0 only the `{` checked below (or at the
                    // start) can come next: the bytes before it are
                    // whitespace and commas.
                    if open.depth == 0 {
                        *pos = i;
                    }
                    if !open.push(c == b'{') {
                        return Err(ScanError {
                            offset: i,
                            message: format!("nesting deeper than {MAX_NESTING} levels"),
                        });
                    }
                    continue;
                }
                if !open.pop(c == b'}') {
                    return Err(ScanError {
                        offset: i,
                        message: format!("mismatched {}", show(c)),
                    });
                }
                if open.depth == 0 {
                    self.events_seen += 1;
                    out.push(Item::Event(*pos..i + 1));
                    let next = skip_ws_and_commas(buf, i + 1);
                    if buf.get(next) != Some(&b'{') {
                        // Anything else, or the end: the main loop's.
                        *pos = next;
                        return Ok(true);
                    }
                }
            }
            p += 64;
        }
        Ok(false)
    }

    /// End (exclusive) of the object or array opening at `start`, or `None`
    /// if the buffer ends first. Scans 64 bytes at a time (see [`Block`]) and
    /// looks only at the brackets outside strings, checking that they match.
    fn nested_end(&mut self, buf: &[u8], start: usize) -> Result<Option<usize>, ScanError> {
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("pclmulqdq") {
            // SAFETY: the CPU has AVX2 and PCLMULQDQ (checked just above).
            return unsafe { self.nested_end_avx2(buf, start) };
        }
        self.nested_end_with(buf, start, Block::at, prefix_xor)
    }

    /// [`Splitter::nested_end`] with the block masks built from two 32-byte
    /// loads instead of four 16-byte ones (a third of the instructions of
    /// the splitter's inner loop), and the prefix XOR that marks the
    /// inside of strings taken with one carry-less multiply instead of six
    /// shifts and XORs (simdjson's method).
    ///
    /// # Safety
    ///
    /// The CPU must support AVX2 and PCLMULQDQ.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,pclmulqdq")]
    unsafe fn nested_end_avx2(
        &mut self,
        buf: &[u8],
        start: usize,
    ) -> Result<Option<usize>, ScanError> {
        // The closures and `nested_end_with` are inlined here, so compiled
        // with AVX2 and PCLMULQDQ too.
        self.nested_end_with(
            buf,
            start,
            |buf, p| {
                // SAFETY: this function's caller checked for AVX2.
                unsafe { Block::at_avx2(buf, p) }
            },
            |x| {
                // SAFETY: this function's caller checked for PCLMULQDQ.
                unsafe { prefix_xor_clmul(x) }
            },
        )
    }

    /// [`Splitter::nested_end`], building block masks with `block` and
    /// taking prefix XORs with `xor` ([`prefix_xor`] or
    /// [`prefix_xor_clmul`]).
    #[inline(always)]
    fn nested_end_with(
        &mut self,
        buf: &[u8],
        start: usize,
        block: impl Fn(&[u8], usize) -> Block,
        xor: impl Fn(u64) -> u64 + Copy,
    ) -> Result<Option<usize>, ScanError> {
        let mut carry = Carry::default();
        let mut open = OpenBrackets::default();
        let mut p = start;
        while p < buf.len() {
            let mut brackets = block(buf, p).brackets_outside_strings(&mut carry, xor);
            while brackets != 0 {
                let i = p + brackets.trailing_zeros() as usize;
                brackets &= brackets - 1;
                let c = buf[i];
                if c == b'{' || c == b'[' {
                    if !open.push(c == b'{') {
                        return Err(ScanError {
                            offset: i,
                            message: format!("nesting deeper than {MAX_NESTING} levels"),
                        });
                    }
                    continue;
                }
                if !open.pop(c == b'}') {
                    return Err(ScanError {
                        offset: i,
                        message: format!("mismatched {}", show(c)),
                    });
                }
                if open.depth == 0 {
                    return Ok(Some(i + 1));
                }
            }
            p += 64;
        }
        Ok(None)
    }
}

/// `x`, hidden from the optimizer (no instruction is emitted).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn opaque(mut x: u64) -> u64 {
    // SAFETY: an empty assembly block that leaves `x` in its register.
    unsafe {
        std::arch::asm!("/* {0} */", inout(reg) x, options(pure, nomem, nostack, preserves_flags));
    }
    x
}

/// State carried from one 64-byte block to the next.
#[derive(Default)]
struct Carry {
    /// All ones if the previous block ended inside a string.
    in_string: u64,
    /// 1 if the previous block ended in an odd run of backslashes, so this
    /// block's first byte is escaped.
    escaped: u64,
}

/// Bit masks (bit i for byte i) of one 64-byte block: the simdjson "stage 1"
/// idea, cut down to what finding the end of a value needs.
struct Block {
    quote: u64,
    backslash: u64,
    /// `{` `[` `}` `]`.
    bracket: u64,
}

impl Block {
    /// The block at `buf[p..]`, padded with spaces past the end of `buf`.
    #[inline]
    fn at(buf: &[u8], p: usize) -> Block {
        match buf.get(p..p + 64) {
            Some(b) => Block::of(b.try_into().expect("64 bytes")),
            None => {
                let mut padded = [b' '; 64];
                padded[..buf.len() - p].copy_from_slice(&buf[p..]);
                Block::of(&padded)
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[inline]
    fn of(b: &[u8; 64]) -> Block {
        use std::arch::x86_64::*;
        let (mut quote, mut backslash, mut bracket) = (0u64, 0u64, 0u64);
        // SAFETY: SSE2 is part of the x86_64 baseline, and each unaligned
        // 16-byte load is inside the 64-byte array.
        #[allow(unused_unsafe)]
        unsafe {
            let q = _mm_set1_epi8(b'"' as i8);
            let bs = _mm_set1_epi8(b'\\' as i8);
            // `[` `]` are `{` `}` with bit 0x20 clear; setting it folds them.
            let case = _mm_set1_epi8(0x20);
            let open = _mm_set1_epi8(b'{' as i8);
            let close = _mm_set1_epi8(b'}' as i8);
            for k in 0..4 {
                let v = _mm_loadu_si128(b.as_ptr().add(16 * k) as *const __m128i);
                let folded = _mm_or_si128(v, case);
                let mask = |m: __m128i| _mm_movemask_epi8(m) as u16 as u64;
                quote |= mask(_mm_cmpeq_epi8(v, q)) << (16 * k);
                backslash |= mask(_mm_cmpeq_epi8(v, bs)) << (16 * k);
                bracket |= mask(_mm_or_si128(
                    _mm_cmpeq_epi8(folded, open),
                    _mm_cmpeq_epi8(folded, close),
                )) << (16 * k);
            }
        }
        Block {
            quote,
            backslash,
            bracket,
        }
    }

    /// [`Block::at`] with AVX2.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn at_avx2(buf: &[u8], p: usize) -> Block {
        match buf.get(p..p + 64) {
            // SAFETY: as this function's (AVX2 is there).
            Some(b) => unsafe { Block::of_avx2(b.try_into().expect("64 bytes")) },
            None => {
                let mut padded = [b' '; 64];
                padded[..buf.len() - p].copy_from_slice(&buf[p..]);
                // SAFETY: as above.
                unsafe { Block::of_avx2(&padded) }
            }
        }
    }

    /// [`Block::of`] with AVX2.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn of_avx2(b: &[u8; 64]) -> Block {
        use std::arch::x86_64::*;
        let (mut quote, mut backslash, mut bracket) = (0u64, 0u64, 0u64);
        // SAFETY: the caller checked for AVX2, and each unaligned 32-byte
        // load is inside the 64-byte array.
        #[allow(unused_unsafe)]
        unsafe {
            let q = _mm256_set1_epi8(b'"' as i8);
            let bs = _mm256_set1_epi8(b'\\' as i8);
            // `[` `]` are `{` `}` with bit 0x20 clear; setting it folds them.
            let case = _mm256_set1_epi8(0x20);
            let open = _mm256_set1_epi8(b'{' as i8);
            let close = _mm256_set1_epi8(b'}' as i8);
            for k in 0..2 {
                let v = _mm256_loadu_si256(b.as_ptr().add(32 * k) as *const __m256i);
                let folded = _mm256_or_si256(v, case);
                let mask = |m: __m256i| _mm256_movemask_epi8(m) as u32 as u64;
                quote |= mask(_mm256_cmpeq_epi8(v, q)) << (32 * k);
                backslash |= mask(_mm256_cmpeq_epi8(v, bs)) << (32 * k);
                bracket |= mask(_mm256_or_si256(
                    _mm256_cmpeq_epi8(folded, open),
                    _mm256_cmpeq_epi8(folded, close),
                )) << (32 * k);
            }
        }
        // Without the barrier LLVM rewrites the masks as vectors of single
        // bits and then takes them apart bit by bit (three times the
        // instructions of the SSE2 version).
        Block {
            quote: opaque(quote),
            backslash: opaque(backslash),
            bracket: opaque(bracket),
        }
    }

    #[cfg(not(target_arch = "x86_64"))]
    #[inline]
    fn of(b: &[u8; 64]) -> Block {
        Block::of_scalar(b)
    }

    /// Portable version of [`Block::of`].
    #[cfg_attr(target_arch = "x86_64", allow(dead_code))]
    fn of_scalar(b: &[u8; 64]) -> Block {
        let (mut quote, mut backslash, mut bracket) = (0u64, 0u64, 0u64);
        for (i, &c) in b.iter().enumerate() {
            quote |= ((c == b'"') as u64) << i;
            backslash |= ((c == b'\\') as u64) << i;
            bracket |= (matches!(c, b'{' | b'}' | b'[' | b']') as u64) << i;
        }
        Block {
            quote,
            backslash,
            bracket,
        }
    }

    /// The brackets that are not inside strings, updating `carry`; `xor`
    /// is [`prefix_xor`] or an equivalent.
    #[inline(always)]
    fn brackets_outside_strings(&self, carry: &mut Carry, xor: impl Fn(u64) -> u64) -> u64 {
        let escaped = if self.backslash | carry.escaped == 0 {
            0
        } else {
            escaped_bytes(self.backslash, &mut carry.escaped)
        };
        let quotes = self.quote & !escaped;
        let in_string = xor(quotes) ^ carry.in_string;
        carry.in_string = ((in_string as i64) >> 63) as u64;
        self.bracket & !in_string
    }
}

/// Bit i set if byte i follows an odd run of backslashes (is escaped).
/// `prev` is 1 if the block starts escaped, and is set for the next block.
/// (simdjson's branchless `find_escaped`.)
#[inline]
fn escaped_bytes(backslash: u64, prev: &mut u64) -> u64 {
    const EVEN: u64 = 0x5555_5555_5555_5555;
    let backslash = backslash & !*prev;
    let follows_escape = (backslash << 1) | *prev;
    let odd_starts = backslash & !EVEN & !follows_escape;
    let (even_starts, overflow) = odd_starts.overflowing_add(backslash);
    *prev = overflow as u64;
    let invert = even_starts << 1;
    (EVEN ^ invert) & follows_escape
}

/// Bit i is the xor of bits 0..=i: with quote bits, the inside of strings
/// (opening quote included, closing quote excluded).
#[inline]
fn prefix_xor(mut x: u64) -> u64 {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    x
}

/// [`prefix_xor`] as one carry-less multiply by all ones: bit i of the
/// product is the XOR of bits 0..=i of `x`.
///
/// # Safety
///
/// The CPU must support PCLMULQDQ.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "pclmulqdq")]
#[inline]
unsafe fn prefix_xor_clmul(x: u64) -> u64 {
    use std::arch::x86_64::*;
    // SAFETY: the caller checked for PCLMULQDQ; SSE2 is baseline.
    #[allow(unused_unsafe)]
    unsafe {
        let product = _mm_clmulepi64_si128(_mm_set_epi64x(0, x as i64), _mm_set1_epi8(-1), 0);
        _mm_cvtsi128_si64(product) as u64
    }
}

/// Index of the first byte at or after `i` that is neither JSON whitespace
/// nor a comma (`buf.len()` if none).
#[inline]
fn skip_ws_and_commas(buf: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\n' | b'\r' | b'\t' | b',') = buf.get(i) {
        i += 1;
    }
    i
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

/// The key of a top-level member, given with its quotes: its text, with
/// its escapes decoded (`"trace\u0045vents"` is `traceEvents`, as JSON
/// has it) on a slow path taken only for a key holding a backslash. A
/// key that is not UTF-8 is read lossily; one whose escapes are invalid
/// is kept as written (it names no member the reader reads).
fn member_key(quoted: &[u8]) -> String {
    let text = String::from_utf8_lossy(quoted);
    let raw = || text[1..text.len() - 1].to_owned();
    if !quoted.contains(&b'\\') {
        return raw();
    }
    let mut p = crate::parse::Parser::new(&text);
    match p.string() {
        Ok(key) if p.i == text.len() => key.into_owned(),
        _ => raw(),
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
        let text =
            r#"{"schemaVersion": 1, "traceEvents": [{"a": "x\\"}, {"b": [1, 2]}, "s"], "t": true}"#;
        let whole = split_all(text).unwrap();
        for cut in 0..text.len() {
            let mut s = Splitter::new();
            let mut out = Vec::new();
            let mut pos = 0;
            s.scan(&text.as_bytes()[..cut], &mut pos, false, &mut out)
                .unwrap();
            s.scan(text.as_bytes(), &mut pos, true, &mut out).unwrap();
            assert_eq!(out, whole, "cut at {cut}");
        }
    }

    /// Byte-at-a-time reference for [`Splitter::nested_end`]. Like the
    /// block scanner, it treats a quote after an odd run of backslashes as
    /// escaped even outside strings (invalid JSON either way, which the
    /// event parser reports).
    fn nested_end_reference(buf: &[u8], start: usize) -> Result<Option<usize>, usize> {
        let mut stack = Vec::new();
        let mut in_string = false;
        let mut after_escape = false;
        for (i, &c) in buf.iter().enumerate().skip(start) {
            let escaped = after_escape;
            after_escape = c == b'\\' && !escaped;
            if c == b'"' && !escaped {
                in_string = !in_string;
            } else if !in_string && matches!(c, b'{' | b'[' | b'}' | b']') {
                if c == b'{' || c == b'[' {
                    stack.push(c);
                    continue;
                }
                let want = if c == b'}' { b'{' } else { b'[' };
                if stack.pop() != Some(want) {
                    return Err(i);
                }
                if stack.is_empty() {
                    return Ok(Some(i + 1));
                }
            }
        }
        Ok(None)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        #[test]
        fn block_masks_match_scalar(bytes in proptest::collection::vec(
            proptest::sample::select(b"{}[]\\\"ab \n".to_vec()), 64)) {
            let b: &[u8; 64] = bytes.as_slice().try_into().unwrap();
            let (fast, slow) = (Block::of(b), Block::of_scalar(b));
            proptest::prop_assert_eq!(fast.quote, slow.quote);
            proptest::prop_assert_eq!(fast.backslash, slow.backslash);
            proptest::prop_assert_eq!(fast.bracket, slow.bracket);
            #[cfg(target_arch = "x86_64")]
            if std::is_x86_feature_detected!("avx2") {
                // SAFETY: AVX2 is there (checked just above).
                let wide = unsafe { Block::of_avx2(b) };
                proptest::prop_assert_eq!(wide.quote, slow.quote);
                proptest::prop_assert_eq!(wide.backslash, slow.backslash);
                proptest::prop_assert_eq!(wide.bracket, slow.bracket);
            }
        }

        #[test]
        fn nested_end_matches_reference(tail in proptest::collection::vec(
            proptest::sample::select(b"{}[]\\\"\\\"ab ".to_vec()), 0..400)) {
            let mut buf = b"{".to_vec();
            buf.extend_from_slice(&tail);
            let got = Splitter::new().nested_end(&buf, 0).map_err(|e| e.offset);
            proptest::prop_assert_eq!(&got, &nested_end_reference(&buf, 0));
            // The SSE2 path too, where `nested_end` took the AVX2 one.
            let sse2 = Splitter::new()
                .nested_end_with(&buf, 0, Block::at, prefix_xor)
                .map_err(|e| e.offset);
            proptest::prop_assert_eq!(sse2, got);
        }

        /// The carry-less multiply gives the portable prefix XOR.
        #[test]
        fn prefix_xor_clmul_matches_portable(x in proptest::prelude::any::<u64>()) {
            let want = (0..64).fold(0u64, |acc, i| {
                acc | (u64::from((x & ((2u128 << i) - 1) as u64).count_ones() % 2 == 1) << i)
            });
            proptest::prop_assert_eq!(prefix_xor(x), want);
            #[cfg(target_arch = "x86_64")]
            if std::is_x86_feature_detected!("pclmulqdq") {
                // SAFETY: PCLMULQDQ is there (checked just above).
                proptest::prop_assert_eq!(unsafe { prefix_xor_clmul(x) }, want);
            }
        }
    }

    /// What scanning `text` in two pieces (cut at `cut`) gives in `mode`:
    /// the items, where each scan stopped, the error, and the element
    /// count.
    type Scanned = (Vec<Item>, Vec<usize>, Option<ScanError>, u64);
    fn scan_in(mode: TestMode, text: &[u8], cut: usize) -> Scanned {
        let mut s = Splitter::new();
        s.test_mode = mode;
        let (mut out, mut stops, mut pos) = (Vec::new(), Vec::new(), 0);
        for (end, eof) in [(cut, false), (text.len(), true)] {
            let r = s.scan(&text[..end], &mut pos, eof, &mut out);
            stops.push(pos);
            if let Err(e) = r {
                return (out, stops, Some(e), s.events_seen);
            }
        }
        (out, stops, None, s.events_seen)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]

        /// Runs of objects (the AVX2 and the portable masks) split exactly
        /// as objects one at a time: the same items, stops, errors and
        /// offsets, for well-formed elements and any damage inside or
        /// between them, cut anywhere.
        #[test]
        fn object_runs_match_one_at_a_time(
            elements in proptest::collection::vec(
                (proptest::collection::vec(
                    proptest::sample::select(b"{}[]\\\"\"\"ab \n:1".to_vec()), 0..90),
                 proptest::collection::vec(proptest::sample::select(b" ,\n\t".to_vec()), 0..4),
                 proptest::prelude::any::<bool>()),
                0..12),
            tail in proptest::sample::select(vec![&b""[..], b"]", b"]}", b"1,", b"\"x\"", b"[{}]"]),
            cut in proptest::prelude::any::<proptest::sample::Index>(),
        ) {
            let mut text = br#"{"traceEvents": ["#.to_vec();
            for (inside, sep, closed) in &elements {
                text.push(b'{');
                text.extend_from_slice(inside);
                if *closed {
                    // A balanced element around the noise, most of the time.
                    text.extend_from_slice(b"\"k\": [1, {\"v\": \"}\"}]}");
                }
                text.extend_from_slice(sep);
            }
            text.extend_from_slice(tail);
            let cut = cut.index(text.len() + 1);
            let want = scan_in(TestMode::OneAtATime, &text, cut);
            proptest::prop_assert_eq!(&scan_in(TestMode::Runs, &text, cut), &want);
            proptest::prop_assert_eq!(&scan_in(TestMode::PortableRuns, &text, cut), &want);
        }
    }

    #[test]
    fn reports_mismatched_brackets() {
        let e = split_all(r#"{"traceEvents": [{"a": [1}]}"#).unwrap_err();
        assert_eq!(e.offset, 25);
    }
}
