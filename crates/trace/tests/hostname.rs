//! The host a trace names (`hostname`, `hostName` or `host_name`, a
//! top-level string member), which clock alignment shares among its ranks.

use std::path::Path;

use lumos_trace::read_bytes;

fn host(members: &str) -> Option<String> {
    let text = format!(r#"{{"schemaVersion": 1, {members} "traceEvents": []}}"#);
    read_bytes(Path::new("h.json"), text.as_bytes())
        .unwrap()
        .meta
        .hostname
}

#[test]
fn each_spelling_of_the_host_is_read() {
    assert_eq!(host(r#""hostname": "node3","#).as_deref(), Some("node3"));
    assert_eq!(
        host(r#""hostName": "gpu-a17","#).as_deref(),
        Some("gpu-a17")
    );
    assert_eq!(host(r#""host_name": " n1 ","#).as_deref(), Some("n1"));
    assert_eq!(host(""), None);
}

#[test]
fn a_host_that_says_nothing_is_none() {
    // Empty, or not a string: no host, so the rank keeps a clock of its own.
    assert_eq!(host(r#""hostname": "","#), None);
    assert_eq!(host(r#""hostname": 17,"#), None);
    assert_eq!(host(r#""hostname": {"a": 1},"#), None);
}
