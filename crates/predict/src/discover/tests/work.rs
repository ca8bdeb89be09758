//! Step 2: work classes.

use super::super::work::work_classes;
use super::*;

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
