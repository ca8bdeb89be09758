//! The container: a fixed prefix, a table of sections, and the sections,
//! each with its length and checksum (docs/LGRAPH.md has the layout).
//!
//! Reading never trusts a length: a section must lie inside the file, so a
//! corrupt length field is an error, not a huge allocation, and a
//! truncated file is told apart from a damaged one.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;

use crate::error::{Problem, StoreError};

/// The first eight bytes of every `.lgraph` file. The high first byte and
/// the CR LF pair catch transfers that mangle binary files as text.
pub const MAGIC: [u8; 8] = *b"\x89LGRF\r\n\x1a";

/// The version of the format this build writes and reads (10: the rules
/// code of a launch that waited for a slot in a full launch queue, whose
/// graphs hold those waits; 9: the steps'
/// names in `HEAD`, which representatives compare; 8: the build's
/// count of stream waits satisfied at once in `GRPH`, whose graphs lack
/// the edges format 7 inferred for some of them; 7: the reader's
/// count of events that end absurdly late in `FACT`, the build's count of
/// launch calls without their GPU task in `GRPH`; 6: the records of 5,
/// whose graphs were built by rules since changed; 5: the trace's path
/// stored as its bytes, not as UTF-8 text; docs/LGRAPH.md).
pub const FORMAT_VERSION: u32 = 10;

/// Bytes of the fixed prefix: magic, format version, section count, the
/// writer's lumos version (NUL-padded), and the prefix's checksum.
const PREFIX_LEN: usize = 64;
const VERSION_FIELD: std::ops::Range<usize> = 16..48;
/// Bytes per entry of the table of sections.
const ENTRY_LEN: usize = 32;
/// More sections than any version writes: a larger count is corruption.
const MAX_SECTIONS: u32 = 64;

/// A section's four-byte tag.
pub(crate) type Tag = [u8; 4];

/// The summary, provenance and writer: what `read_summary` reads.
pub(crate) const HEAD: Tag = *b"HEAD";
/// Per communication task, what representatives need (`RankProgram`).
pub(crate) const PROG: Tag = *b"PROG";
/// What `lumos inspect` reports of the trace itself.
pub(crate) const FACT: Tag = *b"FACT";
/// The rank's graph, measured times, communication and build report.
pub(crate) const GRPH: Tag = *b"GRPH";

/// 64-bit checksum of `bytes`: eight bytes at a time, multiply and
/// rotate, then the length. It catches damage, not tampering.
pub(crate) fn checksum(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut h: u64 = 0x243f_6a88_85a3_08d3;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        h = (h ^ w).wrapping_mul(K).rotate_left(29);
    }
    for &b in chunks.remainder() {
        h = (h ^ u64::from(b)).wrapping_mul(K).rotate_left(29);
    }
    (h ^ bytes.len() as u64).wrapping_mul(K)
}

/// The checksum of the prefix (up to the checksum itself) and the table.
fn header_checksum(prefix: &[u8], table: &[u8]) -> u64 {
    let mut bytes = prefix[..56].to_vec();
    bytes.extend_from_slice(table);
    checksum(&bytes)
}

/// Writes a whole file: the prefix, the table, then `sections` in order.
/// Returns the bytes written.
pub(crate) fn write_file(w: &mut dyn Write, sections: &[(Tag, Vec<u8>)]) -> io::Result<u64> {
    let mut prefix = [0u8; PREFIX_LEN];
    prefix[..8].copy_from_slice(&MAGIC);
    prefix[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    prefix[12..16].copy_from_slice(&(sections.len() as u32).to_le_bytes());
    let version = env!("CARGO_PKG_VERSION").as_bytes();
    let n = version.len().min(VERSION_FIELD.len());
    prefix[VERSION_FIELD.start..VERSION_FIELD.start + n].copy_from_slice(&version[..n]);
    let mut table = Vec::with_capacity(ENTRY_LEN * sections.len());
    let mut offset = (PREFIX_LEN + ENTRY_LEN * sections.len()) as u64;
    for (tag, body) in sections {
        let mut e = [0u8; ENTRY_LEN];
        e[..4].copy_from_slice(tag);
        e[8..16].copy_from_slice(&offset.to_le_bytes());
        e[16..24].copy_from_slice(&(body.len() as u64).to_le_bytes());
        e[24..32].copy_from_slice(&checksum(body).to_le_bytes());
        table.extend_from_slice(&e);
        offset += body.len() as u64;
    }
    let sum = header_checksum(&prefix, &table);
    prefix[56..].copy_from_slice(&sum.to_le_bytes());
    w.write_all(&prefix)?;
    w.write_all(&table)?;
    for (_, body) in sections {
        w.write_all(body)?;
    }
    Ok(offset)
}

/// Where one section lies.
#[derive(Debug, Clone, Copy)]
struct Entry {
    tag: Tag,
    offset: u64,
    len: u64,
    sum: u64,
}

/// An open `.lgraph` file whose prefix and table have been checked.
pub(crate) struct Container<'p> {
    path: &'p Path,
    file: File,
    entries: Vec<Entry>,
}

impl<'p> Container<'p> {
    /// Opens `path` and checks its prefix, version and table.
    pub(crate) fn open(path: &'p Path) -> Result<Container<'p>, StoreError> {
        let err = |problem| StoreError::new(path, problem);
        let mut file = File::open(path).map_err(|e| err(Problem::Io(e)))?;
        let size = file.metadata().map_err(|e| err(Problem::Io(e)))?.len();
        let mut prefix = [0u8; PREFIX_LEN];
        let got = read_up_to(&mut file, &mut prefix).map_err(|e| err(Problem::Io(e)))?;
        if got < MAGIC.len() || prefix[..8] != MAGIC {
            return Err(err(Problem::NotLgraph));
        }
        if got < PREFIX_LEN {
            return Err(err(Problem::Truncated));
        }
        let u32_at =
            |i: usize| u32::from_le_bytes([prefix[i], prefix[i + 1], prefix[i + 2], prefix[i + 3]]);
        let version = u32_at(8);
        let writer = writer_version(&prefix);
        if version != FORMAT_VERSION {
            return Err(err(Problem::Version {
                found: version,
                writer,
            }));
        }
        let count = u32_at(12);
        if count > MAX_SECTIONS {
            return Err(err(Problem::Corrupt(format!(
                "{count} sections in the table"
            ))));
        }
        let mut table = vec![0u8; ENTRY_LEN * count as usize];
        read_exact_or(&mut file, &mut table, || Problem::Truncated).map_err(err)?;
        if u64::from_le_bytes(prefix[56..].try_into().unwrap_or_default())
            != header_checksum(&prefix, &table)
        {
            return Err(err(Problem::Corrupt(
                "the header's checksum does not match".into(),
            )));
        }
        let mut entries = Vec::with_capacity(count as usize);
        for e in table.chunks_exact(ENTRY_LEN) {
            let u64_at = |i: usize| u64::from_le_bytes(e[i..i + 8].try_into().unwrap_or_default());
            let entry = Entry {
                tag: [e[0], e[1], e[2], e[3]],
                offset: u64_at(8),
                len: u64_at(16),
                sum: u64_at(24),
            };
            match entry.offset.checked_add(entry.len) {
                Some(end) if end <= size => entries.push(entry),
                // The table is intact (its checksum matched), so the file
                // is shorter than it was written.
                Some(_) => return Err(err(Problem::Truncated)),
                _ => {
                    return Err(err(Problem::Corrupt(format!(
                        "section {} lies outside the file",
                        tag_name(&entry.tag)
                    ))))
                }
            }
        }
        check_layout(&entries, count, size).map_err(|e| err(Problem::Corrupt(e)))?;
        Ok(Container {
            path,
            file,
            entries,
        })
    }

    /// The bytes of section `tag`, checksum verified.
    pub(crate) fn section(&mut self, tag: Tag) -> Result<Vec<u8>, StoreError> {
        let err = |problem| StoreError::new(self.path, problem);
        let Some(e) = self.entries.iter().find(|e| e.tag == tag).copied() else {
            return Err(err(Problem::Corrupt(format!(
                "no {} section",
                tag_name(&tag)
            ))));
        };
        // The length was checked against the file's size on opening.
        let mut body = vec![0u8; e.len as usize];
        self.file
            .seek(SeekFrom::Start(e.offset))
            .map_err(|x| err(Problem::Io(x)))?;
        read_exact_or(&mut self.file, &mut body, || Problem::Truncated).map_err(err)?;
        if checksum(&body) != e.sum {
            return Err(err(Problem::Corrupt(format!(
                "section {} does not match its checksum",
                tag_name(&tag)
            ))));
        }
        Ok(body)
    }
}

/// Checks that the sections follow the table one after another, in table
/// order, and end where the file does, as [`write_file`] lays them out:
/// bytes nothing covers (appended to the file, or a second file joined to
/// it) are an error, not ignored.
fn check_layout(entries: &[Entry], count: u32, size: u64) -> Result<(), String> {
    let mut end = (PREFIX_LEN + ENTRY_LEN * count as usize) as u64;
    for e in entries {
        if e.offset != end {
            return Err(format!(
                "section {} does not start where the one before it ends",
                tag_name(&e.tag)
            ));
        }
        // Each entry lies inside the file (checked on reading the table).
        end = e.offset + e.len;
    }
    match size.checked_sub(end) {
        Some(0) | None => Ok(()),
        Some(extra) => Err(format!(
            "the file goes on past its last section ({extra} bytes: appended to it, or another \
             file joined to it)"
        )),
    }
}

/// Reads until `buf` is full or the file ends; returns the bytes read.
fn read_up_to(f: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

fn writer_version(prefix: &[u8]) -> String {
    let v = &prefix[VERSION_FIELD];
    let end = v.iter().position(|&b| b == 0).unwrap_or(v.len());
    String::from_utf8_lossy(&v[..end]).into_owned()
}

fn tag_name(tag: &Tag) -> String {
    String::from_utf8_lossy(tag).into_owned()
}

/// `read_exact`, with an end of file reported as `eof()`.
fn read_exact_or(
    f: &mut File,
    buf: &mut [u8],
    eof: impl FnOnce() -> Problem,
) -> Result<(), Problem> {
    f.read_exact(buf).map_err(|e| match e.kind() {
        io::ErrorKind::UnexpectedEof => eof(),
        _ => Problem::Io(e),
    })
}

/// True when `bytes` (a file's first bytes) start like an `.lgraph` file.
pub fn has_magic(bytes: &[u8]) -> bool {
    bytes.starts_with(&MAGIC)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(sections: &[(Tag, Vec<u8>)]) -> Vec<u8> {
        let mut bytes = Vec::new();
        write_file(&mut bytes, sections).unwrap();
        bytes
    }

    /// The message of opening `bytes` as a file, or "" where it opens.
    fn opened(bytes: &[u8]) -> String {
        let dir = lumos_testkit::TempDir::new("store-layout");
        let path = dir.join("rank.lgraph");
        std::fs::write(&path, bytes).unwrap();
        Container::open(&path)
            .err()
            .map_or_else(String::new, |e| e.to_string())
    }

    #[test]
    fn a_file_laid_out_as_written_opens() {
        let two = [(HEAD, vec![1, 2, 3]), (PROG, vec![4; 20])];
        assert_eq!(opened(&written(&two)), "");
        assert_eq!(opened(&written(&[])), "");
    }

    /// Bytes no section covers are not ignored: a file with something
    /// appended, or two files joined, is corrupt.
    #[test]
    fn bytes_past_the_last_section_are_an_error() {
        let one = written(&[(HEAD, vec![1, 2, 3])]);
        let mut appended = one.clone();
        appended.push(b'\n');
        let m = opened(&appended);
        assert!(m.contains("goes on past its last section (1 bytes"), "{m}");
        let joined = [one.clone(), one].concat();
        assert!(opened(&joined).contains("past its last section"));
    }

    /// A table whose checksum is right but whose sections overlap, or
    /// leave a gap, is not one [`write_file`] lays out.
    #[test]
    fn sections_out_of_place_are_an_error() {
        let mut bytes = written(&[(HEAD, vec![1, 2, 3]), (PROG, vec![4, 5])]);
        // The second entry's offset, one byte early: it overlaps the first.
        let at = PREFIX_LEN + ENTRY_LEN + 8;
        let offset = u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) - 1;
        bytes[at..at + 8].copy_from_slice(&offset.to_le_bytes());
        let table_end = PREFIX_LEN + 2 * ENTRY_LEN;
        let sum = header_checksum(&bytes[..PREFIX_LEN], &bytes[PREFIX_LEN..table_end]);
        bytes[56..64].copy_from_slice(&sum.to_le_bytes());
        let m = opened(&bytes);
        assert!(
            m.contains("section PROG does not start where the one before it ends"),
            "{m}"
        );
    }
}
