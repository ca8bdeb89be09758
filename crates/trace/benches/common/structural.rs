//! The `structural-index` reference: simdjson's two stages, cut down to
//! what bounds their speed on a trace. Stage one finds, 64 bytes at a
//! time with AVX2, every structural byte (`{ } [ ] : ,` outside strings),
//! every unescaped quote and the first byte of every other scalar, and
//! writes their positions to an index; stage two walks the index and
//! takes out of each event what the model reads (`ph`, `cat`, `name`,
//! `pid`, `tid`, `id`, `ts`, `dur`, and the ids in `args`).
//!
//! It is a bound, not a reader: it checks nothing (no UTF-8, no number
//! syntax, no grammar beyond the brackets it counts), builds no event,
//! interns no text and folds nothing. Its speed is what a reader of that
//! design could reach at most before doing the reader's work
//! (docs/PERFORMANCE.md, "Eleventh round"). Machines without AVX2 and
//! PCLMULQDQ run the same stages a byte at a time.

/// The bytes stage one scans at a time: a 1 MiB chunk's index fits the
/// L2 cache next to the chunk (about one position for every 3 bytes of a
/// Kineto trace).
const CHUNK: usize = 1 << 20;

/// Positions appended past a chunk's last: each points at a `}` in the
/// chunk's padding, so that a walk running off an unfinished element
/// stops there instead of leaving the index.
const SENTINELS: usize = 256;

/// What stage two took out of the events: sums, so that nothing it reads
/// can be left out by the compiler.
#[derive(Default, Debug, PartialEq, Eq)]
pub struct Taken {
    /// Events walked.
    pub events: u64,
    /// Sum of `ts` and `dur` in nanoseconds.
    pub times_ns: i64,
    /// Sum of the integer `pid`, `tid`, `id` and argument ids.
    pub ids: i64,
    /// Sum of the lengths of `ph`, `cat` and `name`.
    pub text_bytes: u64,
}

/// Walks the events of the `traceEvents` array of `text` (a whole plain
/// JSON trace) through a structural index; with `walk` false, only builds
/// the index (stage one alone) and counts its positions in
/// [`Taken::events`].
pub fn walk_trace(text: &[u8], walk: bool) -> Taken {
    let Some(key) = memchr::memmem::find(text, b"\"traceEvents\"") else {
        return Taken::default();
    };
    let Some(open) = memchr::memchr(b'[', &text[key..]) else {
        return Taken::default();
    };
    let mut taken = Taken::default();
    let mut chunk = vec![b' '; CHUNK + 128];
    let mut index = Vec::with_capacity(CHUNK / 2 + SENTINELS);
    let mut start = key + open + 1;
    let mut carry = Carry::default();
    while start < text.len() {
        let end = (start + CHUNK).min(text.len());
        let len = end - start;
        chunk[..len].copy_from_slice(&text[start..end]);
        let padded = len.div_ceil(64) * 64;
        chunk[len..padded + 64].fill(b' ');
        chunk[padded] = b'}';
        if !walk {
            // Stage one alone: the chunks one after another, its state
            // carried across them.
            index_structurals(&chunk[..padded], &mut index, &mut carry);
            taken.events += index.len() as u64;
            start = end;
            continue;
        }
        index_structurals(&chunk[..padded], &mut index, &mut Carry::default());
        index.extend(std::iter::repeat_n(padded as u32, SENTINELS));
        let walked = walk_elements(&chunk, &index, index.len() - SENTINELS, len, &mut taken);
        match walked {
            Walked::ArrayEnd => break,
            // An element cut by the chunk's end is walked again from its
            // start in the next chunk, where stage one starts outside any
            // string.
            Walked::Until(at) if end < text.len() => {
                assert!(at > 0, "an element longer than the 1 MiB chunk");
                start += at;
            }
            Walked::Until(_) => break,
        }
    }
    taken
}

/// Where a chunk's walk ended.
enum Walked {
    /// At the `]` closing the events.
    ArrayEnd,
    /// At the first element the chunk does not hold whole (its offset in
    /// the chunk), or at the chunk's end.
    Until(usize),
}

/// Walks the top-level elements of one chunk's index (`index[..n]` are
/// real positions, the rest sentinels) of `len` bytes.
fn walk_elements(b: &[u8], index: &[u32], n: usize, len: usize, taken: &mut Taken) -> Walked {
    let mut k = 0;
    while k < n {
        let at = index[k] as usize;
        match b[at] {
            b'{' => {
                let mut event = Taken::default();
                let next = walk_object(b, index, k, &mut event, true);
                if next > n {
                    return Walked::Until(at);
                }
                add(taken, &event);
                k = next;
            }
            b']' => return Walked::ArrayEnd,
            _ => k += 1,
        }
    }
    Walked::Until(len)
}

fn add(to: &mut Taken, e: &Taken) {
    to.events += e.events;
    to.times_ns = to.times_ns.wrapping_add(e.times_ns);
    to.ids = to.ids.wrapping_add(e.ids);
    to.text_bytes += e.text_bytes;
}

/// Walks the object whose `{` is `index[k]`, an event's (`event`) or its
/// `args`; returns the index after its `}`.
fn walk_object(b: &[u8], index: &[u32], mut k: usize, t: &mut Taken, event: bool) -> usize {
    k += 1;
    if b[index[k] as usize] == b'}' {
        return k + 1;
    }
    loop {
        // A key: its quotes, then the colon, then the value.
        // Past a chunk's end both quotes are sentinels: an empty key.
        let key = b
            .get(index[k] as usize + 1..index[k + 1] as usize)
            .unwrap_or(&[]);
        k += 3;
        let at = index[k] as usize;
        let scalar = !matches!(b[at], b'"' | b'{' | b'[');
        match (event, key) {
            (true, b"ts" | b"dur") if scalar => {
                t.times_ns = t.times_ns.wrapping_add(micros_as_ns(b, at));
                k += 1;
            }
            (true, b"pid" | b"tid" | b"id")
            | (false, b"External id" | b"correlation" | b"stream" | b"device")
                if scalar =>
            {
                t.ids = t.ids.wrapping_add(integer(b, at));
                k += 1;
            }
            (true, b"name" | b"cat" | b"ph") if b[at] == b'"' => {
                t.text_bytes += u64::from(index[k + 1] - index[k] - 1);
                k += 2;
            }
            (true, b"args") if b[at] == b'{' => k = walk_object(b, index, k, t, false),
            _ => k = skip_value(b, index, k),
        }
        let separator = b[index[k] as usize];
        k += 1;
        if separator != b',' {
            t.events += u64::from(event);
            return k;
        }
    }
}

/// The index after the value at `index[k]`.
fn skip_value(b: &[u8], index: &[u32], mut k: usize) -> usize {
    match b[index[k] as usize] {
        b'"' => k + 2,
        b'{' | b'[' => {
            let mut depth = 0u32;
            loop {
                match b[index[k] as usize] {
                    b'"' => k += 1,
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return k + 1;
                        }
                    }
                    _ => {}
                }
                k += 1;
            }
        }
        _ => k + 1,
    }
}

/// A time in microseconds with up to three decimals, in nanoseconds.
fn micros_as_ns(b: &[u8], mut i: usize) -> i64 {
    let mut v: i64 = 0;
    while b[i].is_ascii_digit() {
        v = v.wrapping_mul(10).wrapping_add(i64::from(b[i] - b'0'));
        i += 1;
    }
    v = v.wrapping_mul(1000);
    if b[i] == b'.' {
        i += 1;
        let mut scale = 100;
        while b[i].is_ascii_digit() {
            v = v.wrapping_add(i64::from(b[i] - b'0') * scale);
            scale /= 10;
            i += 1;
        }
    }
    v
}

fn integer(b: &[u8], mut i: usize) -> i64 {
    let negative = b[i] == b'-';
    i += usize::from(negative);
    let mut v: i64 = 0;
    while b[i].is_ascii_digit() {
        v = v.wrapping_mul(10).wrapping_add(i64::from(b[i] - b'0'));
        i += 1;
    }
    if negative {
        v.wrapping_neg()
    } else {
        v
    }
}

/// Stage one's state carried from one 64-byte block to the next.
#[derive(Default)]
pub struct Carry {
    /// The next block's first byte is escaped.
    escaped: u64,
    /// All ones when the block ended inside a string.
    in_string: u64,
    /// The block's last byte was part of a scalar.
    scalar: u64,
}

/// The masks of one 64-byte block: quotes, backslashes, structural bytes
/// (`{ } [ ] : ,`) and whitespace, one bit a byte.
struct Masks {
    quote: u64,
    backslash: u64,
    op: u64,
    space: u64,
}

/// Stage one over `block` with the given mask and prefix-XOR routines: a
/// macro, so that the x86 version's loop is compiled with AVX2 and its
/// intrinsics inlined (a generic function or closure would not be).
macro_rules! index_with {
    ($block:expr, $index:expr, $carry:expr, $masks:expr, $prefix_xor:expr) => {{
        let carry: &mut Carry = $carry;
        let index: &mut Vec<u32> = $index;
        // A position at most a byte, and 8 written past the last: room
        // for all of them once, so that each is one store.
        index.reserve($block.len() + 8);
        let mut out = index.as_mut_ptr();
        for (i, bytes) in $block.chunks_exact(64).enumerate() {
            let m = $masks(bytes);
            let escaped = escaped_bytes(m.backslash, &mut carry.escaped);
            let quote = m.quote & !escaped;
            let in_string = $prefix_xor(quote) ^ carry.in_string;
            carry.in_string = ((in_string as i64) >> 63) as u64;
            let op = m.op & !in_string;
            let scalar = !(op | m.space | quote | in_string);
            let starts = scalar & !((scalar << 1) | carry.scalar);
            carry.scalar = scalar >> 63;
            let mut bits = op | quote | starts;
            let base = (i * 64) as u32;
            let count = bits.count_ones() as usize;
            // simdjson's flattening: eight at a time without a test each.
            let mut written = 0;
            while written < count {
                for j in 0..8 {
                    // SAFETY: fewer positions than bytes so far plus 8,
                    // reserved above.
                    unsafe { out.add(written + j).write(base + bits.trailing_zeros()) };
                    bits &= bits.wrapping_sub(1);
                }
                written += 8;
            }
            // SAFETY: as above.
            out = unsafe { out.add(count) };
        }
        // SAFETY: every slot up to `out` was written.
        unsafe { index.set_len(out.offset_from(index.as_ptr()) as usize) };
    }};
}

/// Writes to `index` the positions of `block`'s structurals: the bytes
/// `{ } [ ] : ,` outside strings, every unescaped quote (both ends of a
/// string, so that stage two finds a string's end without a scan) and
/// the first byte of every other scalar. `block.len()` is a multiple of
/// 64.
fn index_structurals(block: &[u8], index: &mut Vec<u32>, carry: &mut Carry) {
    index.clear();
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("pclmulqdq") {
        // SAFETY: the features were just detected.
        return unsafe { x86::index_structurals(block, index, carry) };
    }
    index_with!(block, index, carry, masks_bytewise, prefix_xor_shifts);
}

/// The bytes escaped by a backslash (simdjson's odd-length runs of
/// backslashes); `carry` says the block's first byte is escaped.
#[inline(always)]
fn escaped_bytes(backslash: u64, carry: &mut u64) -> u64 {
    if backslash == 0 && *carry == 0 {
        return 0;
    }
    const EVEN: u64 = 0x5555_5555_5555_5555;
    let backslash = backslash & !*carry;
    let follows_escape = (backslash << 1) | *carry;
    let odd_starts = backslash & !EVEN & !follows_escape;
    let (sequences_on_even, overflow) = odd_starts.overflowing_add(backslash);
    *carry = u64::from(overflow);
    (EVEN ^ (sequences_on_even << 1)) & follows_escape
}

/// Bit `i` of the result is the parity of bits `0..=i` of `x`: set inside
/// strings (and on their opening quotes).
fn prefix_xor_shifts(mut x: u64) -> u64 {
    for shift in [1, 2, 4, 8, 16, 32] {
        x ^= x << shift;
    }
    x
}

fn masks_bytewise(bytes: &[u8]) -> Masks {
    let mut m = Masks {
        quote: 0,
        backslash: 0,
        op: 0,
        space: 0,
    };
    for (i, &c) in bytes.iter().enumerate() {
        let bit = 1u64 << i;
        match c {
            b'"' => m.quote |= bit,
            b'\\' => m.backslash |= bit,
            b'{' | b'}' | b'[' | b']' | b':' | b',' => m.op |= bit,
            b' ' | b'\n' | b'\r' | b'\t' => m.space |= bit,
            _ => {}
        }
    }
    m
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::{escaped_bytes, Carry, Masks};

    /// # Safety
    /// AVX2 and PCLMULQDQ must be available.
    #[target_feature(enable = "avx2,pclmulqdq")]
    pub unsafe fn index_structurals(block: &[u8], index: &mut Vec<u32>, carry: &mut Carry) {
        // SAFETY (both calls): this function has the features they need.
        index_with!(block, index, carry, |b| unsafe { masks(b) }, |x| unsafe {
            prefix_xor(x)
        });
    }

    #[target_feature(enable = "pclmulqdq")]
    #[inline]
    unsafe fn prefix_xor(x: u64) -> u64 {
        let product = _mm_clmulepi64_si128(_mm_set_epi64x(0, x as i64), _mm_set1_epi8(-1), 0);
        _mm_cvtsi128_si64(product) as u64
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn eq(v: __m256i, c: u8) -> __m256i {
        _mm256_cmpeq_epi8(v, _mm256_set1_epi8(c as i8))
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn bits(lo: __m256i, hi: __m256i) -> u64 {
        u64::from(_mm256_movemask_epi8(lo) as u32)
            | u64::from(_mm256_movemask_epi8(hi) as u32) << 32
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn op(v: __m256i) -> __m256i {
        // `{` and `[`, `}` and `]` differ only in bit 0x20.
        let folded = _mm256_or_si256(v, _mm256_set1_epi8(0x20));
        let brackets = _mm256_or_si256(eq(folded, b'{'), eq(folded, b'}'));
        _mm256_or_si256(brackets, _mm256_or_si256(eq(v, b','), eq(v, b':')))
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn space(v: __m256i) -> __m256i {
        let a = _mm256_or_si256(eq(v, b' '), eq(v, b'\n'));
        _mm256_or_si256(a, _mm256_or_si256(eq(v, b'\r'), eq(v, b'\t')))
    }

    /// # Safety
    /// AVX2 must be available.
    #[target_feature(enable = "avx2")]
    #[inline(never)]
    unsafe fn masks(bytes: &[u8]) -> Masks {
        assert!(bytes.len() >= 64);
        let p = bytes.as_ptr();
        // SAFETY: `bytes` has 64 readable bytes.
        let (lo, hi) = unsafe {
            (
                _mm256_loadu_si256(p as *const __m256i),
                _mm256_loadu_si256(p.add(32) as *const __m256i),
            )
        };
        Masks {
            quote: bits(eq(lo, b'"'), eq(hi, b'"')),
            backslash: bits(eq(lo, b'\\'), eq(hi, b'\\')),
            op: bits(op(lo), op(hi)),
            space: bits(space(lo), space(hi)),
        }
    }
}
