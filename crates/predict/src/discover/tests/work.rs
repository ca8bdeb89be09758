//! Step 2: work classes.

use super::super::work::work_classes;
use super::*;
use lumos_graph::{Scope, ScopeId};

#[test]
fn tasks_with_no_shapes_are_classed_by_kind() {
    let g = Graph {
        names: vec![
            "sm90_xmma_gemm_bf16".into(),
            "Memcpy HtoD".into(),
            "cudaLaunchKernel".into(),
            "flash_fwd_kernel".into(),
            "ncclKernel_AllReduce".into(),
        ],
        tasks: vec![
            task(TaskKind::Kernel, 0, None),
            task(TaskKind::Memcpy, 1, None),
            task(TaskKind::Runtime, 2, None),
            task(TaskKind::Kernel, 3, None),
            task(TaskKind::Kernel, 4, Some(0)),
        ],
        collectives: vec![collective("allreduce")],
        ..Graph::default()
    };
    // A GEMM kernel whose operator recorded no shape is only
    // memory-bound work; communication is classified later.
    assert_eq!(
        work_classes(&g),
        vec![
            WorkClass::Memory,
            WorkClass::Copy,
            WorkClass::Cpu,
            WorkClass::Attention(None),
            WorkClass::Memory,
        ]
    );
}

#[test]
fn gemm_and_attention_shapes_come_from_their_operators() {
    let (g, ..) = graph_of(&synth("gpt-tiny", 1, 1, 2, 2, 0));
    let w = work_classes(&g);
    let shapes: Vec<_> = w
        .iter()
        .filter_map(|x| match x {
            WorkClass::Gemm(s) => Some(*s),
            _ => None,
        })
        .collect();
    assert!(shapes.len() > 20, "{}", shapes.len());
    // Products over the tokens, of the hidden size and the FFN size.
    assert_eq!(mode(shapes.iter().map(|s| s.m)), Some(2048));
    let dims: Vec<u64> = shapes.iter().flat_map(|s| [s.n, s.k]).collect();
    assert_eq!(mode(dims.iter().copied()), Some(1024));
    assert!(dims.contains(&4096));
    assert!(w.iter().any(|x| matches!(x, WorkClass::Attention(Some(_)))));
    for (i, t) in g.tasks.iter().enumerate() {
        let id = TaskId(i as u32);
        match w[i] {
            WorkClass::Gemm(_) => assert_eq!(t.kind, TaskKind::Kernel),
            WorkClass::Attention(dims) => {
                assert!(g.name(id).contains("flash"), "{}", g.name(id));
                // 16 heads of 64, where the operator has a 4-D query.
                if let Some([_, seq, heads, hd]) = dims {
                    assert_eq!((seq, heads, hd), (2048, 16, 64));
                }
            }
            WorkClass::Copy => assert!(matches!(t.kind, TaskKind::Memcpy | TaskKind::Memset)),
            WorkClass::Cpu => assert!(!t.kind.is_gpu()),
            WorkClass::Memory => assert_eq!(t.kind, TaskKind::Kernel),
            WorkClass::Comm(_) => panic!("communication is classified later"),
        }
    }
}

/// Autocast's weight cast runs inside `aten::linear` under `aten::to`:
/// its kernel, longer than the GEMM's and named like no GEMM library's,
/// is the cast's, not a second sample of the linear's product.
#[test]
fn a_cast_inside_a_linear_is_not_its_gemm() {
    let scope = |name: u32, parent: Option<u32>, dims: &str| Scope {
        name: NameId(name),
        parent: parent.map(ScopeId),
        annotation: false,
        input_dims: lumos_trace::InputDims::parse(dims),
        input_type: None,
    };
    let mut cast = task(TaskKind::Kernel, 3, None);
    cast.duration_ns = 1_000;
    let g = Graph {
        names: vec![
            "aten::linear".into(),
            "aten::to".into(),
            "aten::addmm".into(),
            "unrolled_elementwise_kernel".into(),
            "Cijk_Alik_Bljk_BBS_BH".into(),
        ],
        tasks: vec![cast, task(TaskKind::Kernel, 4, None)],
        scopes: vec![
            scope(0, None, "[[8, 1024, 2048], [6144, 2048], [6144]]"),
            scope(1, Some(0), "[[6144, 2048], [], [], []]"),
            scope(2, Some(0), "[[6144], [8192, 2048], [2048, 6144], [], []]"),
        ],
        task_scopes: vec![Some(ScopeId(1)), Some(ScopeId(2))],
        ..Graph::default()
    };
    let w = work_classes(&g);
    assert_eq!(w[0], WorkClass::Memory);
    assert!(
        matches!(w[1], WorkClass::Gemm(s) if s.m == 8192),
        "{:?}",
        w[1]
    );
}
