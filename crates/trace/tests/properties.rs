//! Properties over real corpus traces: hostile mutations never panic (and
//! read the same whatever the chunk size), and on valid traces the result
//! does not depend on where the reader's chunks end.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

use std::path::Path;
use std::sync::OnceLock;

use lumos_testkit::{gunzip_file, gzip};
use lumos_trace::{read_bytes, read_bytes_with_chunk, ReadError, Trace};
use proptest::prelude::*;

const SMALL: &str = "micro/a100-event-sync.json.gz";
const MEDIUM: &str = "single-rank/a100-alexnet-cuda-sync.json.gz";

/// The two inputs decompressed, read once; `None` when the corpus is absent.
fn inputs() -> Option<&'static (Vec<u8>, Vec<u8>)> {
    static TEXT: OnceLock<Option<(Vec<u8>, Vec<u8>)>> = OnceLock::new();
    TEXT.get_or_init(|| {
        let corpus = lumos_testkit::corpus()?;
        Some((
            gunzip_file(&corpus.path(SMALL)),
            gunzip_file(&corpus.path(MEDIUM)),
        ))
    })
    .as_ref()
}

/// Everything a read produces, in comparable form.
fn summary(r: &Result<Trace, ReadError>) -> String {
    match r {
        Err(e) => format!("error: {e}"),
        Ok(t) => format!(
            "{} {} {} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?}",
            t.json_bytes,
            t.gzipped,
            t.events_total,
            t.meta,
            t.strings,
            t.events,
            t.flows,
            t.track_names,
            t.skipped,
            t.warnings,
            t.path,
        ),
    }
}

/// One edit of the input; positions are fractions of its length.
#[derive(Debug, Clone)]
enum Mutation {
    Truncate(f64),
    Flip(f64, u8),
    Set(f64, u8),
    Insert(f64, Vec<u8>),
    Delete(f64, usize),
    Duplicate(f64, usize, f64),
}

/// Bytes that matter to JSON, and some that do not belong in it.
fn interesting_byte() -> impl Strategy<Value = u8> {
    prop_oneof![
        prop::sample::select(b"{}[]\",:\\0123456789-+.eEtfnul \n\t".to_vec()),
        any::<u8>(),
    ]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let at = 0.0..1.0f64;
    prop_oneof![
        at.clone().prop_map(Mutation::Truncate),
        (at.clone(), 1..=255u8).prop_map(|(a, m)| Mutation::Flip(a, m)),
        (at.clone(), interesting_byte()).prop_map(|(a, b)| Mutation::Set(a, b)),
        (at.clone(), prop::collection::vec(interesting_byte(), 1..8))
            .prop_map(|(a, b)| Mutation::Insert(a, b)),
        (at.clone(), 1..300usize).prop_map(|(a, n)| Mutation::Delete(a, n)),
        (at.clone(), 1..2000usize, at).prop_map(|(a, n, to)| Mutation::Duplicate(a, n, to)),
    ]
}

fn apply(data: &mut Vec<u8>, m: &Mutation) {
    let pos = |f: f64, len: usize| ((f * len as f64) as usize).min(len);
    let len = data.len();
    match *m {
        Mutation::Truncate(f) => data.truncate(pos(f, len)),
        Mutation::Flip(f, mask) if len > 0 => data[pos(f, len - 1)] ^= mask,
        Mutation::Set(f, b) if len > 0 => data[pos(f, len - 1)] = b,
        Mutation::Insert(f, ref bytes) => {
            let at = pos(f, len);
            data.splice(at..at, bytes.iter().copied());
        }
        Mutation::Delete(f, n) => {
            let at = pos(f, len);
            data.drain(at..(at + n).min(len));
        }
        Mutation::Duplicate(f, n, to) => {
            let at = pos(f, len);
            let slice = data[at..(at + n).min(len)].to_vec();
            let to = pos(to, len);
            data.splice(to..to, slice);
        }
        _ => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 200,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Mutated traces read as Ok or Err, never panic, and give the same
    /// answer (error message included) whatever the chunk size.
    #[test]
    fn mutated_traces_never_panic(
        medium_input in any::<bool>(),
        mutations in prop::collection::vec(mutation(), 1..6),
        chunk in prop::sample::select(vec![7usize, 64, 1000]),
    ) {
        let Some((small, medium)) = inputs() else {
            return Ok(());
        };
        let mut data = if medium_input { medium } else { small }.to_vec();
        for m in &mutations {
            apply(&mut data, m);
        }
        let path = Path::new("mutated.json");
        let whole = read_bytes(path, &data);
        let chunked = read_bytes_with_chunk(path, &data, chunk);
        prop_assert_eq!(summary(&whole), summary(&chunked));
    }

    /// Mutated gzip streams, and gzip streams of mutated JSON, never panic.
    #[test]
    fn mutated_gzip_never_panics(
        mutations in prop::collection::vec(mutation(), 1..4),
        mutate_compressed in any::<bool>(),
    ) {
        let Some((small, _)) = inputs() else {
            return Ok(());
        };
        let data = if mutate_compressed {
            let mut gz = gzip(small);
            for m in &mutations {
                apply(&mut gz, m);
            }
            gz
        } else {
            let mut text = small.to_vec();
            for m in &mutations {
                apply(&mut text, m);
            }
            gzip(&text)
        };
        let _ = read_bytes(Path::new("mutated.json.gz"), &data);
    }
}

/// On valid traces, chunks of 1, 7, 64 and 4096 bytes read exactly what the
/// default chunk does, from plain and gzip input.
#[test]
fn chunk_size_does_not_change_the_result() {
    let Some((small, medium)) = inputs() else {
        return;
    };
    for (rel, text) in [(SMALL, small), (MEDIUM, medium)] {
        let path = Path::new(rel);
        let want = read_bytes(path, text).unwrap();
        assert!(want.events.len() > 10, "{rel}");
        let want = summary(&Ok(want));
        let gz = gzip(text);
        for chunk in [1, 7, 64, 4096] {
            let got = read_bytes_with_chunk(path, text, chunk);
            assert!(summary(&got) == want, "{rel}: chunk {chunk} differs");
            let got = read_bytes_with_chunk(path, &gz, chunk).unwrap();
            assert!(got.gzipped);
            let mut got = Ok(got);
            if let Ok(t) = &mut got {
                t.gzipped = false;
            }
            assert!(summary(&got) == want, "{rel}: gzip, chunk {chunk} differs");
        }
    }
}
