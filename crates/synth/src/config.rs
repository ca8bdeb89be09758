//! What to synthesize: the model, the parallel layout, the GPU, and which
//! ranks. The Megatron rank layout and its process groups are
//! lumos-models' ([`RankLayout`]), which the predictor places predicted
//! jobs in too.

use std::str::FromStr;

use lumos_models::{
    interleaved_stages_check, Cluster, GpuSpec, Hardware, NetworkModel, RankLayout, UnknownPreset,
};
pub use lumos_models::{GroupKind, ProcessGroup, RankCoord};

use crate::training::{Precision, Training};
use crate::SynthError;

/// The shape of a GPT model and of one micro-batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelPreset {
    /// Preset name (`gpt3-175b`).
    pub name: String,
    /// Transformer layers.
    pub layers: usize,
    /// Hidden size.
    pub hidden: usize,
    /// Attention heads.
    pub heads: usize,
    /// Key/value heads (grouped-query attention); `heads` for multi-head
    /// attention.
    pub kv_heads: usize,
    /// SwiGLU MLP (Llama): the first MLP matrix produces two
    /// `ffn_hidden`-wide halves, gated by SiLU.
    pub swiglu: bool,
    /// MLP inner size (4 x hidden for GPT-3).
    pub ffn_hidden: usize,
    /// Vocabulary, padded so that it divides by the tensor-parallel degree.
    pub vocab: usize,
    /// Tokens per sequence.
    pub seq_len: usize,
    /// Sequences per micro-batch.
    pub micro_batch: usize,
}

impl ModelPreset {
    /// Names accepted by [`ModelPreset::preset`].
    pub const NAMES: &'static [&'static str] = &[
        "gpt-tiny",
        "gpt-small",
        "gpt3-15b",
        "gpt3-44b",
        "gpt3-117b",
        "gpt3-175b",
    ];

    /// A GPT-3-style model: FFN 4 x hidden, vocabulary 51200 (GPT-2 BPE
    /// padded as Megatron does), sequence 2048, micro-batch 1.
    pub fn gpt(name: &str, layers: usize, hidden: usize, heads: usize) -> ModelPreset {
        ModelPreset {
            name: name.to_owned(),
            layers,
            hidden,
            heads,
            kv_heads: heads,
            swiglu: false,
            ffn_hidden: 4 * hidden,
            vocab: 51_200,
            seq_len: 2048,
            micro_batch: 1,
        }
    }

    /// A preset by name (case-insensitive; `gpt3-` may be written `gpt-3-`).
    ///
    /// - `gpt-tiny`: 4 layers, hidden 1024, 16 heads (CPU-bound on any GPU)
    /// - `gpt-small`: 12 layers, hidden 2048, 16 heads
    /// - `gpt3-15b`: 48 layers, hidden 6144, 48 heads (the Lumos paper's
    ///   base configuration)
    /// - `gpt3-44b`: 56 layers, hidden 8192, 64 heads
    /// - `gpt3-117b`: 64 layers, hidden 12288, 96 heads
    /// - `gpt3-175b`: 96 layers, hidden 12288, 96 heads
    ///
    /// The 44B, 117B and 175B shapes are chosen so that 12 x layers x
    /// hidden^2 comes close to the name (45B, 116B, 174B; 56 layers rather
    /// than 54 for 44B so that 2, 4 and 8 stages divide it). The 15B shape
    /// is the one given for the paper's base model, although the formula
    /// gives it 22B parameters.
    pub fn preset(name: &str) -> Result<ModelPreset, UnknownPreset> {
        let key = name.to_ascii_lowercase().replace("gpt-3-", "gpt3-");
        let m = match key.as_str() {
            "gpt-tiny" => ModelPreset::gpt("gpt-tiny", 4, 1024, 16),
            "gpt-small" => ModelPreset::gpt("gpt-small", 12, 2048, 16),
            "gpt3-15b" => ModelPreset::gpt("gpt3-15b", 48, 6144, 48),
            "gpt3-44b" => ModelPreset::gpt("gpt3-44b", 56, 8192, 64),
            "gpt3-117b" => ModelPreset::gpt("gpt3-117b", 64, 12288, 96),
            "gpt3-175b" => ModelPreset::gpt("gpt3-175b", 96, 12288, 96),
            _ => {
                return Err(UnknownPreset {
                    name: name.to_owned(),
                    known: ModelPreset::NAMES,
                })
            }
        };
        Ok(m)
    }

    /// Parameters: per layer 12 h^2 (QKV, projection, two MLP matrices)
    /// plus layer norms, then word and position embeddings. Linear layers
    /// have no biases here (see the crate docs).
    pub fn params(&self) -> u64 {
        let h = self.hidden as u64;
        self.layers as u64 * self.layer_params()
            + (self.vocab as u64 + self.seq_len as u64) * h
            + 2 * h
    }

    /// Parameters of one layer: the query and output projections (`h^2`
    /// each), the key and value projections (`h x kv_heads x head_dim`
    /// each), the MLP's matrices and two layer norms.
    pub fn layer_params(&self) -> u64 {
        let (h, f) = (self.hidden as u64, self.ffn_hidden as u64);
        let kv = (self.kv_heads * (self.hidden / self.heads.max(1))) as u64;
        let mlp = if self.swiglu { 3 * h * f } else { 2 * h * f };
        2 * h * h + 2 * h * kv + mlp + 4 * h
    }
}

impl FromStr for ModelPreset {
    type Err = UnknownPreset;
    fn from_str(s: &str) -> Result<ModelPreset, UnknownPreset> {
        ModelPreset::preset(s)
    }
}

/// Parallel degrees and the training-schedule options that go with them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parallelism {
    /// Tensor-parallel degree.
    pub tp: usize,
    /// Pipeline-parallel degree (stages).
    pub pp: usize,
    /// Data-parallel degree.
    pub dp: usize,
    /// Micro-batches per iteration (per data-parallel rank).
    pub microbatches: usize,
    /// Megatron sequence parallelism: layer norms and dropouts work on a
    /// 1/tp slice of the sequence, and the tensor-parallel all-reduces
    /// become all-gather + reduce-scatter. Ignored when `tp == 1`.
    pub sequence_parallel: bool,
    /// Megatron distributed optimizer (ZeRO-1): gradients are
    /// reduce-scattered over the data-parallel group and updated
    /// parameters all-gathered, instead of one gradient all-reduce.
    pub distributed_optimizer: bool,
    /// Model chunks per stage (Megatron's virtual pipeline stages, the
    /// interleaved 1F1B schedule); 1 for the plain 1F1B schedule.
    pub virtual_stages: usize,
}

impl Parallelism {
    /// `tp x pp x dp` with `microbatches`, sequence parallelism on (when
    /// `tp > 1`) and the plain (all-reduce) optimizer.
    pub fn new(tp: usize, pp: usize, dp: usize, microbatches: usize) -> Parallelism {
        Parallelism {
            tp,
            pp,
            dp,
            microbatches,
            sequence_parallel: true,
            distributed_optimizer: false,
            virtual_stages: 1,
        }
    }

    /// Micro-batches per iteration for a global batch of `global_batch`
    /// sequences of `micro_batch` each: `global_batch / (micro_batch x
    /// dp)`, or `None` when that does not divide.
    pub fn microbatches_for(&self, global_batch: usize, micro_batch: usize) -> Option<usize> {
        let per = micro_batch * self.dp;
        (per > 0 && global_batch.is_multiple_of(per) && global_batch >= per)
            .then(|| global_batch / per)
    }

    /// Total ranks.
    pub fn world_size(&self) -> usize {
        self.tp * self.pp * self.dp
    }

    /// Whether sequence parallelism is in effect.
    pub fn sp(&self) -> bool {
        self.sequence_parallel && self.tp > 1
    }

    /// The rank layout: Megatron's order of these degrees.
    pub fn layout(&self) -> RankLayout {
        RankLayout::new(self.tp, self.dp, self.pp)
    }

    /// The coordinates of a global rank in Megatron order: tensor-parallel
    /// index fastest, then data-parallel, then pipeline stage, i.e.
    /// `rank = pp * (dp_size * tp_size) + dp * tp_size + tp`.
    pub fn coord(&self, rank: usize) -> RankCoord {
        self.layout().coord(rank)
    }

    /// The global rank at `c` (inverse of [`Parallelism::coord`]).
    pub fn rank_of(&self, c: RankCoord) -> usize {
        self.layout().rank_of(c)
    }

    /// The process groups `rank` belongs to, in the order PyTorch would
    /// have created them: the default group, then Megatron's data-,
    /// tensor-, pipeline- and model-parallel groups
    /// ([`RankLayout::groups_of`]). Group names are the creation index
    /// over all ranks (every rank creates every group, in the same
    /// order), so the same group has the same name in every rank's trace.
    pub fn groups_of(&self, rank: usize) -> Vec<ProcessGroup> {
        self.layout().groups_of(rank)
    }
}

/// Which ranks [`write_job`](crate::write_job) writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ranks {
    /// Every rank of the job.
    All,
    /// One rank per pipeline stage (tensor and data index 0). The other
    /// ranks of a stage differ only by noise.
    OnePerStage,
    /// These ranks.
    List(Vec<usize>),
}

/// Which host each rank runs on, and how far each host's clock is off:
/// what the traces of a job over several hosts show. Set
/// [`SynthConfig::hosts`] to write it; synthesized traces name no host
/// otherwise.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostClocks {
    /// Ranks per host: rank `r` runs on host `r / ranks_per_host`, named
    /// `node<k>` in its trace's `hostname` member (at least 1).
    pub ranks_per_host: usize,
    /// Per host `k`: how far its clock runs ahead of the true time, in ns,
    /// added to its ranks' `baseTimeNanoseconds` (0 past the list's end).
    /// Every event keeps its place on the host's own clock, as when one
    /// host's system clock is off.
    pub skew_ns: Vec<i64>,
}

impl HostClocks {
    /// The host rank `rank` runs on.
    pub fn host_of(&self, rank: usize) -> usize {
        rank / self.ranks_per_host.max(1)
    }

    /// How far the clock of `rank`'s host runs ahead, in ns.
    pub fn skew_of(&self, rank: usize) -> i64 {
        self.skew_ns.get(self.host_of(rank)).copied().unwrap_or(0)
    }
}

/// Everything that determines a synthesized job. Same config, same bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct SynthConfig {
    /// The model.
    pub model: ModelPreset,
    /// The parallel layout.
    pub parallel: Parallelism,
    /// The GPU.
    pub gpu: GpuSpec,
    /// The network; `None` for the usual cluster of `gpu`
    /// ([`Cluster::default_for`]).
    pub network: Option<NetworkModel>,
    /// Kernel duration models; `None` for the calibrated models of `gpu`
    /// ([`Hardware::for_gpu`]). The fit of the free parameters sets it.
    pub hardware: Option<Hardware>,
    /// Precision, recomputation, gradient reduction, what is written.
    pub training: Training,
    /// Profiled iterations (`ProfilerStep#N` spans), at least 2.
    pub steps: usize,
    /// Seed of all noise.
    pub seed: u64,
    /// Which ranks to write.
    pub ranks: Ranks,
    /// Scale of the random noise on durations and gaps (1 = default, 0 =
    /// none: every duration is its model value).
    pub noise: f64,
    /// First step number (`ProfilerStep#<first_step>`); profiler schedules
    /// usually skip a few warm-up iterations.
    pub first_step: usize,
    /// Hosts and their clock skews; `None` (the default): the traces name
    /// no host and share one clock.
    pub hosts: Option<HostClocks>,
}

impl SynthConfig {
    /// A config with 2 steps, seed 0, one rank per stage, default noise.
    pub fn new(model: ModelPreset, parallel: Parallelism, gpu: GpuSpec) -> SynthConfig {
        SynthConfig {
            model,
            parallel,
            gpu,
            network: None,
            hardware: None,
            training: Training::default(),
            steps: 2,
            seed: 0,
            ranks: Ranks::OnePerStage,
            noise: 1.0,
            first_step: 2,
            hosts: None,
        }
    }

    /// A config on a [`Cluster`]: its GPU and its network.
    pub fn on_cluster(model: ModelPreset, parallel: Parallelism, cluster: &Cluster) -> SynthConfig {
        let mut c = SynthConfig::new(model, parallel, cluster.gpu.clone());
        c.network = Some(cluster.network);
        c
    }

    /// The network the job runs on.
    pub fn network(&self) -> NetworkModel {
        self.network
            .unwrap_or_else(|| Cluster::default_for(&self.gpu).network)
    }

    /// The kernel duration models the job is timed with.
    pub fn hardware(&self) -> Hardware {
        self.hardware
            .clone()
            .unwrap_or_else(|| Hardware::for_gpu(&self.gpu))
    }

    /// Checks that the layout fits the model. Megatron needs heads, FFN
    /// size and vocabulary to divide by `tp`, and (with sequence
    /// parallelism) the sequence too; layers are spread over stages as
    /// evenly as possible (earlier stages take the remainder).
    pub fn validate(&self) -> Result<(), SynthError> {
        let (m, p) = (&self.model, &self.parallel);
        let bad = |why: String| Err(SynthError::InvalidConfig(why));
        if self.steps < 2 {
            return bad(format!("steps must be at least 2, got {}", self.steps));
        }
        if p.tp == 0 || p.pp == 0 || p.dp == 0 || p.microbatches == 0 {
            return bad("tp, pp, dp and microbatches must be at least 1".into());
        }
        if p.virtual_stages == 0 {
            return bad("virtual_stages must be at least 1".into());
        }
        if self.hosts.as_ref().is_some_and(|h| h.ranks_per_host == 0) {
            return bad("hosts.ranks_per_host must be at least 1".into());
        }
        let virtual_stages = p.pp * p.virtual_stages;
        if (0..virtual_stages).any(|vs| self.chunk_layers(vs) == 0) {
            return bad(format!(
                "{} layers cannot fill {} pipeline stages of {} model chunks",
                m.layers, p.pp, p.virtual_stages
            ));
        }
        if p.virtual_stages > 1 {
            // Megatron's interleaved schedule: whole groups of `pp`
            // micro-batches, and enough stages for the transfer mode.
            if let Err(why) = interleaved_stages_check(p.pp, self.training.p2p_overlap) {
                return bad(why);
            }
            if p.microbatches % p.pp != 0 {
                return bad(format!(
                    "the interleaved schedule needs micro-batches ({}) to be a multiple of pp ({})",
                    p.microbatches, p.pp
                ));
            }
            // Megatron-LM asserts that the layers per pipeline stage are
            // a multiple of the layers per virtual stage: every model
            // chunk holds the same layers (`lumos predict` edits such
            // chunks only, and reads no other interleaved trace).
            if (1..virtual_stages).any(|vs| self.chunk_layers(vs) != self.chunk_layers(0)) {
                return bad(format!(
                    "the interleaved schedule needs {} layers to fill {} pipeline stages of {} \
                     model chunks equally (Megatron-LM: the layers per stage must be a multiple \
                     of the layers per virtual stage)",
                    m.layers, p.pp, p.virtual_stages
                ));
            }
        }
        if self.training.precision == Precision::Fp8 && self.gpu.peak_fp8_tflops.is_none() {
            return bad(format!("{} has no FP8 tensor cores", self.gpu.name));
        }
        if m.heads == 0 || m.hidden % m.heads != 0 {
            return bad(format!(
                "hidden {} is not a multiple of heads {}",
                m.hidden, m.heads
            ));
        }
        for (what, n) in [
            ("heads", m.heads),
            ("ffn_hidden", m.ffn_hidden),
            ("vocab", m.vocab),
        ] {
            if n % p.tp != 0 {
                return bad(format!("{what} {n} is not a multiple of tp {}", p.tp));
            }
        }
        if m.kv_heads == 0 || m.heads % m.kv_heads != 0 || m.kv_heads % p.tp != 0 {
            return bad(format!(
                "kv_heads {} must divide heads {} and be a multiple of tp {}",
                m.kv_heads, m.heads, p.tp
            ));
        }
        if p.sp() && m.seq_len % p.tp != 0 {
            return bad(format!(
                "sequence {} is not a multiple of tp {} (sequence parallelism)",
                m.seq_len, p.tp
            ));
        }
        // The name is written into the trace as a JSON string.
        if m.name
            .chars()
            .any(|c| c == '"' || c == '\\' || c.is_control())
        {
            return bad(format!(
                "model name {:?} has quotes, backslashes or control characters",
                m.name
            ));
        }
        if m.seq_len == 0 || m.micro_batch == 0 {
            return bad("seq_len and micro_batch must be at least 1".into());
        }
        if !(self.noise.is_finite() && self.noise >= 0.0) {
            return bad(format!("noise {} must be finite and >= 0", self.noise));
        }
        let (stage, weights) = self.least_weight_bytes_per_gpu();
        if weights > self.gpu.memory_bytes as f64 {
            return bad(format!(
                "the weights alone would take {:.1} GB on each GPU of stage {stage} in 16 bits \
                 ({} layers over tp {}), more than the {}'s {:.1} GB: no such GPU holds this \
                 model (raise tp or pp)",
                weights / 1e9,
                self.stage_layers(stage),
                p.tp,
                self.gpu.name,
                self.gpu.memory_bytes as f64 / 1e9
            ));
        }
        Ok(())
    }

    /// The stage holding the most layers (the first such), and the bytes
    /// of 16-bit weights each of its GPUs holds at least: its layers'
    /// parameters over `tp`. Megatron shards weights only over tensor and
    /// pipeline parallelism; embeddings, gradients, optimizer state and
    /// activations come on top and are not counted, so this refuses only
    /// a configuration that cannot exist.
    fn least_weight_bytes_per_gpu(&self) -> (usize, f64) {
        let layer = self.model.layer_params() as f64;
        // Not always stage 0: with the embedding counted as a layer the
        // first stage holds one layer fewer.
        let (stage, layers) = (0..self.parallel.pp)
            .map(|s| (s, self.stage_layers(s)))
            .fold((0, 0), |best, x| if x.1 > best.1 { x } else { best });
        (stage, 2.0 * layer * layers as f64 / self.parallel.tp as f64)
    }

    /// The ranks [`SynthConfig::ranks`] selects, in order.
    pub fn selected_ranks(&self) -> Vec<usize> {
        let p = &self.parallel;
        match &self.ranks {
            Ranks::All => (0..p.world_size()).collect(),
            Ranks::OnePerStage => (0..p.pp)
                .map(|s| {
                    p.rank_of(RankCoord {
                        tp: 0,
                        dp: 0,
                        pp: s,
                    })
                })
                .collect(),
            Ranks::List(v) => v.clone(),
        }
    }

    /// Layers held by `stage` over all its model chunks.
    pub fn stage_layers(&self, stage: usize) -> usize {
        (0..self.parallel.virtual_stages)
            .map(|c| self.chunk_layers(c * self.parallel.pp + stage))
            .sum()
    }

    /// Layers of virtual stage `vs` (chunk `vs / pp` of stage `vs % pp`):
    /// the layers are spread as evenly as possible over `pp x
    /// virtual_stages` virtual stages, earlier ones taking the remainder.
    /// With [`Training::embedding_as_layer`] the embedding and the output
    /// layer count as a layer each, so the first and last virtual stage
    /// hold one layer fewer.
    pub fn chunk_layers(&self, vs: usize) -> usize {
        let n = self.parallel.pp * self.parallel.virtual_stages;
        if vs >= n {
            return 0;
        }
        let extra = usize::from(self.training.embedding_as_layer);
        let blocks = self.model.layers + 2 * extra;
        let share = blocks / n + usize::from(vs < blocks % n);
        let own = extra * (usize::from(vs == 0) + usize::from(vs + 1 == n));
        share.saturating_sub(own)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_and_groups_are_the_shared_layout_s() {
        // The order and the groups themselves are lumos-models' RankLayout
        // (tested there); the synthesizer must not drift from it, since
        // the predictor writes its jobs by the same layout.
        let p = Parallelism::new(2, 2, 2, 4);
        let l = RankLayout::new(2, 2, 2);
        for r in 0..8 {
            assert_eq!(p.coord(r), l.coord(r));
            assert_eq!(p.rank_of(p.coord(r)), r);
            assert_eq!(p.groups_of(r), l.groups_of(r));
        }
    }

    #[test]
    fn presets_and_validation() {
        let m = ModelPreset::preset("GPT-3-175B").unwrap();
        assert_eq!((m.layers, m.hidden, m.heads), (96, 12288, 96));
        let b = m.params() as f64 / 1e9;
        assert!((b - 175.0).abs() < 3.0, "{b}");
        assert!(ModelPreset::preset("gpt-huge").is_err());
        let mut c = SynthConfig::new(m, Parallelism::new(8, 4, 8, 32), GpuSpec::h100());
        assert!(c.validate().is_ok());
        assert_eq!(c.selected_ranks(), vec![0, 64, 128, 192]);
        c.steps = 1;
        assert!(c.validate().is_err());
        let mut c = SynthConfig::new(
            ModelPreset::preset("gpt3-44b").unwrap(),
            Parallelism::new(8, 3, 1, 4),
            GpuSpec::h100(),
        );
        assert!(c.validate().is_ok());
        assert_eq!(
            (0..3).map(|s| c.stage_layers(s)).collect::<Vec<_>>(),
            vec![19, 19, 18]
        );
        c.parallel.tp = 3;
        assert!(c.validate().is_err());
    }

    #[test]
    fn a_model_no_gpu_of_the_preset_holds_is_refused() {
        // GPT-3 175B on one H100: 350 GB of 16-bit weights against 85.9 GB.
        let m = ModelPreset::preset("gpt3-175b").unwrap();
        let c = SynthConfig::new(m.clone(), Parallelism::new(1, 1, 1, 1), GpuSpec::h100());
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("no such GPU holds this model"), "{e}");
        assert!(e.contains("(96 layers over tp 1)"), "{e}");
        // Over tp 2 x pp 2 a stage holds 87 GB: still too much for an
        // H100, enough for an H200 (150.8 GB).
        let c = SynthConfig::new(m.clone(), Parallelism::new(2, 2, 1, 2), GpuSpec::h100());
        assert!(c.validate().is_err());
        let c = SynthConfig::new(m, Parallelism::new(2, 2, 1, 2), GpuSpec::h200());
        assert!(c.validate().is_ok(), "{:?}", c.validate());
    }

    #[test]
    fn chunks_partitioning_and_recipe_checks() {
        let m = ModelPreset::preset("gpt3-15b").unwrap();
        let mut p = Parallelism::new(2, 4, 2, 8);
        p.virtual_stages = 3;
        let mut c = SynthConfig::new(m, p, GpuSpec::h100());
        assert!(c.validate().is_ok());
        // 48 layers over 12 virtual stages: 4 each, 12 per stage.
        assert_eq!((0..12).map(|v| c.chunk_layers(v)).sum::<usize>(), 48);
        assert_eq!(c.stage_layers(1), 12);
        // DeepSpeed's partitioning: 70 layers + 2 embedding blocks over 12
        // stages (BLOOM): the first and last stage hold 5 layers.
        let mut b = c.clone();
        b.model.layers = 70;
        b.parallel.virtual_stages = 1;
        b.parallel.pp = 12;
        b.parallel.microbatches = 12;
        b.training.embedding_as_layer = true;
        assert!(b.validate().is_ok());
        let layers: Vec<usize> = (0..12).map(|s| b.stage_layers(s)).collect();
        assert_eq!(layers[0], 5);
        assert_eq!(layers[11], 5);
        assert!(layers[1..11].iter().all(|&l| l == 6));
        // The interleaved schedule's rules.
        c.parallel.microbatches = 6;
        assert!(c.validate().is_err());
        c.parallel.microbatches = 8;
        // Two stages only with overlapped sends (Megatron-LM), one never.
        c.parallel.pp = 2;
        assert!(c.validate().is_ok());
        c.training.p2p_overlap = false;
        assert!(c.validate().is_err());
        c.training.p2p_overlap = true;
        c.parallel.pp = 1;
        assert!(c.validate().is_err());
        c.parallel.pp = 4;
        // Chunks of unequal layers, which Megatron-LM refuses: 16 layers
        // in 4 stages of 3 chunks would be 2 and 1.
        let layers = c.model.layers;
        c.model.layers = 16;
        let why = c.validate().unwrap_err().to_string();
        assert!(why.contains("equally"), "{why}");
        c.model.layers = layers;
        // Grouped-query attention: kv heads divide heads, split over TP.
        c.model.kv_heads = 8;
        assert!(c.validate().is_ok());
        c.model.kv_heads = 5;
        assert!(c.validate().is_err());
        c.model.kv_heads = c.model.heads;
        // FP8 needs FP8 tensor cores.
        c.training.precision = Precision::Fp8;
        assert!(c.validate().is_ok());
        c.gpu = GpuSpec::a100();
        assert!(c.validate().is_err());
        // Global batch to micro-batches.
        let q = Parallelism::new(1, 1, 8, 1);
        assert_eq!(q.microbatches_for(512, 16), Some(4));
        assert_eq!(q.microbatches_for(500, 16), None);
        assert_eq!(q.microbatches_for(64, 16), None);
    }
}
