//! Gzip input, decompressed on a second thread that hands blocks to the
//! reader. Every member of a multi-member stream (`cat a.gz b.gz`, what
//! parallel compressors write) is read in turn. After the last, zero bytes
//! (block and tape padding, which zcat ignores) are skipped silently, and
//! anything else ends the data, counted, as gzip's "trailing garbage
//! ignored": the JSON that came before is checked in full either way.

use std::io::{self, BufRead, Read};
use std::sync::mpsc;

use flate2::bufread::GzDecoder;

/// Size of the blocks the decompression thread hands over.
const GZIP_BLOCK: usize = 1 << 20;

/// Decompressed blocks in flight between the threads.
pub(crate) const GZIP_BLOCKS_IN_FLIGHT: usize = 2;

/// What followed the last gzip member.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Tail {
    /// Zero bytes of padding, ignored.
    pub zero_bytes: u64,
    /// Other bytes (after any zeros), ignored with a warning.
    pub other_bytes: u64,
}

/// A block of decompressed bytes: the buffer and how much of it is filled.
pub(crate) type GzBlock = (Vec<u8>, usize);

/// The members of a gzip stream, one after another, as one byte stream.
struct Members<R> {
    /// The current member's decoder; `None` once the data has ended.
    decoder: Option<GzDecoder<R>>,
    tail: Tail,
}

impl<R: BufRead> Read for Members<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        loop {
            let Some(decoder) = self.decoder.as_mut() else {
                return Ok(0);
            };
            let n = decoder.read(out)?;
            if n > 0 || out.is_empty() {
                return Ok(n);
            }
            // The member ended (its CRC checked); the bufread decoder has
            // consumed exactly its bytes.
            let mut input = self.decoder.take().expect("checked above").into_inner();
            if next_member(&mut input, &mut self.tail)? {
                self.decoder = Some(GzDecoder::new(input));
            }
        }
    }
}

/// After a member: true if another one starts here. Otherwise consumes the
/// rest of `input`, counting it in `tail`.
fn next_member<R: BufRead>(input: &mut R, tail: &mut Tail) -> io::Result<bool> {
    let mut other = false;
    loop {
        let buf = match input.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Ok(false);
        }
        // Only the first byte may be buffered: the decoder checks the rest.
        let magic = buf[0] == 0x1f && matches!(buf.get(1), None | Some(0x8b));
        if !other && tail.zero_bytes == 0 && magic {
            return Ok(true);
        }
        let n = if other {
            buf.len()
        } else {
            buf.iter().take_while(|&&b| b == 0).count()
        };
        if n == 0 {
            other = true;
            continue;
        }
        if other {
            tail.other_bytes += n as u64;
        } else {
            tail.zero_bytes += n as u64;
        }
        input.consume(n);
    }
}

/// Decompresses `input` into blocks sent on `full`, reusing the buffers that
/// come back on `empty`. Stops at the end, after sending an error, or when
/// the reader hangs up; says what followed the gzip data.
pub(crate) fn inflate<R: BufRead>(
    input: R,
    full: mpsc::SyncSender<io::Result<GzBlock>>,
    empty: mpsc::Receiver<Vec<u8>>,
) -> Tail {
    let mut members = Members {
        decoder: Some(GzDecoder::new(input)),
        tail: Tail::default(),
    };
    loop {
        // Recycled buffers are already initialized: no zeroing per block.
        let mut block = empty.try_recv().unwrap_or_else(|_| vec![0; GZIP_BLOCK]);
        let mut n = 0;
        let mut error = None;
        while n < block.len() {
            match members.read(&mut block[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    error = Some(e);
                    break;
                }
            }
        }
        let end = n < block.len();
        if n > 0 && full.send(Ok((block, n))).is_err() {
            return members.tail;
        }
        if let Some(e) = error {
            let _ = full.send(Err(e));
            return members.tail;
        }
        if end {
            return members.tail;
        }
    }
}

/// Reads the blocks [`inflate`] sends.
pub(crate) struct BlockReader {
    full: mpsc::Receiver<io::Result<GzBlock>>,
    empty: mpsc::Sender<Vec<u8>>,
    block: GzBlock,
    pos: usize,
}

impl BlockReader {
    /// Reads what arrives on `full`, handing spent buffers back on `empty`.
    pub fn new(
        full: mpsc::Receiver<io::Result<GzBlock>>,
        empty: mpsc::Sender<Vec<u8>>,
    ) -> BlockReader {
        BlockReader {
            full,
            empty,
            block: (Vec::new(), 0),
            pos: 0,
        }
    }
}

impl Read for BlockReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.pos == self.block.1 {
            match self.full.recv() {
                Ok(Ok(block)) => {
                    let (old, _) = std::mem::replace(&mut self.block, block);
                    self.pos = 0;
                    if !old.is_empty() {
                        let _ = self.empty.send(old);
                    }
                }
                Ok(Err(e)) => return Err(e),
                // The thread finished: end of data.
                Err(_) => return Ok(0),
            }
        }
        let n = out.len().min(self.block.1 - self.pos);
        out[..n].copy_from_slice(&self.block.0[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gz(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn read_all(data: &[u8]) -> (io::Result<Vec<u8>>, Tail) {
        let mut m = Members {
            decoder: Some(GzDecoder::new(data)),
            tail: Tail::default(),
        };
        let mut out = Vec::new();
        let r = m.read_to_end(&mut out).map(|_| out);
        (r, m.tail)
    }

    #[test]
    fn members_padding_and_trailing_bytes() {
        let two = [gz(b"ab"), gz(b""), gz(b"cd")].concat();
        assert_eq!(read_all(&two).0.unwrap(), b"abcd");
        let mut padded = two.clone();
        padded.extend([0; 1000]);
        let (out, tail) = read_all(&padded);
        assert_eq!(out.unwrap(), b"abcd");
        assert_eq!(
            tail,
            Tail {
                zero_bytes: 1000,
                other_bytes: 0
            }
        );
        let mut junk = padded.clone();
        junk.extend(b"junk");
        let (out, tail) = read_all(&junk);
        assert_eq!(out.unwrap(), b"abcd");
        assert_eq!(
            tail,
            Tail {
                zero_bytes: 1000,
                other_bytes: 4
            }
        );
        // A member after the padding is not read (gzip stops there too).
        let mut late = padded.clone();
        late.extend(gz(b"ef"));
        assert_eq!(read_all(&late).0.unwrap(), b"abcd");
        // A damaged second header is an error, not trailing bytes.
        let mut bad = two.clone();
        bad.extend(b"\x1f\x8b\x09\x00");
        assert!(read_all(&bad).0.is_err());
    }
}
