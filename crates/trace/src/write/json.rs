//! JSON text primitives over a byte buffer: strings with escapes, integers,
//! Kineto times and floats. Everything the writer emits goes through these,
//! so the output is valid JSON whatever the names hold.

use std::io::Write as _;

use crate::parse::scan_plain;

/// Appends `s` as a JSON string, escaped the way serde_json does it: `"`,
/// `\` and control characters only (short forms where JSON has them, else
/// `\u00XX`); everything else, non-ASCII included, as is.
pub(crate) fn push_str(buf: &mut Vec<u8>, s: &str) {
    let b = s.as_bytes();
    buf.push(b'"');
    let mut i = 0;
    loop {
        let j = scan_plain(b, i);
        buf.extend_from_slice(&b[i..j]);
        let Some(&c) = b.get(j) else { break };
        push_escape(buf, c);
        i = j + 1;
    }
    buf.push(b'"');
}

#[cold]
fn push_escape(buf: &mut Vec<u8>, c: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    match c {
        b'"' => buf.extend_from_slice(b"\\\""),
        b'\\' => buf.extend_from_slice(b"\\\\"),
        b'\n' => buf.extend_from_slice(b"\\n"),
        b'\r' => buf.extend_from_slice(b"\\r"),
        b'\t' => buf.extend_from_slice(b"\\t"),
        0x08 => buf.extend_from_slice(b"\\b"),
        0x0c => buf.extend_from_slice(b"\\f"),
        _ => buf.extend_from_slice(&[
            b'\\',
            b'u',
            b'0',
            b'0',
            HEX[usize::from(c >> 4)],
            HEX[usize::from(c & 0xf)],
        ]),
    }
}

/// Appends `n` in decimal.
#[inline]
pub(crate) fn push_u64(buf: &mut Vec<u8>, mut n: u64) {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    buf.extend_from_slice(&tmp[i..]);
}

/// Appends `n` in decimal.
#[inline]
pub(crate) fn push_i64(buf: &mut Vec<u8>, n: i64) {
    if n < 0 {
        buf.push(b'-');
    }
    push_u64(buf, n.unsigned_abs());
}

/// Appends a time or duration of `ns` nanoseconds as Kineto writes it:
/// microseconds with exactly three decimals (`1234.567`), which the reader
/// turns back into the same integer.
#[inline]
pub(crate) fn push_us(buf: &mut Vec<u8>, ns: i64) {
    if ns < 0 {
        buf.push(b'-');
    }
    let ns = ns.unsigned_abs();
    push_u64(buf, ns / 1000);
    let frac = (ns % 1000) as u32;
    buf.extend_from_slice(&[
        b'.',
        b'0' + (frac / 100) as u8,
        b'0' + (frac / 10 % 10) as u8,
        b'0' + (frac % 10) as u8,
    ]);
}

/// Appends `v` in the shortest form that reads back to it (Rust's
/// `Display`, never an exponent); `null` for NaN and infinities, which
/// JSON cannot hold.
pub(crate) fn push_f64(buf: &mut Vec<u8>, v: f64) {
    if v.is_finite() {
        // Writing into a Vec cannot fail.
        let _ = write!(buf, "{v}");
    } else {
        buf.extend_from_slice(b"null");
    }
}

/// Appends `v` with exactly `decimals` digits after the point (`{:.N}`);
/// `null` for NaN and infinities.
pub(crate) fn push_fixed(buf: &mut Vec<u8>, v: f64, decimals: usize) {
    if v.is_finite() {
        let _ = write!(buf, "{v:.decimals$}");
    } else {
        buf.extend_from_slice(b"null");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(f: impl FnOnce(&mut Vec<u8>)) -> String {
        let mut b = Vec::new();
        f(&mut b);
        String::from_utf8(b).unwrap()
    }

    #[test]
    fn numbers() {
        assert_eq!(text(|b| push_i64(b, -42)), "-42");
        assert_eq!(text(|b| push_i64(b, i64::MIN)), "-9223372036854775808");
        assert_eq!(text(|b| push_u64(b, u64::MAX)), "18446744073709551615");
        assert_eq!(text(|b| push_us(b, 1_234_567)), "1234.567");
        assert_eq!(text(|b| push_us(b, 5)), "0.005");
        assert_eq!(text(|b| push_us(b, -1)), "-0.001");
        assert_eq!(text(|b| push_us(b, -12_000)), "-12.000");
        assert_eq!(text(|b| push_us(b, i64::MIN)), "-9223372036854775.808");
        assert_eq!(text(|b| push_f64(b, 12.5)), "12.5");
        assert_eq!(text(|b| push_f64(b, 3.0)), "3");
        assert_eq!(text(|b| push_f64(b, f64::NAN)), "null");
        assert_eq!(text(|b| push_fixed(b, 2.0 / 3.0, 6)), "0.666667");
        assert_eq!(text(|b| push_fixed(b, f64::INFINITY, 6)), "null");
    }

    #[test]
    fn strings_escape_like_serde_json() {
        let s = "a\"b\\c\n\t\r\u{8}\u{c}\u{1}\u{1f}\u{7f}é😀/ and a long plain tail of text";
        assert_eq!(text(|b| push_str(b, s)), serde_json::to_string(s).unwrap());
        assert_eq!(text(|b| push_str(b, "")), "\"\"");
    }
}
