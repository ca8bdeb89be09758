//! Where tensor parallelism would add its all-reduces to a layer traced at
//! TP 1 (Megatron's dense transformer layer, no sequence parallelism).
//!
//! A row-parallel linear layer (the attention's output projection, the
//! MLP's down projection) ends its forward with an all-reduce of its
//! output, `[tokens, h]`; a column-parallel one (the QKV projection, the
//! MLP's up projection) all-reduces its input's gradient, `[tokens, h]`,
//! after its data-gradient GEMM, asynchronously: Megatron computes the
//! weight gradient meanwhile and waits for the all-reduce after it. A TP 1
//! trace runs none of them, so the prediction adds one after each of those
//! GEMMs (`assemble/copy.rs`): the forward's on the GEMM's stream, the
//! backward's on a stream of its own beside the GEMM that follows.
//!
//! The GEMMs are told by their shapes against the hidden size `h`, as a
//! layer's place cannot be read from names: in a forward layer, the
//! products `[tokens, k] x [k, h]` (the two whose output is the hidden
//! width); in a backward layer, the input gradients `[tokens, k] x [k,
//! h]` with `k > h` (the QKV's `3h` or grouped-query width, the MLP's
//! `ffn` or gated `2 ffn`), not a weight gradient computed by a named
//! `wgrad` kernel of the same shape. Every layer of every pass must show
//! exactly two, or nothing is inserted and the prediction is refused: a
//! layer that shows more (separate Q, K and V projections, a recomputed
//! forward inside the backward) or fewer (no shapes recorded) is not the
//! layer this rule knows.

use lumos_graph::{DepKind, Graph, TaskId};
use rustc_hash::FxHashMap;

use crate::discover::{PassKind, Structure, WorkClass};
use crate::shapes::{sizes, tensor_bytes};

/// The all-reduces a tensor-parallel Megatron layer runs, per pass.
pub(crate) const PER_LAYER_PASS: usize = 2;

/// One GEMM after which tensor parallelism all-reduces the activations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TpSite {
    /// The CPU task that launched the GEMM's kernel: the all-reduce's
    /// launch follows it on its thread.
    pub launch: TaskId,
    /// The all-reduce's bytes at the traced micro-batch and hidden size:
    /// `tokens x h` elements of the GEMM's input type.
    pub bytes: u64,
    /// Whether the element size was read from the operator's recorded
    /// input type (else 2 bytes, BF16 or FP16, was assumed).
    pub typed: bool,
    /// In a backward layer: the GEMM after the input gradient on its
    /// stream (the weight gradient's), which the all-reduce overlaps, as
    /// Megatron's asynchronous all-reduce of the input gradient does; the
    /// stream waits for the all-reduce after it. `None` in a forward layer
    /// (the all-reduce blocks the stream) or where no GEMM follows.
    pub overlaps: Option<TaskId>,
}

/// Per GEMM kernel of a template: the all-reduce to add after it.
pub(crate) type TpSites = FxHashMap<TaskId, TpSite>;

/// The sites of graph `g` with structure `s` whose hidden size is
/// `hidden`: the all-reduces of every layer of every pass, or why they
/// cannot be placed.
pub(crate) fn tp_sites(g: &Graph, s: &Structure, hidden: u64) -> Result<TpSites, String> {
    if hidden == 0 {
        return Err("the hidden size is not known (no layer GEMM shapes found)".into());
    }
    let mut launch_of: FxHashMap<TaskId, TaskId> = FxHashMap::default();
    for e in g.edges.iter().filter(|e| e.kind == DepKind::Launch) {
        launch_of.entry(e.to).or_insert(e.from);
    }
    let wgrad = |t: TaskId| {
        g.name(t).to_ascii_lowercase().contains("wgrad")
            || g.scope_chain(t).any(|sc| {
                let name = &g.names[g.scopes[sc.0 as usize].name.0 as usize];
                name.to_ascii_lowercase().contains("wgrad")
            })
    };
    let mut out = TpSites::default();
    let mut layers = 0usize;
    for step in &s.steps {
        for pass in &step.passes {
            for layer in &pass.layers {
                layers += 1;
                let gemms: Vec<(TaskId, crate::shapes::GemmShape)> = (layer.iter())
                    .flat_map(|&u| s.units.units[u as usize].gpu())
                    .filter_map(|&t| match s.work[t.idx()] {
                        WorkClass::Gemm(sh) => Some((t, sh)),
                        _ => None,
                    })
                    .collect();
                // The tokens: the rows most of the layer's products have
                // (every forward product's and input gradient's; a weight
                // gradient computed as `[out, tokens] x [tokens, in]` has
                // its output width).
                let mut rows: FxHashMap<u64, usize> = FxHashMap::default();
                for (_, sh) in &gemms {
                    *rows.entry(sh.m).or_default() += 1;
                }
                let tokens = (rows.into_iter())
                    .max_by_key(|&(m, n)| (n, m))
                    .map_or(0, |(m, _)| m);
                let found: Vec<(TaskId, u64)> = (gemms.iter())
                    .filter(|&&(t, sh)| {
                        sh.m == tokens
                            && sh.n == hidden
                            && match pass.kind {
                                PassKind::Forward => true,
                                PassKind::Backward => sh.k > hidden && !wgrad(t),
                            }
                    })
                    .map(|&(t, sh)| (t, sh.m))
                    .collect();
                if found.len() != PER_LAYER_PASS {
                    let what = match pass.kind {
                        PassKind::Forward => "products with the hidden size as output width",
                        PassKind::Backward => {
                            "input gradients from a width above the hidden size into it"
                        }
                    };
                    return Err(format!(
                        "a {} layer (micro-batch {}) shows {} GEMM {what} (h {hidden}), where a \
                         Megatron dense layer shows {PER_LAYER_PASS} (the projections whose \
                         tensor-parallel all-reduces would follow them){}",
                        match pass.kind {
                            PassKind::Forward => "forward",
                            PassKind::Backward => "backward",
                        },
                        pass.microbatch + 1,
                        found.len(),
                        if gemms.is_empty() {
                            ": the trace records no GEMM shapes (record_shapes=True)"
                        } else {
                            ""
                        }
                    ));
                }
                for (t, tokens) in found {
                    let overlaps = match pass.kind {
                        PassKind::Forward => None,
                        PassKind::Backward => (gemms.iter())
                            .skip_while(|&&(k, _)| k != t)
                            .skip(1)
                            .map(|&(k, _)| k)
                            .find(|&k| g.tasks[k.idx()].proc == g.tasks[t.idx()].proc),
                    };
                    let Some(&launch) = launch_of.get(&t) else {
                        return Err(format!(
                            "the launch of GEMM kernel {:?} is not in the trace",
                            g.name(t)
                        ));
                    };
                    let elem = element_bytes(g, t);
                    out.insert(
                        t,
                        TpSite {
                            launch,
                            bytes: tokens
                                .saturating_mul(hidden)
                                .saturating_mul(elem.unwrap_or(2)),
                            typed: elem.is_some(),
                            overlaps,
                        },
                    );
                }
            }
        }
    }
    if layers == 0 {
        return Err("no transformer layer was found in any pass".into());
    }
    Ok(out)
}

/// The element size of the first tensor input of the innermost operator
/// launching `t` that records its shape and type.
fn element_bytes(g: &Graph, t: TaskId) -> Option<u64> {
    g.scope_chain(t).find_map(|sc| {
        let sc = &g.scopes[sc.0 as usize];
        let dims = sc.input_dims.as_ref()?;
        let bytes = tensor_bytes(dims, sc.input_type.as_deref(), 0)?;
        let n = sizes(dims, 0)
            .iter()
            .fold(1u64, |p, &x| p.saturating_mul(x as u64));
        (n > 0).then(|| bytes / n)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::baseline;

    #[test]
    fn two_sites_per_layer_and_pass_the_backward_s_beside_a_gemm() {
        // GPT tiny at TP 1, 2 micro-batches: hidden 1024, BF16.
        let base = baseline("gpt-tiny", None, [1, 1, 1, 2]);
        let (g, s, h) = (
            &base.inputs[0].graph,
            &base.structures[0],
            base.config.hidden,
        );
        let sites = tp_sites(g, s, h).unwrap();
        let layers: usize = (s.steps.iter().flat_map(|st| &st.passes))
            .map(|p| p.layers.len())
            .sum();
        assert!(layers > 0);
        assert_eq!(sites.len(), PER_LAYER_PASS * layers);
        for (&k, site) in &sites {
            let WorkClass::Gemm(sh) = s.work[k.idx()] else {
                panic!("a site that is no GEMM");
            };
            // The activations the all-reduce carries: tokens x h, BF16.
            assert_eq!((site.bytes, site.typed), (sh.m * h * 2, true));
            assert!(g
                .edges
                .iter()
                .any(|e| e.kind == DepKind::Launch && e.from == site.launch && e.to == k));
            // The backward's overlap the GEMM after it on its stream.
            if let Some(w) = site.overlaps {
                assert!(matches!(s.work[w.idx()], WorkClass::Gemm(_)));
                assert_eq!(g.tasks[w.idx()].proc, g.tasks[k.idx()].proc);
            }
        }
        let overlapping = sites.values().filter(|x| x.overlaps.is_some()).count();
        assert_eq!(2 * overlapping, sites.len());
        // Without the hidden size, or with one no layer GEMM has, there is
        // nothing to place them by.
        assert!(tp_sites(g, s, 0)
            .unwrap_err()
            .contains("hidden size is not known"));
        assert!(tp_sites(g, s, h + 8).unwrap_err().contains("shows 0 GEMM"));
    }
}
