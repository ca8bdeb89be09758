//! Step 2 of discovery: what kind of work each task is.

use lumos_graph::{Graph, ScopeId, TaskId, TaskKind};
use rayon::prelude::*;

use crate::shapes::{
    attention_shape, gemm_shape, is_attention_kernel_name, is_gemm_kernel_name, is_gemm_op,
    GemmShape,
};

/// What kind of work a task is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum WorkClass {
    /// A CPU task.
    Cpu,
    /// A matrix product with a known shape.
    Gemm(GemmShape),
    /// A fused attention kernel; `(batch, seq, heads, head_dim)` when
    /// recorded.
    Attention(Option<[u64; 4]>),
    /// Any other computing kernel (element-wise, normalization,
    /// reduction, optimizer): bound by memory bandwidth.
    Memory,
    /// A memory copy or set.
    Copy,
    /// Communication: index into
    /// [`Structure::comms`](super::Structure::comms).
    Comm(u32),
}

/// Work class of every task: GEMMs by their launching operator's shape,
/// attention and communication by name and arguments. Communication is
/// classified later, by [`super::comms`]; here it is memory-bound work.
pub(super) fn work_classes(g: &Graph) -> Vec<WorkClass> {
    let mut out: Vec<WorkClass> = (g.tasks.par_iter().with_min_len(PAR_MIN))
        .map(|t| match t.kind {
            TaskKind::Kernel => WorkClass::Memory,
            TaskKind::Memcpy | TaskKind::Memset => WorkClass::Copy,
            _ => WorkClass::Cpu,
        })
        .collect();
    // What each name is, worked out once per name rather than once per
    // task and scope visited (each test lowercases the name: on a 1 GB
    // trace that was a few million allocations).
    let by_name =
        |test: fn(&str) -> bool| -> Vec<bool> { g.names.par_iter().map(|n| test(n)).collect() };
    let (attention, gemm_op, gemm_kernel) = (
        by_name(is_attention_kernel_name),
        by_name(is_gemm_op),
        by_name(is_gemm_kernel_name),
    );
    // Each kernel's launching operator is found on its own (a walk up its
    // scopes), on every core, in task order.
    let found: Vec<(TaskId, Launcher)> = (g.tasks.par_iter().enumerate().with_min_len(PAR_MIN))
        .filter(|(_, t)| t.kind == TaskKind::Kernel && !t.is_comm())
        .filter_map(|(i, t)| {
            let id = TaskId(i as u32);
            let launcher = match attention[t.name.0 as usize] {
                true => Launcher::Attention(g.scope_chain(id).find_map(|s| {
                    let sc = &g.scopes[s.0 as usize];
                    let op = g.names[sc.name.0 as usize].as_str();
                    sc.input_dims.as_ref().and_then(|d| attention_shape(op, d))
                })),
                false => {
                    // A kernel another operator launched inside a GEMM op
                    // (autocast's weight cast, `aten::to` under
                    // `aten::linear`) is not the GEMM's: it took the
                    // GEMM's place when it ran longest.
                    let op = g
                        .scope_chain(id)
                        .find(|&s| !g.scopes[s.0 as usize].annotation)?;
                    if !gemm_op[g.scopes[op.0 as usize].name.0 as usize] {
                        return None;
                    }
                    Launcher::GemmOp(g.scope_chain(id).find(|&s| {
                        let sc = &g.scopes[s.0 as usize];
                        gemm_op[sc.name.0 as usize] && sc.input_dims.is_some()
                    })?)
                }
            };
            Some((id, launcher))
        })
        .collect();
    // GEMM kernels: grouped by the GEMM operator that launched them (in
    // task order within each); the one with a GEMM-library name (else the
    // longest) is the product.
    let mut by_op: Vec<(u32, TaskId)> = Vec::new();
    for (id, launcher) in found {
        match launcher {
            Launcher::Attention(dims) => out[id.idx()] = WorkClass::Attention(dims),
            Launcher::GemmOp(s) => by_op.push((s.0, id)),
        }
    }
    by_op.sort_by_key(|&(s, _)| s);
    for op in by_op.chunk_by(|a, b| a.0 == b.0) {
        let sc = &g.scopes[op[0].0 as usize];
        let Some(shape) = sc
            .input_dims
            .as_ref()
            .and_then(|d| gemm_shape(&g.names[sc.name.0 as usize], d))
        else {
            continue;
        };
        let kernels = op.iter().map(|&(_, k)| k);
        let pick = (kernels.clone())
            .filter(|&k| gemm_kernel[g.task(k).name.0 as usize])
            .max_by_key(|&k| g.task(k).duration_ns)
            .or_else(|| kernels.max_by_key(|&k| g.task(k).duration_ns));
        if let Some(k) = pick {
            out[k.idx()] = WorkClass::Gemm(shape);
        }
    }
    out
}

/// What launched a kernel, as far as its work class is concerned.
enum Launcher {
    /// An attention kernel (by its name), with the shape its scopes record.
    Attention(Option<[u64; 4]>),
    /// The innermost GEMM operator with recorded input dimensions.
    GemmOp(ScopeId),
}

/// The fewest tasks a core takes in the parallel passes: a small trace
/// stays on one thread.
const PAR_MIN: usize = 1 << 14;
