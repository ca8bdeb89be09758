//! Per-host clock offsets end to end: the DLRM ranks written again naming
//! two hosts of four ranks each, replayed with `--json` and as text.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

mod common;

use std::path::PathBuf;

use common::{lumos, run_ok};
use lumos_testkit::TempDir;
use serde_json::Value;

/// The DLRM ranks as plain JSON files in `dir`, ranks 0-3 naming host
/// `a`, 4-7 host `b`; `None` when the corpus is absent.
fn named_hosts(dir: &TempDir) -> Option<PathBuf> {
    let corpus = lumos_testkit::corpus()?;
    for r in 0..8 {
        let path = corpus.path(&format!("multi-rank/dlrm-8xv100/rank{r}.json.gz"));
        let mut v: Value = serde_json::from_slice(&lumos_testkit::gunzip_file(&path)).unwrap();
        v["hostname"] = Value::from(if r < 4 { "a" } else { "b" });
        let out = dir.path().join(format!("rank{r}.json"));
        std::fs::write(out, serde_json::to_vec(&v).unwrap()).unwrap();
    }
    Some(dir.path().to_owned())
}

#[test]
fn ranks_naming_a_host_share_its_offset_in_the_job_report() {
    let dir = TempDir::new("cli-host-clocks");
    let Some(job) = named_hosts(&dir) else {
        return;
    };
    let out = run_ok(lumos().args(["replay", "--json"]).arg(&job));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let clock = &v["job"]["clock"];
    let hosts = clock["hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 2);
    assert_eq!(hosts[0]["host"], "a");
    assert_eq!(hosts[0]["ranks"], serde_json::json!([0, 1, 2, 3]));
    assert_eq!(hosts[0]["offset_us"].as_f64(), Some(0.0));
    assert_eq!(hosts[1]["collective_ends"].as_u64(), Some(32));
    let b = hosts[1]["offset_us"].as_f64().unwrap();
    assert!(b.abs() <= 2.0, "{b}");
    for o in clock["offsets"].as_array().unwrap() {
        let (rank, offset) = (
            o["rank"].as_u64().unwrap(),
            o["offset_us"].as_f64().unwrap(),
        );
        assert_eq!(offset, if rank < 4 { 0.0 } else { b }, "{o}");
    }
    for h in hosts {
        for r in h["residual_us"].as_array().unwrap() {
            assert!(r.as_f64().unwrap().abs() <= 10.0, "{h}");
        }
    }

    let text = lumos().arg("replay").arg(&job).output().unwrap();
    assert!(text.status.success());
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("host a (rank 0-3): one clock, offset +0.0 us from 0 collective ends"),
        "{text}"
    );
    assert!(
        text.contains("host b (rank 4-7): one clock, offset "),
        "{text}"
    );
}
