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
//!
//! Outside the layers, where a pass shows them (the first stage's
//! embedding, the last stage's head), Megatron runs three more kinds,
//! placed when found and left out (and said so) when not, as they do not
//! decide whether the layers can be predicted:
//! - the vocabulary-parallel embedding all-reduces its output, `[tokens,
//!   h]`, in the forward (`_ReduceFromModelParallelRegion`, whose backward
//!   is the identity: the embedding's backward runs none without sequence
//!   parallelism). It is found as the lookup (`aten::embedding`) before the
//!   forward's first layer whose table has rows of `h` and the most of
//!   them (the word embedding's vocabulary, not the positions' sequence);
//! - the vocabulary-parallel cross entropy all-reduces three per-token
//!   FP32 statistics (the logits' maximum, the sum of their exponentials,
//!   the target's logit), `[tokens]` each, in the forward: placed after the
//!   output layer's GEMM (`[tokens, h] x [h, v]`, `v > h`, after the
//!   forward's last layer), which the loss follows, as three all-reduces
//!   back to back (the loss's own kernels between them are few and short);
//! - the output layer, column-parallel, all-reduces its input's gradient,
//!   `[tokens, h]`, as the layers' column-parallel projections do: after
//!   the input-gradient GEMM (`[tokens, v] x [v, h]`) before the
//!   backward's first layer, beside the weight gradient that follows.

use lumos_graph::{DepKind, Graph, TaskId};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::discover::{PassKind, PassStructure, Structure, WorkClass};
use crate::shapes::{element_size, sizes, tensor_bytes};

/// The all-reduces a tensor-parallel Megatron layer runs, per pass.
pub(crate) const PER_LAYER_PASS: usize = 2;

/// One GEMM after which tensor parallelism all-reduces the activations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TpSite {
    /// The CPU task that launched the GEMM's kernel: the all-reduce's
    /// launch follows it on its thread.
    pub launch: TaskId,
    /// Which of tensor parallelism's all-reduces it is.
    pub kind: SiteKind,
    /// Each all-reduce's size and number (`TpAllReduce`).
    pub reduce: TpAllReduce,
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

/// Where in the model a site is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SiteKind {
    /// After a layer's projection (forward or backward).
    Layer,
    /// After the vocabulary-parallel embedding's lookup (forward).
    Embedding,
    /// The vocabulary-parallel cross entropy's statistics, after the
    /// output layer's GEMM (forward).
    Loss,
    /// After the output layer's input gradient (backward).
    OutputLayer,
}

/// The all-reduces added at one site: `count` back to back, each of
/// `bytes` at the traced micro-batch and hidden size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TpAllReduce {
    /// Each one's bytes as traced: `tokens x h` elements of the
    /// activations' type, or `tokens` FP32 statistics (the loss's).
    pub bytes: u64,
    /// How many, back to back (the loss's three; else one).
    pub count: u32,
    /// Whether the bytes grow with the hidden size (activations) or with
    /// the tokens only (the loss's per-token statistics).
    pub wide: bool,
}

impl TpAllReduce {
    /// One all-reduce of `[tokens, hidden]` activations of `elem` bytes
    /// an element (2, BF16 or FP16, where the trace does not say).
    fn activations(tokens: u64, hidden: u64, elem: Option<u64>) -> TpAllReduce {
        TpAllReduce {
            bytes: tokens
                .saturating_mul(hidden)
                .saturating_mul(elem.unwrap_or(2)),
            count: 1,
            wide: true,
        }
    }
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
                        PassKind::Backward => next_on_stream(g, t, gemms.iter().map(|&(k, _)| k)),
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
                            kind: SiteKind::Layer,
                            reduce: TpAllReduce::activations(tokens, hidden, elem),
                            typed: elem.is_some(),
                            overlaps,
                        },
                    );
                }
            }
            if !pass.layers.is_empty() {
                out.extend(head_sites(g, s, pass, hidden, &launch_of, &wgrad));
            }
        }
    }
    if layers == 0 {
        return Err("no transformer layer was found in any pass".into());
    }
    Ok(out)
}

/// The sites outside the layers of `pass` (of graph `g` with structure
/// `s`, hidden size `hidden`): the embedding's and the loss's in a
/// forward, the output layer's in a backward, those it shows.
fn head_sites(
    g: &Graph,
    s: &Structure,
    pass: &PassStructure,
    hidden: u64,
    launch_of: &FxHashMap<TaskId, TaskId>,
    wgrad: &dyn Fn(TaskId) -> bool,
) -> Vec<(TaskId, TpSite)> {
    let kernels = |units: &[u32]| -> Vec<TaskId> {
        (units.iter())
            .flat_map(|&u| s.units.units[u as usize].gpu())
            .copied()
            .collect()
    };
    let gemm = |t: TaskId| match s.work[t.idx()] {
        WorkClass::Gemm(sh) => Some(sh),
        _ => None,
    };
    let site = |t: TaskId, kind, reduce, typed, overlaps| {
        let launch = *launch_of.get(&t)?;
        Some((
            t,
            TpSite {
                launch,
                kind,
                reduce,
                typed,
                overlaps,
            },
        ))
    };
    // The output layer's product: from the hidden size into a width no
    // layer's product has (the vocabulary); the widths are read from the
    // first layer, which holds no head where there are several.
    let widths: FxHashSet<u64> = (kernels(&pass.layers[0]).into_iter())
        .filter_map(|t| Some(gemm(t)?.n))
        .collect();
    let several = pass.layers.len() > 1;
    let loss_site = |kernels: &[TaskId]| {
        let t = (kernels.iter().copied()).find(|&t| {
            gemm(t).is_some_and(|sh| {
                sh.k == hidden && sh.n > hidden && !wgrad(t) && !(several && widths.contains(&sh.n))
            })
        })?;
        let tokens = gemm(t).map_or(0, |sh| sh.m);
        let reduce = TpAllReduce {
            bytes: tokens.saturating_mul(LOSS_STATISTIC_BYTES),
            count: LOSS_ALL_REDUCES,
            wide: false,
        };
        site(t, SiteKind::Loss, reduce, true, None)
    };
    let mut out = Vec::new();
    match pass.kind {
        PassKind::Forward => {
            if let Some((t, tokens, elem)) = embedding_lookup(g, &kernels(&pass.pre), hidden) {
                let reduce = TpAllReduce::activations(tokens, hidden, elem);
                out.extend(site(t, SiteKind::Embedding, reduce, elem.is_some(), None));
            }
            // The output layer, after the layers or in the last of them
            // (which the head's work can be counted into); with one layer,
            // only after it.
            let last = pass.layers.len() - 1;
            let tail = match last {
                0 => pass.post.clone(),
                _ => [&pass.layers[last][..], &pass.post[..]].concat(),
            };
            out.extend(loss_site(&kernels(&tail)));
        }
        PassKind::Backward => {
            let pre = kernels(&pass.pre);
            // The forward's head can be counted into the backward that
            // starts from its loss.
            out.extend(loss_site(&pre));
            // The output layer's input gradient: from the vocabulary (a
            // width no layer's input gradient comes from) into the hidden
            // size.
            let reduced: FxHashSet<u64> = (kernels(&pass.layers[0]).into_iter())
                .filter_map(|t| Some(gemm(t)?.k))
                .collect();
            let dgrad = (pre.iter().copied()).find(|&t| {
                gemm(t).is_some_and(|sh| {
                    sh.n == hidden
                        && sh.k > hidden
                        && !wgrad(t)
                        && !(several && reduced.contains(&sh.k))
                })
            });
            if let Some(t) = dgrad {
                let tokens = gemm(t).map_or(0, |sh| sh.m);
                let elem = element_bytes(g, t);
                let reduce = TpAllReduce::activations(tokens, hidden, elem);
                let overlaps =
                    next_on_stream(g, t, pre.iter().copied().filter(|&k| gemm(k).is_some()));
                out.extend(site(
                    t,
                    SiteKind::OutputLayer,
                    reduce,
                    elem.is_some(),
                    overlaps,
                ));
            }
        }
    }
    out
}

/// The vocabulary-parallel cross entropy's all-reduces: the logits'
/// maximum, the sum of their exponentials and the target's logit.
const LOSS_ALL_REDUCES: u32 = 3;

/// Each of the loss's statistics per token: FP32, as Megatron computes
/// the cross entropy on logits cast to FP32 (its default, without
/// `--fp16-lm-cross-entropy`).
const LOSS_STATISTIC_BYTES: u64 = 4;

/// Of `kernels` (a forward's before its first layer), the last kernel of
/// the word embedding's lookup: an `aten::embedding` whose recorded table
/// has rows of `hidden`, the one of the most rows where there are several
/// (a learned position embedding's table has the sequence's rows). With
/// it, the tokens looked up (the indices' elements) and the table's
/// element size where its type is recorded.
fn embedding_lookup(
    g: &Graph,
    kernels: &[TaskId],
    hidden: u64,
) -> Option<(TaskId, u64, Option<u64>)> {
    let mut best: Option<(u64, TaskId, u64, Option<u64>)> = None;
    for &t in kernels {
        let Some(sc) = (g.scope_chain(t))
            .find(|sc| g.names[g.scopes[sc.0 as usize].name.0 as usize] == "aten::embedding")
        else {
            continue;
        };
        let sc = &g.scopes[sc.0 as usize];
        let Some(dims) = sc.input_dims.as_ref() else {
            continue;
        };
        let (table, indices) = (sizes(dims, 0), sizes(dims, 1));
        if table.len() != 2 || table[1] as u64 != hidden || indices.is_empty() {
            continue;
        }
        let rows = table[0] as u64;
        let tokens = (indices.iter()).fold(1u64, |p, &x| p.saturating_mul(x as u64));
        let elem = element_size(sc.input_type.as_deref(), 0);
        // The lookup's last kernel: later ones of the same table win.
        if !matches!(best, Some((r, ..)) if rows < r) {
            best = Some((rows, t, tokens, elem));
        }
    }
    best.map(|(_, t, tokens, elem)| (t, tokens, elem))
}

/// The GEMM an input gradient `t`'s all-reduce overlaps: the first of
/// `gemms` (in their order, `t` among them) after `t` on its stream.
fn next_on_stream(g: &Graph, t: TaskId, gemms: impl Iterator<Item = TaskId>) -> Option<TaskId> {
    let stream = g.tasks[t.idx()].proc;
    gemms
        .skip_while(|&k| k != t)
        .skip(1)
        .find(|&k| g.tasks[k.idx()].proc == stream)
}

/// The element size of the first tensor input of the innermost operator
/// launching `t` that records its shape and type.
fn element_bytes(g: &Graph, t: TaskId) -> Option<u64> {
    g.scope_chain(t).find_map(|sc| {
        let sc = &g.scopes[sc.0 as usize];
        tensor_bytes(sc.input_dims.as_ref()?, sc.input_type.as_deref(), 0)?;
        element_size(sc.input_type.as_deref(), 0)
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
        let of = |kind| sites.values().filter(|x| x.kind == kind).count();
        assert_eq!(of(SiteKind::Layer), PER_LAYER_PASS * layers);
        // One stage holds the whole model: each forward has the embedding
        // and the loss, each backward the output layer.
        let passes = s.steps.iter().map(|st| st.passes.len()).sum::<usize>();
        assert_eq!(of(SiteKind::Embedding), passes / 2);
        assert_eq!(of(SiteKind::Loss), passes / 2);
        assert_eq!(of(SiteKind::OutputLayer), passes / 2);
        // The vocabulary: the output layer's width (its weight is the
        // word embedding's table).
        let vocab = (sites.iter())
            .filter(|(_, x)| x.kind == SiteKind::Loss)
            .find_map(|(k, _)| match s.work[k.idx()] {
                WorkClass::Gemm(sh) => Some(sh.n),
                _ => None,
            })
            .unwrap();
        for (&k, site) in &sites {
            if site.kind == SiteKind::Embedding {
                // The word embedding's lookup, not the positions'.
                let sc = g.scope_chain(k).find(|sc| {
                    g.names[g.scopes[sc.0 as usize].name.0 as usize] == "aten::embedding"
                });
                let dims = g.scopes[sc.unwrap().0 as usize].input_dims.as_ref();
                let table = sizes(dims.unwrap(), 0);
                assert_eq!((table[0] as u64, table[1] as u64), (vocab, h));
                assert_eq!(site.reduce.count, 1);
                continue;
            }
            let WorkClass::Gemm(sh) = s.work[k.idx()] else {
                panic!("a site that is no GEMM");
            };
            if site.kind == SiteKind::Loss {
                // Three FP32 statistics per token, not growing with h.
                assert_eq!(sh.k, h);
                assert!(sh.n > h);
                let r = site.reduce;
                assert_eq!((r.bytes, r.count, r.wide), (sh.m * 4, 3, false));
                continue;
            }
            // The activations the all-reduce carries: tokens x h, BF16.
            let r = site.reduce;
            assert_eq!(
                (r.bytes, r.count, r.wide, site.typed),
                (sh.m * h * 2, 1, true, true)
            );
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
        // Every backward site overlaps the weight gradient after it.
        let overlapping = sites.values().filter(|x| x.overlaps.is_some()).count();
        assert_eq!(
            overlapping,
            of(SiteKind::Layer) / 2 + of(SiteKind::OutputLayer)
        );
        // Without the hidden size, or with one no layer GEMM has, there is
        // nothing to place them by.
        assert!(tp_sites(g, s, 0)
            .unwrap_err()
            .contains("hidden size is not known"));
        assert!(tp_sites(g, s, h + 8).unwrap_err().contains("shows 0 GEMM"));
    }
}
