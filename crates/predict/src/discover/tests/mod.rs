//! Tests of each discovery step, on small units built here or on the
//! synthesizer's traces, whose structure is known: gpt-tiny has hidden
//! size 1024, FFN 4096, 16 heads, sequences of 2048 tokens, and runs each
//! stage's passes in the 1F1B order.

mod comms;
mod config;
mod layers;
mod passes;
mod report;
mod work;

use lumos_graph::{
    Collective, Graph, NameId, ProcId, ProcKind, Processor, ScopeId, Task, TaskId, TaskKind,
};

use super::*;
use crate::testutil::{discovered, graph_of, synth, synth_layers};
use crate::units::Unit;

/// A unit on `thread` with token `token` that launched `gpu` (task ids
/// `gpu[..]`) and ran the CPU tasks `cpu`, inside an operator.
fn unit(thread: u32, token: u32, cpu: &[u32], gpu: &[u32]) -> Unit {
    Unit {
        thread: ProcId(thread),
        tasks: cpu.iter().chain(gpu).map(|&t| TaskId(t)).collect(),
        cpu_len: cpu.len(),
        token,
        scope: Some(ScopeId(0)),
        start_ns: 0,
        end_ns: 0,
    }
}

fn units(us: Vec<Unit>, tokens: &[&str]) -> Units {
    Units {
        unit_of: Vec::new(),
        units: us,
        tokens: tokens.iter().map(|t| t.to_string()).collect(),
        inconsistency: None,
    }
}

fn pass(kind: PassKind, microbatch: u32) -> PassStructure {
    PassStructure {
        kind,
        microbatch,
        chunk: 0,
        pre: Vec::new(),
        layers: Vec::new(),
        post: Vec::new(),
    }
}

fn task(kind: TaskKind, name: u32, collective: Option<u32>) -> Task {
    Task {
        kind,
        name: NameId(name),
        proc: ProcId(0),
        duration_ns: 10,
        release_ns: 0,
        collective,
        correlation: 0,
    }
}

fn collective(name: &str) -> Collective {
    Collective {
        name: name.into(),
        process_group: None,
        seq: None,
        bytes: None,
        elements: None,
        group_size: None,
    }
}
