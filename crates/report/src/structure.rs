//! What structure discovery found, as reports show it: serializable
//! mirrors of lumos-predict's [`StructureReport`](lumos_predict::StructureReport)
//! and its parts, converted by hand so that the predictor's types need not
//! know about output formats. Enumerations become their stable names.

use std::collections::BTreeMap;

use lumos_predict as lp;
use serde::Serialize;

/// The discovery report of one trace (`structure` in `lumos inspect --json`
/// and in each input of `lumos predict --json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StructureReport {
    /// `first`, `middle`, `last` or `only` stage of the pipeline, or
    /// `unknown`.
    pub stage_role: String,
    /// Steps looked at.
    pub steps: usize,
    /// Pass order of the first step (`F1 F2 B1 ...`).
    pub pass_order: String,
    /// Whether that order is the 1F1B order of the discovered stage.
    pub one_f_one_b: Option<bool>,
    /// Layers per pass.
    pub layers_per_pass: Option<u32>,
    /// How layers were found: `annotation`, `scope_pattern`,
    /// `other_stage`, `kernel_pattern` or `none`.
    pub layer_method: &'static str,
    /// The repeated block (forward), as unit tokens.
    pub layer_block: Vec<String>,
    /// Measured time per phase, summed over steps and divided by steps, ms.
    pub phases: BTreeMap<String, PhaseTime>,
    /// Parallel groups.
    pub groups: Vec<GroupReport>,
    /// The configuration.
    pub config: DiscoveredConfig,
    /// Every finding with its confidence.
    pub findings: Vec<Finding>,
    /// `None` when the graph can be edited structurally (layers,
    /// micro-batches, pipeline); else why not.
    pub structural_edits_blocked: Option<String>,
    /// The structural edits taken all the same where some are blocked
    /// (`layers`, `micro-batches` of a single stage of one micro-batch);
    /// empty when none are, or none are blocked.
    pub structural_edits_possible: Vec<&'static str>,
}

/// Time spent in one phase, ms per step.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct PhaseTime {
    /// Sum of the phase's CPU task durations.
    pub cpu_ms: f64,
    /// Sum of the phase's GPU task durations.
    pub gpu_ms: f64,
}

/// One parallel group as discovered.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupReport {
    /// Process group name, or `-`.
    pub name: String,
    /// Its role: `data`, `tensor`, `pipeline`, `model_parallel` or
    /// `other`.
    pub class: &'static str,
    /// Ranks in it, when known.
    pub size: Option<usize>,
    /// Collective tasks in it.
    pub tasks: usize,
    /// Their names (`allreduce`, `send`, ...).
    pub collectives: Vec<String>,
    /// Their bytes, summed over one step.
    pub bytes_per_step: u64,
    /// How sure the role is: `low`, `medium` or `high`.
    pub confidence: &'static str,
}

/// The training configuration as far as one rank's trace shows it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DiscoveredConfig {
    /// Tensor-parallel degree.
    pub tp: Option<u32>,
    /// Data-parallel degree.
    pub dp: Option<u32>,
    /// Pipeline-parallel degree.
    pub pp: Option<u32>,
    /// This rank's pipeline stage (0-based).
    pub stage: Option<u32>,
    /// Micro-batches per step.
    pub microbatches: Option<u32>,
    /// Transformer layers on this stage.
    pub layers: Option<u32>,
    /// Hidden size.
    pub hidden: Option<u64>,
    /// FFN (MLP inner) size, whole (not divided by `tp`).
    pub ffn: Option<u64>,
    /// Tokens per micro-batch (sequence x micro-batch size).
    pub tokens: Option<u64>,
    /// Attention heads on this rank.
    pub heads_local: Option<u64>,
    /// Sequences per micro-batch, from a forward layer's attention query.
    pub micro_batch: Option<u64>,
    /// Sequence parallelism.
    pub sequence_parallel: Option<bool>,
    /// Gradients reduce-scattered over the data-parallel group (ZeRO-1).
    pub distributed_optimizer: Option<bool>,
    /// Model chunks per stage of the interleaved 1F1B schedule (virtual
    /// pipeline stages); left out for the plain schedule.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub virtual_stages: Option<u32>,
    /// The assumption behind the parallel degrees guessed rather than
    /// read from the trace's process groups, naming them; `None` when
    /// none were.
    pub degrees_guessed: Option<String>,
}

/// One line of the discovery report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// What was looked for.
    pub what: String,
    /// What was found.
    pub value: String,
    /// How sure: `low`, `medium` or `high`.
    pub confidence: &'static str,
    /// Why.
    pub evidence: String,
}

impl From<&lp::StructureReport> for StructureReport {
    fn from(r: &lp::StructureReport) -> StructureReport {
        StructureReport {
            stage_role: r.stage_role.clone(),
            steps: r.steps,
            pass_order: r.pass_order.clone(),
            one_f_one_b: r.one_f_one_b,
            layers_per_pass: r.layers_per_pass,
            layer_method: layer_method(r.layer_method),
            layer_block: r.layer_block.clone(),
            phases: r
                .phases
                .iter()
                .map(|(k, t)| {
                    let t = PhaseTime {
                        cpu_ms: t.cpu_ms,
                        gpu_ms: t.gpu_ms,
                    };
                    (k.clone(), t)
                })
                .collect(),
            groups: r.groups.iter().map(GroupReport::from).collect(),
            config: DiscoveredConfig::from(&r.config),
            findings: r.findings.iter().map(Finding::from).collect(),
            structural_edits_blocked: r.structural_edits_blocked.clone(),
            structural_edits_possible: r.structural_edits_possible.clone(),
        }
    }
}

impl From<&lp::GroupReport> for GroupReport {
    fn from(g: &lp::GroupReport) -> GroupReport {
        GroupReport {
            name: g.name.clone(),
            class: g.class.as_str(),
            size: g.size,
            tasks: g.tasks,
            collectives: g.collectives.clone(),
            bytes_per_step: g.bytes_per_step,
            confidence: confidence(g.confidence),
        }
    }
}

impl From<&lp::DiscoveredConfig> for DiscoveredConfig {
    fn from(c: &lp::DiscoveredConfig) -> DiscoveredConfig {
        DiscoveredConfig {
            tp: c.tp,
            dp: c.dp,
            pp: c.pp,
            stage: c.stage,
            microbatches: c.microbatches,
            layers: c.layers,
            hidden: c.hidden,
            ffn: c.ffn,
            tokens: c.tokens,
            heads_local: c.heads_local,
            sequence_parallel: c.sequence_parallel,
            distributed_optimizer: c.distributed_optimizer,
            virtual_stages: c.virtual_stages,
            micro_batch: c.micro_batch,
            degrees_guessed: c.degrees_guessed.clone(),
        }
    }
}

impl From<&lp::Finding> for Finding {
    fn from(f: &lp::Finding) -> Finding {
        Finding {
            what: f.what.clone(),
            value: f.value.clone(),
            confidence: confidence(f.confidence),
            evidence: f.evidence.clone(),
        }
    }
}

/// The stable name of a confidence.
pub(crate) fn confidence(c: lp::Confidence) -> &'static str {
    match c {
        lp::Confidence::Low => "low",
        lp::Confidence::Medium => "medium",
        lp::Confidence::High => "high",
    }
}

/// The stable name of a layer method.
fn layer_method(m: lp::LayerMethod) -> &'static str {
    match m {
        lp::LayerMethod::Annotation => "annotation",
        lp::LayerMethod::ScopePattern => "scope_pattern",
        lp::LayerMethod::OtherStage => "other_stage",
        lp::LayerMethod::KernelPattern => "kernel_pattern",
        lp::LayerMethod::None => "none",
    }
}
