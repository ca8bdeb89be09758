//! Reads trace files given on the command line and prints, per file, the
//! events kept, the uncompressed size and the read speed. Meant for timing
//! and for measuring peak memory with `/usr/bin/time -v`.
//!
//! ```text
//! cargo run --release -p lumos-trace --example read_trace -- FILE...
//! cargo run --release -p lumos-trace --example read_trace -- --repeat N FILE...
//! cargo run --release -p lumos-trace --example read_trace -- --decompress IN.json.gz OUT.json
//! cargo run --release -p lumos-trace --example read_trace -- --concat N IN OUT.json
//! cargo run --release -p lumos-trace --example read_trace -- --inflate IN.json.gz
//! cargo run --release -p lumos-trace --example read_trace -- --reference PARSER N FILE...
//! ```
//!
//! `--repeat N` reads the files N times in one process (as a benchmark
//! does). `--decompress` writes the plain JSON of a gzip trace; `--concat N` writes a
//! plain JSON trace whose `traceEvents` are those of `IN` repeated `N` times
//! (a larger input to see how the reader scales). Neither output belongs in
//! the repository. `--inflate` only decompresses a gzip file, with the
//! inflate and block size the reader uses, and throws the bytes away: the
//! cost of decompression alone, to compare reading gzip with.
//! `--reference PARSER N` parses each plain file N times with a general
//! JSON parser (`serde_json-typed`, `sonic-rs-typed` or `sonic-rs-dom`, benches/common/
//! reference.rs), the file read into memory before the clock starts: what
//! the reader's speed is set against. `structural-index` and
//! `structural-index-stage1` are not parsers but the bound of a
//! structural-index design, and its first stage alone (benches/common/
//! structural.rs).
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

use std::io::{Read, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

#[path = "../benches/common/reference.rs"]
mod reference;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("--decompress") if args.len() == 3 => {
            let text = load(Path::new(&args[1]));
            std::fs::write(&args[2], text).expect("write output");
            ExitCode::SUCCESS
        }
        Some("--inflate") if args.len() == 2 => inflate_only(Path::new(&args[1])),
        Some("--reference") if args.len() >= 4 => {
            let repeat: usize = args[2]
                .parse()
                .expect("--reference PARSER N: N is a number");
            for _ in 0..repeat {
                args[3..]
                    .iter()
                    .for_each(|a| parse_one(&args[1], Path::new(a)));
            }
            ExitCode::SUCCESS
        }
        Some("--concat") if args.len() == 4 => {
            let n: usize = args[1].parse().expect("--concat N: N is a number");
            let text = load(Path::new(&args[2]));
            let out = std::fs::File::create(&args[3]).expect("create output");
            write_concat(&text, n, std::io::BufWriter::new(out)).expect("write output");
            ExitCode::SUCCESS
        }
        Some(_) => {
            let (repeat, files) = match args.first().map(String::as_str) {
                Some("--repeat") if args.len() >= 3 => (
                    args[1].parse().expect("--repeat N: N is a number"),
                    &args[2..],
                ),
                _ => (1, &args[..]),
            };
            let mut ok = true;
            for _ in 0..repeat {
                for a in files {
                    ok &= read_one(Path::new(a));
                }
            }
            if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        None => {
            eprintln!(
                "usage: read_trace [--repeat N] FILE... | --decompress IN OUT | --concat N IN OUT \
                 | --inflate IN | --reference PARSER N FILE..."
            );
            ExitCode::from(2)
        }
    }
}

fn read_one(path: &Path) -> bool {
    let start = Instant::now();
    match lumos_trace::read_path(path) {
        Ok(t) => {
            let secs = start.elapsed().as_secs_f64();
            println!(
                "{}: {} events ({} kept, {} flows, {} skipped), {:.1} MB JSON{}, {:.3} s, {:.0} MB/s",
                path.display(),
                t.events_total,
                t.events.len(),
                t.flows.len(),
                t.skipped.total(),
                t.json_bytes as f64 / 1e6,
                if t.gzipped { " (gzip)" } else { "" },
                secs,
                t.json_bytes as f64 / 1e6 / secs
            );
            true
        }
        Err(e) => {
            eprintln!("error: {e}");
            false
        }
    }
}

/// Parses the plain JSON file `path` with the reference parser `how`
/// and prints the time of the parse alone.
fn parse_one(how: &str, path: &Path) {
    let text = std::fs::read(path).expect("read input");
    let start = Instant::now();
    let events = reference::parse_reference(how, &text);
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{}: {how}: {events} events, {:.1} MB JSON, {secs:.3} s, {:.0} MB/s",
        path.display(),
        text.len() as f64 / 1e6,
        text.len() as f64 / 1e6 / secs
    );
}

/// Decompresses `path` as the reader does (flate2's zlib-rs inflate over a
/// 256 KB file buffer, 1 MB blocks), keeping nothing, and prints the time.
fn inflate_only(path: &Path) -> ExitCode {
    let start = Instant::now();
    let file = std::fs::File::open(path).expect("open input");
    let mut gz =
        flate2::bufread::MultiGzDecoder::new(std::io::BufReader::with_capacity(1 << 18, file));
    let mut block = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        match gz.read(&mut block) {
            Ok(0) => break,
            Ok(n) => total += n as u64,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{}: inflated {:.1} MB, {secs:.3} s, {:.0} MB/s",
        path.display(),
        total as f64 / 1e6,
        total as f64 / 1e6 / secs
    );
    ExitCode::SUCCESS
}

/// The whole uncompressed text of a trace (gzip detected by content).
fn load(path: &Path) -> Vec<u8> {
    let raw = std::fs::read(path).expect("read input");
    if raw.starts_with(&[0x1f, 0x8b]) {
        let mut text = Vec::new();
        flate2::read::MultiGzDecoder::new(&raw[..])
            .read_to_end(&mut text)
            .expect("decompress input");
        text
    } else {
        raw
    }
}

/// Writes `text` with the body of its `traceEvents` array repeated `n` times.
fn write_concat(text: &[u8], n: usize, mut out: impl Write) -> std::io::Result<()> {
    let key = b"\"traceEvents\"";
    let at = text
        .windows(key.len())
        .position(|w| w == key)
        .expect("input has traceEvents");
    let open = at + text[at..].iter().position(|&b| b == b'[').expect("[");
    let close = matching_bracket(text, open);
    let body = text[open + 1..close].trim_ascii();
    out.write_all(&text[..=open])?;
    for i in 0..n {
        if i > 0 {
            out.write_all(b",\n")?;
        }
        out.write_all(body)?;
    }
    out.write_all(&text[close..])?;
    out.flush()
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
