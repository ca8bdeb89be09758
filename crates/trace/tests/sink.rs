//! `read_path_into`: a sink handed the kept events as the reader folds
//! them sees every event `read_path` keeps, in file order, with its names
//! already interned, and the trace it returns is `read_path`'s but for
//! the events and flows the sink took.

use std::path::{Path, PathBuf};

use lumos_testkit::{gunzip_file, TempDir};
use lumos_trace::{read_path, read_path_into, Event, EventSink, Flow, Ident, Trace};

/// Takes every event and flow (`keep: false`) or gives every one back,
/// checking that the strings each event refers to are interned when it
/// arrives.
struct Collect {
    keep: bool,
    taken: Vec<Event>,
    flows: Vec<Flow>,
}

impl EventSink for Collect {
    fn event(&mut self, event: Event, names: &[String]) -> Option<Event> {
        let interned = |id: Ident| match id {
            Ident::Num(_) => true,
            Ident::Name(s) => (s.0 as usize) < names.len(),
        };
        assert!((event.name.0 as usize) < names.len());
        assert!(interned(event.pid) && interned(event.tid));
        if self.keep {
            return Some(event);
        }
        self.taken.push(event);
        None
    }

    fn flow(&mut self, flow: Flow) -> Option<Flow> {
        if self.keep {
            return Some(flow);
        }
        self.flows.push(flow);
        None
    }
}

fn read_into(path: &Path, keep: bool) -> (Trace, Vec<Event>, Vec<Flow>) {
    let mut sink = Collect {
        keep,
        taken: Vec::new(),
        flows: Vec::new(),
    };
    let trace = read_path_into(path, &|_| {}, &mut sink).unwrap_or_else(|e| panic!("{e}"));
    (trace, sink.taken, sink.flows)
}

/// `read_path_into` against `read_path` on one file.
fn check_file(path: &Path) {
    let name = path.display();
    let want = read_path(path).unwrap_or_else(|e| panic!("{e}"));
    let (given_back, none, no_flows) = read_into(path, true);
    assert!(none.is_empty() && no_flows.is_empty());
    assert_eq!(format!("{given_back:?}"), format!("{want:?}"), "{name}");
    let (mut rest, taken, flows) = read_into(path, false);
    assert!(rest.events.is_empty() && rest.flows.is_empty(), "{name}");
    assert_eq!(
        taken, want.events,
        "{name}: the events taken, in file order"
    );
    assert_eq!(flows, want.flows, "{name}: the flows taken, in file order");
    rest.events = want.events.clone();
    rest.flows = want.flows.clone();
    assert_eq!(format!("{rest:?}"), format!("{want:?}"), "{name}");
}

#[test]
fn the_trace_read_into_a_sink_is_read_paths_on_corpus_traces_plain_and_gzip() {
    let Some(corpus) = lumos_testkit::corpus() else {
        return;
    };
    let files = corpus.traces("");
    assert!(!files.is_empty());
    for path in &files {
        check_file(path);
    }
    // A few as plain JSON too: the same fold, without the inflating thread.
    let dir = TempDir::new("sink");
    let plain: Vec<PathBuf> = files
        .iter()
        .filter(|p| {
            let n = p.to_string_lossy();
            n.contains("a100-stream-wait-event")
                || n.contains("v100-ddp-rank1of2")
                || n.contains("legacy")
                || n.contains("amd-vllm")
        })
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().replace(".gz", "");
            let out = dir.join(name);
            std::fs::write(&out, gunzip_file(p)).unwrap();
            out
        })
        .collect();
    assert_eq!(plain.len(), 4, "{plain:?}");
    for path in &plain {
        check_file(path);
    }
}

#[test]
fn a_file_that_cannot_be_read_gives_read_paths_error() {
    let dir = TempDir::new("sink-bad");
    let cases: [(&str, &[u8]); 3] = [
        ("truncated.json", br#"{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 1}"#),
        ("syntax.json", br#"{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 1}, {"ph": }]}"#),
        ("empty.json", b""),
    ];
    for (name, text) in cases {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        let want = read_path(&path).unwrap_err().to_string();
        let mut sink = Collect {
            keep: false,
            taken: Vec::new(),
            flows: Vec::new(),
        };
        let got = read_path_into(&path, &|_| {}, &mut sink)
            .unwrap_err()
            .to_string();
        assert_eq!(got, want, "{name}");
    }
    let missing = dir.join("missing.json");
    let mut sink = Collect {
        keep: true,
        taken: Vec::new(),
        flows: Vec::new(),
    };
    assert_eq!(
        read_path_into(&missing, &|_| {}, &mut sink)
            .unwrap_err()
            .to_string(),
        read_path(&missing).unwrap_err().to_string()
    );
}
