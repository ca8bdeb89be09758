//! The configuration a prediction is for, the rank layout that gives each
//! parallel group its ranks, and user-given kernel speed-ups.

use std::fmt;
use std::str::FromStr;

use lumos_graph::Graph;
use lumos_models::{RankCoord, RankLayout};
use lumos_sim::{DurationScale, GpuSelector};

use crate::discover::{GroupClass, WorkClass};
use crate::error::PredictError;

/// The training configuration of a whole job, as far as the edits go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// Tensor-parallel degree.
    pub tp: u32,
    /// Data-parallel degree.
    pub dp: u32,
    /// Pipeline-parallel degree.
    pub pp: u32,
    /// Micro-batches per step.
    pub microbatches: u32,
    /// Transformer layers in the whole model.
    pub layers: u32,
    /// Hidden size.
    pub hidden: u64,
    /// FFN (MLP inner) size.
    pub ffn: u64,
    /// Model chunks per stage (Megatron's virtual pipeline stages): the
    /// interleaved 1F1B schedule when above 1.
    pub virtual_stages: u32,
    /// Sequences per micro-batch (the micro-batch size); 0 where the
    /// traces do not show it.
    pub micro_batch: u64,
}

impl fmt::Display for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "tp{} pp{} dp{}, {} micro-batches, {} layers, hidden {}, ffn {}{}",
            self.tp,
            self.pp,
            self.dp,
            self.microbatches,
            self.layers,
            self.hidden,
            self.ffn,
            self.extras()
        )
    }
}

impl Config {
    /// The parts of the configuration's text shown only where they apply,
    /// each after `, `: the interleaved schedule's virtual stages (more
    /// than one) and the micro-batch size (where known); empty for
    /// neither. Its [`Display`](fmt::Display) ends with them, and so does
    /// every front end's own text of a configuration, so that they read
    /// alike.
    ///
    /// ```
    /// let mut c = lumos_predict::Config {
    ///     tp: 1,
    ///     dp: 1,
    ///     pp: 1,
    ///     microbatches: 1,
    ///     layers: 2,
    ///     hidden: 64,
    ///     ffn: 256,
    ///     virtual_stages: 1,
    ///     micro_batch: 0,
    /// };
    /// assert_eq!(c.extras(), "");
    /// (c.virtual_stages, c.micro_batch) = (2, 4);
    /// assert_eq!(
    ///     c.extras(),
    ///     ", 2 virtual stages (interleaved 1F1B), micro-batch size 4"
    /// );
    /// ```
    pub fn extras(&self) -> String {
        let mut s = String::new();
        if self.virtual_stages > 1 {
            s += &format!(
                ", {} virtual stages (interleaved 1F1B)",
                self.virtual_stages
            );
        }
        if self.micro_batch > 0 {
            s += &format!(", micro-batch size {}", self.micro_batch);
        }
        s
    }

    /// Layers held by `stage` when `layers` are spread over `pp` stages as
    /// evenly as possible, earlier stages taking the remainder (Megatron's
    /// and the synthesizer's rule).
    pub fn stage_layers(&self, stage: u32) -> u32 {
        self.layers / self.pp + u32::from(stage < self.layers % self.pp)
    }

    /// Layers of model chunk `chunk` of `stage` (virtual stage `chunk * pp
    /// + stage` of `pp * virtual_stages`, spread the same way).
    pub fn chunk_layers(&self, stage: u32, chunk: u32) -> u32 {
        let n = self.pp * self.virtual_stages.max(1);
        let vs = chunk * self.pp + stage;
        self.layers / n + u32::from(vs < self.layers % n)
    }
}

/// Megatron's rank order: tensor index fastest, then data, then pipeline
/// stage (`rank = pp * dp * tp + dp * tp + tp`). Nodes hold consecutive
/// ranks, so the order decides which groups cross nodes. The numbering and
/// the groups are lumos-models' [`RankLayout`] (the synthesizer's too);
/// this is it in the predictor's integer types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Tensor-parallel degree.
    pub tp: u32,
    /// Data-parallel degree.
    pub dp: u32,
    /// Pipeline-parallel degree.
    pub pp: u32,
}

/// A rank's place in the layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Coord {
    /// Tensor-parallel index.
    pub tp: u32,
    /// Data-parallel index.
    pub dp: u32,
    /// Pipeline stage.
    pub pp: u32,
}

impl Coord {
    fn of(c: RankCoord) -> Coord {
        let n = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
        Coord {
            tp: n(c.tp),
            dp: n(c.dp),
            pp: n(c.pp),
        }
    }

    fn models(self) -> RankCoord {
        RankCoord {
            tp: self.tp as usize,
            dp: self.dp as usize,
            pp: self.pp as usize,
        }
    }
}

impl Layout {
    /// The layout of `c`.
    pub fn of(c: &Config) -> Layout {
        Layout {
            tp: c.tp,
            dp: c.dp,
            pp: c.pp,
        }
    }

    /// The shared layout of these degrees.
    pub fn ranks(&self) -> RankLayout {
        RankLayout::new(self.tp as usize, self.dp as usize, self.pp as usize)
    }

    /// Ranks in the layout (tensor x data x pipeline degrees).
    pub fn world_size(&self) -> i64 {
        i64::from(self.tp.max(1)) * i64::from(self.dp.max(1)) * i64::from(self.pp.max(1))
    }

    /// The global rank at `c`.
    pub fn rank(&self, c: Coord) -> i64 {
        self.ranks().rank_of(c.models()) as i64
    }

    /// The coordinates of global rank `r`.
    pub fn coord(&self, r: i64) -> Coord {
        Coord::of(self.ranks().coord(r.max(0) as usize))
    }

    /// The global ranks of the group of `class` that the rank at `c`
    /// belongs to (pipeline: the two neighbours for a point-to-point
    /// transfer are picked by the caller; this gives the whole pipeline).
    pub fn group(&self, class: GroupClass, c: Coord) -> Vec<i64> {
        match class.kind() {
            Some(kind) => (self.ranks().group_ranks(kind, c.models()))
                .into_iter()
                .map(|r| r as i64)
                .collect(),
            None => Vec::new(),
        }
    }
}

/// Which kernels a speed-up applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelSelector {
    /// GEMM kernels (shapes known).
    Gemm,
    /// Fused attention kernels.
    Attention,
    /// Other computing kernels (element-wise, normalization, optimizer).
    Memory,
    /// Communication kernels.
    Comm,
    /// Every GPU task that is not communication.
    Compute,
    /// GPU tasks whose name contains this (case-sensitive).
    Name(String),
}

impl KernelSelector {
    /// True when a GPU task of class `w` named `name` is selected.
    pub fn matches(&self, w: &WorkClass, name: &str) -> bool {
        match self {
            KernelSelector::Gemm => matches!(w, WorkClass::Gemm(_)),
            KernelSelector::Attention => matches!(w, WorkClass::Attention(_)),
            KernelSelector::Memory => matches!(w, WorkClass::Memory),
            KernelSelector::Comm => matches!(w, WorkClass::Comm(_)),
            KernelSelector::Compute => !matches!(w, WorkClass::Comm(_) | WorkClass::Cpu),
            KernelSelector::Name(p) => !matches!(w, WorkClass::Cpu) && name.contains(p.as_str()),
        }
    }

    /// The simulator's selector of the same tasks, where it needs no work
    /// classes (`class:comm`, `class:compute`, a name); `None` for
    /// `class:gemm`, `class:attention` and `class:memory`, which
    /// [`replay_scales`] resolves on a graph.
    pub fn gpu_selector(&self) -> Option<GpuSelector> {
        match self {
            KernelSelector::Comm => Some(GpuSelector::Comm),
            KernelSelector::Compute => Some(GpuSelector::Compute),
            KernelSelector::Name(p) => Some(GpuSelector::NameContains(p.clone())),
            KernelSelector::Gemm | KernelSelector::Attention | KernelSelector::Memory => None,
        }
    }
}

/// A kernel speed-up: `PATTERN=FACTOR`, where PATTERN is `class:gemm`,
/// `class:attention`, `class:memory`, `class:comm`, `class:compute`, or a
/// substring of kernel names; durations are multiplied by FACTOR.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelScale {
    /// Which kernels.
    pub select: KernelSelector,
    /// Multiplies their duration.
    pub factor: f64,
}

/// As the pattern is written: `class:gemm`, `flash_fwd` (a name that
/// would read as a class, or an empty one, in quotes).
impl std::fmt::Display for KernelSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let class = match self {
            KernelSelector::Gemm => "gemm",
            KernelSelector::Attention => "attention",
            KernelSelector::Memory => "memory",
            KernelSelector::Comm => "comm",
            KernelSelector::Compute => "compute",
            // A name that reads as a class, or no name at all (possible
            // through the deprecated `--scale-pattern`), is quoted.
            KernelSelector::Name(p) if p.is_empty() || p.starts_with("class:") => {
                return write!(f, "{p:?}")
            }
            KernelSelector::Name(p) => return f.write_str(p),
        };
        write!(f, "class:{class}")
    }
}

/// As the speed-up is written: `class:gemm=0.5`, `flash_fwd=2`.
impl std::fmt::Display for KernelScale {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}={}", self.select, self.factor)
    }
}

/// The first pattern `scales` give twice, if any. The factors of a
/// kernel's speed-ups multiply, so one pattern given 1e6 twice makes
/// 1e12, past the range a front end checks each factor against: the
/// front ends refuse it as a slip. (Different patterns that select some
/// kernels alike, `class:compute` and a name, are separate what-ifs, left
/// as given.)
pub fn repeated_pattern(scales: &[KernelScale]) -> Option<&KernelSelector> {
    scales
        .iter()
        .enumerate()
        .find(|(i, k)| scales[..*i].iter().any(|e| e.select == k.select))
        .map(|(_, k)| &k.select)
}

impl FromStr for KernelScale {
    type Err = PredictError;
    fn from_str(s: &str) -> Result<KernelScale, PredictError> {
        let invalid = PredictError::InvalidTarget;
        let (pat, f) = s
            .rsplit_once('=')
            .ok_or_else(|| invalid(format!("expected PATTERN=FACTOR, got {s:?}")))?;
        let factor: f64 = f
            .trim()
            .parse()
            .map_err(|_| invalid(format!("{f:?} is not a number")))?;
        if !(factor.is_finite() && factor >= 0.0) {
            return Err(invalid(format!("factor {factor} must be finite and >= 0")));
        }
        let select = match pat.strip_prefix("class:") {
            Some("gemm") => KernelSelector::Gemm,
            Some("attention") => KernelSelector::Attention,
            Some("memory") => KernelSelector::Memory,
            Some("comm") => KernelSelector::Comm,
            Some("compute") => KernelSelector::Compute,
            Some(other) => {
                return Err(invalid(format!(
                    "unknown kernel class {other:?} (gemm, attention, memory, comm, compute)"
                )))
            }
            None if pat.is_empty() => return Err(invalid("empty kernel pattern".into())),
            None => KernelSelector::Name(pat.to_owned()),
        };
        Ok(KernelScale { select, factor })
    }
}

/// The simulator's duration scales for the speed-ups `scales` on `graph`,
/// for a replay of the traced graph (`lumos replay --scale-kernels`):
/// `class:comm`, `class:compute` and name patterns select as
/// [`GpuSelector`] does; `class:gemm`, `class:attention` and
/// `class:memory` are the GPU tasks whose work class (from names and
/// `Input Dims`, as structure discovery finds it) is that class. A
/// speed-up that selects no GPU task of `graph` (`what` names it) is refused
/// ([`PredictError::Unsupported`], as a prediction refuses it): a misspelt
/// name would change nothing without a word.
pub fn replay_scales(
    graph: &Graph,
    scales: &[KernelScale],
    what: &str,
) -> Result<Vec<DurationScale>, PredictError> {
    let mut classes: Option<Vec<WorkClass>> = None;
    let each = scales.iter().map(|k| {
        let select = k.select.gpu_selector().unwrap_or_else(|| {
            let work = classes.get_or_insert_with(|| crate::discover::work_classes(graph));
            let set: Vec<bool> = graph
                .tasks
                .iter()
                .zip(work.iter())
                .map(|(t, w)| t.kind.is_gpu() && !t.is_comm() && k.select.matches(w, ""))
                .collect();
            GpuSelector::Tasks(set.into())
        });
        if !selects_any(graph, &select) {
            return Err(selects_no_gpu_task(k, what));
        }
        Ok(DurationScale {
            select,
            factor: k.factor,
        })
    });
    each.collect()
}

/// Whether `select` picks a GPU task of `graph`; a name pattern is matched
/// once per distinct name, not once per task.
fn selects_any(graph: &Graph, select: &GpuSelector) -> bool {
    match select {
        GpuSelector::NameContains(p) => {
            let hit = name_hits(graph, p);
            let named = |t: &lumos_graph::Task| hit.get(t.name.0 as usize) == Some(&true);
            graph.tasks.iter().any(|t| t.kind.is_gpu() && named(t))
        }
        s => (graph.tasks.iter().enumerate())
            .any(|(i, t)| s.matches(lumos_graph::TaskId(i as u32), t, "")),
    }
}

/// For each of `graph`'s interned names, whether it contains `pattern`.
pub(crate) fn name_hits(graph: &Graph, pattern: &str) -> Vec<bool> {
    graph.names.iter().map(|n| n.contains(pattern)).collect()
}

/// The refusal of speed-up `k`, which selects no GPU task of `what`.
pub(crate) fn selects_no_gpu_task(k: &KernelScale, what: &str) -> PredictError {
    PredictError::Unsupported(format!(
        "kernel speed-up {k} selects no GPU task in {what}: nothing to speed up (a pattern is \
         class:gemm, class:attention, class:memory, class:comm, class:compute, or a \
         case-sensitive part of kernel names; GEMMs and attention are known by the shapes \
         their operators recorded)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn megatron_layout_groups() {
        let l = Layout {
            tp: 2,
            dp: 4,
            pp: 2,
        };
        let c = l.coord(0);
        assert_eq!(l.group(GroupClass::Tensor, c), vec![0, 1]);
        assert_eq!(l.group(GroupClass::Data, c), vec![0, 2, 4, 6]);
        assert_eq!(l.group(GroupClass::Pipeline, c), vec![0, 8]);
        assert_eq!(l.group(GroupClass::ModelParallel, c), vec![0, 1, 8, 9]);
        let c = l.coord(13);
        assert_eq!(
            c,
            Coord {
                tp: 1,
                dp: 2,
                pp: 1
            }
        );
        assert_eq!(l.rank(c), 13);
    }

    #[test]
    fn stage_layers_spread_the_remainder_first() {
        let c = Config {
            tp: 1,
            dp: 1,
            pp: 3,
            microbatches: 1,
            layers: 56,
            hidden: 1,
            ffn: 1,
            virtual_stages: 1,
            micro_batch: 0,
        };
        assert_eq!(
            (0..3).map(|s| c.stage_layers(s)).collect::<Vec<_>>(),
            vec![19, 19, 18]
        );
    }

    #[test]
    fn kernel_scales_parse() {
        let k: KernelScale = "class:gemm=0.5".parse().unwrap();
        assert_eq!(k.select, KernelSelector::Gemm);
        assert_eq!(k.factor, 0.5);
        let k: KernelScale = "flash_fwd=0.8".parse().unwrap();
        assert_eq!(k.select, KernelSelector::Name("flash_fwd".into()));
        assert!("class:foo=1".parse::<KernelScale>().is_err());
        assert!("gemm".parse::<KernelScale>().is_err());
        assert!("gemm=-1".parse::<KernelScale>().is_err());
        assert!(KernelSelector::Compute.matches(&WorkClass::Memory, "x"));
        assert!(!KernelSelector::Compute.matches(&WorkClass::Comm(0), "x"));
    }

    #[test]
    fn kernel_scales_display_as_written_and_a_name_never_as_a_class() {
        for written in ["class:gemm=0.5", "class:comm=2", "flash_fwd=0.8"] {
            let k: KernelScale = written.parse().unwrap();
            assert_eq!(k.to_string(), written);
        }
        // Only the deprecated `--scale-pattern` makes these names.
        let name = |p: &str| KernelScale {
            select: KernelSelector::Name(p.into()),
            factor: 0.5,
        };
        assert_eq!(name("class:gemm").to_string(), "\"class:gemm\"=0.5");
        assert_eq!(name("").to_string(), "\"\"=0.5");
    }

    #[test]
    fn a_pattern_given_twice_is_found_whatever_its_factors() {
        let scales =
            |s: &[&str]| -> Vec<KernelScale> { s.iter().map(|k| k.parse().unwrap()).collect() };
        let twice = scales(&["gemm=2", "class:gemm=2", "class:gemm=3"]);
        assert_eq!(repeated_pattern(&twice), Some(&KernelSelector::Gemm));
        let names = scales(&["flash=2", "class:compute=2", "flash=2"]);
        let flash = KernelSelector::Name("flash".into());
        assert_eq!(repeated_pattern(&names), Some(&flash));
        assert_eq!(flash.to_string(), "flash");
        // A name and a class are two patterns, even where they overlap.
        let apart = scales(&["gemm=2", "class:gemm=2", "class:compute=2"]);
        assert_eq!(repeated_pattern(&apart), None);
    }
}
