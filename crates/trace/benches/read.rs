//! Reader throughput on the largest corpus trace
//! (`single-rank/v100-ddp-rank1of2-allreduce.json.gz`, 54 MB of JSON), from
//! gzip and from plain JSON, on a rayon pool of 1 and of 2 threads, plus a
//! plain JSON three times as large to see how the time grows with size,
//! and decompressing the gzip file alone (`inflate/gzip`: the same inflate
//! and block size as the reader, bytes thrown away), what reading gzip is
//! compared with. `plain-with-stack` is a trace recorded with
//! `with_stack=True` (`single-rank/b200-vllm-tp8-rank0.json.gz`, 14 MB of
//! JSON, 62% `python_function` events, which the reader does not parse
//! past their category). Throughput is in uncompressed JSON bytes.
//!
//! `reference/*` parses the same plain files with general JSON parsers
//! (benches/common/reference.rs), so that the reader's speed can be set
//! against what a JSON library reaches on the same machine in the same
//! run. They parse the file's bytes already in memory, so their time leaves
//! out the read that the reader's includes: a bound in their favour.
//!
//! The plain inputs are written to the temp dir when the bench starts and
//! removed when it ends. Run with
//! `cargo bench -p lumos-trace --bench read` (add `-- --quick` for a fast
//! pass). See docs/PERFORMANCE.md.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput};
use lumos_testkit::{gunzip_file, TempDir};

#[path = "common/reference.rs"]
mod reference;
use reference::parse_reference;

const TRACE: &str = "single-rank/v100-ddp-rank1of2-allreduce.json.gz";
const WITH_STACK: &str = "single-rank/b200-vllm-tp8-rank0.json.gz";

/// Writes `path` through a buffered writer.
fn write_file(path: &Path, write: impl FnOnce(&mut dyn Write)) {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    write(&mut out);
    out.flush().unwrap();
}

/// `text` with the body of its `traceEvents` array written `n` times.
fn repeat_events(text: &[u8], n: usize, out: &mut dyn Write) {
    let key = b"\"traceEvents\"";
    let at = text.windows(key.len()).position(|w| w == key).unwrap();
    let open = at + text[at..].iter().position(|&b| b == b'[').unwrap();
    let close = matching_bracket(text, open);
    let body = text[open + 1..close].trim_ascii();
    out.write_all(&text[..=open]).unwrap();
    for i in 0..n {
        if i > 0 {
            out.write_all(b",\n").unwrap();
        }
        out.write_all(body).unwrap();
    }
    out.write_all(&text[close..]).unwrap();
}

/// Index of the `]` closing the `[` at `open`, skipping strings.
fn matching_bracket(text: &[u8], open: usize) -> usize {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (i, &c) in text.iter().enumerate().skip(open) {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => in_string = true,
            b'[' | b'{' => depth += 1,
            b']' | b'}' => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
    }
    panic!("unbalanced traceEvents array");
}

/// Decompresses `path` as the reader does (flate2's inflate over a 256 KB
/// file buffer, into 1 MB blocks) and returns the uncompressed size.
fn inflate_only(path: &Path) -> u64 {
    let file = std::io::BufReader::with_capacity(1 << 18, std::fs::File::open(path).unwrap());
    let mut gz = flate2::bufread::MultiGzDecoder::new(file);
    let mut block = vec![0u8; 1 << 20];
    let mut total = 0;
    loop {
        match gz.read(&mut block).unwrap() {
            0 => return total,
            n => total += n as u64,
        }
    }
}

fn main() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let gz_path = corpus.path(TRACE);
    let text = gunzip_file(&gz_path);
    let tmp = TempDir::new("bench-read");
    let plain = tmp.join("v100.json");
    write_file(&plain, |out| out.write_all(&text).unwrap());
    let triple = tmp.join("v100x3.json");
    write_file(&triple, |out| repeat_events(&text, 3, out));
    let triple_len = std::fs::metadata(&triple).unwrap().len();
    let stack_text = gunzip_file(&corpus.path(WITH_STACK));
    let with_stack = tmp.join("with-stack.json");
    write_file(&with_stack, |out| out.write_all(&stack_text).unwrap());
    let events = lumos_trace::read_path(&gz_path).unwrap().events_total;
    assert_eq!(
        lumos_trace::read_path(&triple).unwrap().events_total,
        3 * events,
        "the tripled trace must hold every event three times"
    );

    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .configure_from_args();
    let inputs = [
        ("gzip", &gz_path, text.len() as u64),
        ("plain", &plain, text.len() as u64),
        ("plain-x3", &triple, triple_len),
        ("plain-with-stack", &with_stack, stack_text.len() as u64),
    ];
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let mut group = c.benchmark_group(format!("read/{threads}-thread"));
        for (name, path, bytes) in &inputs {
            group.throughput(Throughput::Bytes(*bytes));
            group.bench_with_input(BenchmarkId::from_parameter(name), path, |b, path| {
                // One trace alive at a time, dropped outside the timing.
                b.iter_batched(
                    || (),
                    |()| pool.install(|| lumos_trace::read_path(path).unwrap()),
                    BatchSize::PerIteration,
                )
            });
        }
        group.finish();
    }
    let mut group = c.benchmark_group("reference");
    for how in reference::PARSERS {
        // The plain inputs but the tripled one, whose time only grows.
        for (name, path, bytes) in [&inputs[1], &inputs[3]] {
            let expected = lumos_trace::read_path(path).unwrap().events_total;
            let text = std::fs::read(path).unwrap();
            if reference::counts_events(how) {
                assert_eq!(
                    parse_reference(how, &text) as u64,
                    expected,
                    "{how} on {name}"
                );
            }
            group.throughput(Throughput::Bytes(*bytes));
            // The file already in memory: the reference's time is its parse
            // alone, where the reader's includes reading the file.
            group.bench_with_input(BenchmarkId::new(how, name), &text, |b, text| {
                b.iter(|| parse_reference(how, text))
            });
        }
    }
    group.finish();
    let mut group = c.benchmark_group("inflate");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.bench_function("gzip", |b| b.iter(|| inflate_only(&gz_path)));
    group.finish();
    c.final_summary();
}
