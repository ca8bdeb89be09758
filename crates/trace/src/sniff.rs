//! What a file is when it is not JSON: archives, other compressions, web
//! pages, binary data, recognised by their first bytes. Consulted only
//! after the JSON fails to start, so it costs nothing on traces.

/// How many leading bytes [`identify`] looks at (a tar header is 512).
pub(crate) const SNIFF_BYTES: usize = 512;

/// What the leading bytes `head` of a file that is not JSON are, and
/// what to do about it: `("a tar archive", "extract the trace first")`.
pub(crate) fn identify(head: &[u8]) -> Option<(&'static str, &'static str)> {
    const EXTRACT: &str = "extract the trace from it first";
    const NOT_KINETO: &str = "lumos reads PyTorch profiler (Kineto) JSON traces, plain or gzip";
    let magic: &[(&[u8], &str, &str)] = &[
        (b"PK\x03\x04", "a zip archive", EXTRACT),
        (b"PK\x05\x06", "an empty zip archive", EXTRACT),
        (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive", EXTRACT),
        (
            b"\x28\xb5\x2f\xfd",
            "zstd-compressed",
            "decompress it first (zstd -d)",
        ),
        (
            b"\xfd7zXZ\x00",
            "xz-compressed",
            "decompress it first (xz -d)",
        ),
        (b"BZh", "bzip2-compressed", "decompress it first (bunzip2)"),
        // Only seen inside gzip (a plain file of it is read as gzip): the
        // trace compressed twice. "binary data" did not say so.
        (
            b"\x1f\x8b\x08",
            "gzip-compressed again (compressed twice)",
            "decompress it once first (gunzip, then read the .gz left)",
        ),
        (
            b"\x04\x22\x4d\x18",
            "lz4-compressed",
            "decompress it first (lz4 -d)",
        ),
        (
            b"\xff\xfe",
            "UTF-16 text",
            "convert it to UTF-8 first (iconv -f UTF-16 -t UTF-8)",
        ),
        (
            b"\xfe\xff",
            "UTF-16 text",
            "convert it to UTF-8 first (iconv -f UTF-16 -t UTF-8)",
        ),
        // lumos-store's `MAGIC`: a compact graph reaches the trace reader
        // only through a pipe, where its bytes are not looked into first.
        (
            b"\x89LGRF\r\n\x1a",
            "a compact graph (.lgraph) read as a trace",
            "give its path (a compact graph is recognised in a file, not through a pipe)",
        ),
        (
            b"SQLite format 3\x00",
            "an SQLite database (an Nsight Systems export?)",
            NOT_KINETO,
        ),
    ];
    // Before the table: a UTF-32 little-endian mark starts as UTF-16's.
    if let Some(wide) = wide_text(head) {
        return Some(wide);
    }
    if let Some(&(_, what, advice)) = magic.iter().find(|(m, _, _)| head.starts_with(m)) {
        return Some((what, advice));
    }
    if head.get(257..262) == Some(b"ustar") {
        return Some(("a tar archive", EXTRACT));
    }
    // A pickle (PyTorch memory snapshots are) starts with PROTO 2 to 5.
    if head.len() > 2 && head[0] == 0x80 && (2..=5).contains(&head[1]) {
        return Some(("a Python pickle (a memory snapshot?)", NOT_KINETO));
    }
    if !head.is_empty() && head.iter().all(|&b| b == 0) {
        return Some((
            "zero-filled where the JSON should start",
            "the trace was never written out; profile again",
        ));
    }
    let text = head.trim_ascii_start();
    if text.first() == Some(&b'<') {
        let lower = text.to_ascii_lowercase();
        let html = lower.starts_with(b"<!doctype html") || lower.windows(5).any(|w| w == b"<html");
        return Some(if html {
            (
                "an HTML page",
                "a failed download or a login page? fetch the trace again",
            )
        } else {
            ("markup (XML?), not JSON", NOT_KINETO)
        });
    }
    if is_binary(head) {
        return Some(("binary data, not JSON", NOT_KINETO));
    }
    None
}

/// True if `head` holds control bytes other than whitespace, or bytes
/// that are not UTF-8 (an incomplete character at the very end aside).
fn is_binary(head: &[u8]) -> bool {
    if head
        .iter()
        .any(|&b| (b < 0x20 && !matches!(b, b'\n' | b'\r' | b'\t')) || b == 0x7f)
    {
        return true;
    }
    let mut chunks = head.utf8_chunks().peekable();
    while let Some(c) = chunks.next() {
        let last = chunks.peek().is_none();
        // The last chunk may end inside a character cut by SNIFF_BYTES.
        let cut_at_end = last && c.invalid().len() < 4;
        if !c.invalid().is_empty() && !cut_at_end {
            return true;
        }
    }
    false
}

/// Text in UTF-32, or in UTF-16 without a byte order mark (with one, the
/// table in [`identify`] names it): JSON's ASCII with zero bytes between,
/// as Windows tools and `iconv` write it. Told by where the zeros of the
/// first (up to) 64 bytes fall.
fn wide_text(head: &[u8]) -> Option<(&'static str, &'static str)> {
    if head.starts_with(b"\xff\xfe\x00\x00") || head.starts_with(b"\x00\x00\xfe\xff") {
        return Some((
            "UTF-32 text",
            "convert it to UTF-8 first (iconv -f UTF-32 -t UTF-8)",
        ));
    }
    let head = &head[..head.len().min(64) & !3];
    if head.len() < 4 {
        return None;
    }
    // Zero at these positions of every group of `width` bytes, and
    // nowhere else.
    let only_zeros_at = |width: usize, zero: &dyn Fn(usize) -> bool| {
        head.chunks(width)
            .all(|c| c.iter().enumerate().all(|(i, &b)| (b == 0) == zero(i)))
    };
    if only_zeros_at(4, &|i| i != 0) || only_zeros_at(4, &|i| i != 3) {
        return Some((
            "UTF-32 text",
            "convert it to UTF-8 first (iconv -f UTF-32 -t UTF-8)",
        ));
    }
    if only_zeros_at(2, &|i| i == 1) {
        return Some((
            "UTF-16 text (little-endian, no byte order mark)",
            "convert it to UTF-8 first (iconv -f UTF-16LE -t UTF-8)",
        ));
    }
    if only_zeros_at(2, &|i| i == 0) {
        return Some((
            "UTF-16 text (big-endian, no byte order mark)",
            "convert it to UTF-8 first (iconv -f UTF-16BE -t UTF-8)",
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_formats() {
        let mut tar = vec![0u8; 512];
        tar[..10].copy_from_slice(b"trace.json");
        tar[257..263].copy_from_slice(b"ustar\x00");
        let cases: &[(&[u8], &str)] = &[
            (&tar, "a tar archive"),
            (b"PK\x03\x04\x14\x00", "a zip archive"),
            (b"\x28\xb5\x2f\xfd\x04\x00", "zstd-compressed"),
            (b"\xfd7zXZ\x00\x00", "xz-compressed"),
            (b"BZh91AY&SY", "bzip2-compressed"),
            (b"\xff\xfe{\x00", "UTF-16 text"),
            (b"\xff\xfe\x00\x00{\x00\x00\x00", "UTF-32 text"),
            (b"{\x00\x00\x00\"\x00\x00\x00", "UTF-32 text"),
            (
                b"{\x00\"\x00t\x00r\x00",
                "UTF-16 text (little-endian, no byte order mark)",
            ),
            (
                b"\x00\n\x00{\x00\"\x00t",
                "UTF-16 text (big-endian, no byte order mark)",
            ),
            (b"  <!DOCTYPE html><html>", "an HTML page"),
            (b"<HTML><body>404", "an HTML page"),
            (b"<?xml version", "markup (XML?), not JSON"),
            (b"\x80\x04\x95", "a Python pickle (a memory snapshot?)"),
            (&[0; 100], "zero-filled where the JSON should start"),
            (b"\n\x0a\x08\x01\x12\x00", "binary data, not JSON"),
        ];
        for &(head, want) in cases {
            assert_eq!(identify(head).map(|(w, _)| w), Some(want), "{head:?}");
        }
    }

    #[test]
    fn text_that_is_merely_not_json_is_left_to_the_parser() {
        for head in [
            &b"hello"[..],
            b"traceEvents: []",
            b"caf\xc3\xa9 \xe6\xbc",
            b"",
        ] {
            assert_eq!(identify(head), None, "{head:?}");
        }
    }
}
