//! Step 2 of discovery: what kind of work each task is.

use lumos_graph::{Graph, TaskId, TaskKind};
use rustc_hash::FxHashMap;

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
    let mut out: Vec<WorkClass> = g
        .tasks
        .iter()
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
        |test: fn(&str) -> bool| -> Vec<bool> { g.names.iter().map(|n| test(n)).collect() };
    let (attention, gemm_op, gemm_kernel) = (
        by_name(is_attention_kernel_name),
        by_name(is_gemm_op),
        by_name(is_gemm_kernel_name),
    );
    // GEMM kernels: grouped by the GEMM operator that launched them; the
    // one with a GEMM-library name (else the longest) is the product.
    let mut by_op: FxHashMap<u32, Vec<TaskId>> = FxHashMap::default();
    for (i, t) in g.tasks.iter().enumerate() {
        let id = TaskId(i as u32);
        if t.kind != TaskKind::Kernel || t.is_comm() {
            continue;
        }
        if attention[t.name.0 as usize] {
            let dims = g.scope_chain(id).find_map(|s| {
                let sc = &g.scopes[s.0 as usize];
                sc.input_dims.as_ref().and_then(attention_shape)
            });
            out[i] = WorkClass::Attention(dims);
            continue;
        }
        if let Some(s) = g.scope_chain(id).find(|&s| {
            let sc = &g.scopes[s.0 as usize];
            gemm_op[sc.name.0 as usize] && sc.input_dims.is_some()
        }) {
            by_op.entry(s.0).or_default().push(id);
        }
    }
    for (s, kernels) in by_op {
        let sc = &g.scopes[s as usize];
        let Some(shape) = sc
            .input_dims
            .as_ref()
            .and_then(|d| gemm_shape(&g.names[sc.name.0 as usize], d))
        else {
            continue;
        };
        let pick = kernels
            .iter()
            .copied()
            .filter(|&k| gemm_kernel[g.task(k).name.0 as usize])
            .max_by_key(|&k| g.task(k).duration_ns)
            .or_else(|| {
                kernels
                    .iter()
                    .copied()
                    .max_by_key(|&k| g.task(k).duration_ns)
            });
        if let Some(k) = pick {
            out[k.idx()] = WorkClass::Gemm(shape);
        }
    }
    out
}
