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

fn read(members: &str) -> lumos_trace::Trace {
    let text = format!(r#"{{"schemaVersion": 1, {members} "traceEvents": []}}"#);
    read_bytes(Path::new("h.json"), text.as_bytes()).unwrap()
}

/// Two spellings of the host in one file: the first read was kept
/// unless the second said something, and nothing was said. They are one
/// member written twice now: the last read, the other named as ignored
/// (as a repeated member is), an empty last included.
#[test]
fn two_spellings_of_the_host_keep_the_last_and_say_so() {
    let t = read(r#""hostname": "a", "hostName": "b","#);
    assert_eq!(t.meta.hostname.as_deref(), Some("b"));
    let said = |t: &lumos_trace::Trace| {
        let found: Vec<&String> = (t.warnings.iter())
            .filter(|w| w.contains("name one field"))
            .collect();
        assert_eq!(found.len(), 1, "{:?}", t.warnings);
        found[0].clone()
    };
    assert_eq!(
        said(&t),
        "top-level \"hostname\" and \"hostName\" name one field (the host the trace was \
         recorded on): the last, \"hostName\", is read and \"hostname\" ignored, as for a \
         member written twice"
    );
    // The last says nothing: no host, as for `"hostname"` written twice.
    let t = read(r#""host_name": "a", "hostname": "","#);
    assert_eq!(t.meta.hostname, None);
    assert!(said(&t).contains("the last, \"hostname\", is read and \"host_name\" ignored"));
    // Three members, two spellings: one warning naming the kept one.
    let t = read(r#""hostName": "a", "hostname": "b", "hostName": "c","#);
    assert_eq!(t.meta.hostname.as_deref(), Some("c"));
    assert!(said(&t).contains("the last, \"hostName\", is read and \"hostname\" ignored"));
    assert!(t
        .warnings
        .iter()
        .any(|w| w.contains("\"hostName\" appears twice")));
    // One spelling, once: nothing said.
    assert!(read(r#""hostName": "a","#).warnings.is_empty());
}
