//! The replay's options (the CLI's `--deps`, `--scale-kernels`,
//! in both its forms, `--scale-only`, `--scale-pattern`, `--scale-rank`,
//! `--scale-rank-cpu`),
//! checked once when made.

use lumos_graph::DepKind;
use lumos_predict::{KernelScale, KernelSelector};
use lumos_report::{range, RankScale};
use lumos_sim::{GpuSelector, SimOptions};
use pyo3::prelude::*;

use crate::args;
use crate::errors::{Error, Result};

/// Checked replay options; `lumos.replay` and friends make one from their
/// keyword arguments.
#[pyclass(frozen, module = "lumos._lumos")]
#[derive(Debug, Clone)]
pub struct ReplayOptions {
    /// The simulator's options.
    pub sim: SimOptions,
    /// Kernel speed-ups by pattern (`--scale-kernels PATTERN=FACTOR`),
    /// resolved on each graph: first the bare factor's, when it picks
    /// some kernels (`scale_only` or `scale_pattern`), so that it is
    /// checked as a pattern is.
    pub kernels: Vec<KernelScale>,
    /// The bare factor's selection when it is among `kernels`, for the
    /// replay that takes only a bare factor (representatives).
    bare: Option<(GpuSelector, f64)>,
    /// Per-rank what-ifs of a job.
    pub scales: Vec<RankScale>,
    /// Whether the ranks' CPU tasks scale too.
    pub scale_cpu: bool,
    /// The options as the report's `what_if` lists them, for `repr`.
    described: String,
}

fn dep_kind(name: &str) -> Result<DepKind> {
    match name.trim().replace('_', "-").as_str() {
        "no-inter-stream" => Ok(DepKind::InterStream),
        "no-sync" => Ok(DepKind::Sync),
        "no-inter-thread" => Ok(DepKind::InterThread),
        other => Err(Error::config(format!(
            "deps: unknown value `{other}` (expected no-inter-stream, no-sync or no-inter-thread)"
        ))),
    }
}

/// The bare factor's selection as a pattern's (`None` for every GPU task,
/// which needs no check).
fn selector(only: &str, pattern: Option<String>) -> Result<Option<KernelSelector>> {
    Ok(match (pattern, only) {
        (Some(p), _) => Some(KernelSelector::Name(p)),
        (None, "all") => None,
        (None, "compute") => Some(KernelSelector::Compute),
        (None, "comm") => Some(KernelSelector::Comm),
        (None, other) => {
            return Err(Error::config(format!(
                "scale_only: unknown value `{other}` (expected all, compute or comm)"
            )))
        }
    })
}

/// `PATTERN=FACTOR`, checked as `lumos replay --scale-kernels` and `lumos
/// predict --scale-kernels` check it ([`range::kernel_scale`]).
pub fn kernel_scale(s: &str) -> Result<KernelScale> {
    range::kernel_scale(s).map_err(|e| Error::config(format!("scale_kernels {s}: {e}")))
}

/// The `scale_rank` pairs in the order given, each checked as
/// `--scale-rank RANK=FACTOR` is (a rank number, a factor in the CLI's
/// range); [`ReplayOptions::new`] refuses a rank given twice, naming the
/// first repeat in that order as the CLI does, then sorts them.
fn rank_scales(pairs: &[(Bound<'_, PyAny>, Bound<'_, PyAny>)]) -> Result<Vec<(u32, f64)>> {
    let mut out: Vec<(u32, f64)> = Vec::new();
    for (r, f) in pairs {
        let bad = |e: String| {
            Error::config(format!(
                "scale_rank {}={}: {e}",
                args::shown(r),
                args::shown(f)
            ))
        };
        let rank = args::rank(r).map_err(bad)?;
        let factor = args::factor(f).map_err(|e| bad(format!("factor {e}")))?;
        out.push((rank, factor));
    }
    Ok(out)
}

/// Refuses a pattern given twice among `kernels`, as the CLI refuses
/// `--scale-kernels` naming one twice: its factors would be multiplied,
/// past the range each is checked against. (A dict cannot repeat a key,
/// a list can.)
pub fn distinct_patterns(kernels: &[KernelScale]) -> Result<()> {
    match lumos_predict::repeated_pattern(kernels) {
        Some(p) => Err(Error::config(format!(
            "scale_kernels names pattern {p} twice; give each pattern one factor"
        ))),
        None => Ok(()),
    }
}

#[pymethods]
impl ReplayOptions {
    /// Checks and keeps the options; a bad value is a `ConfigError`.
    #[new]
    #[pyo3(signature = (deps = Vec::new(), scale_kernels = None, scale_only = "all", scale_pattern = None, scale_rank = Vec::new(), scale_rank_cpu = false, kernel_scales = Vec::new()))]
    fn py_new(
        deps: Vec<String>,
        scale_kernels: Option<Bound<'_, PyAny>>,
        scale_only: &str,
        scale_pattern: Option<String>,
        scale_rank: Vec<(Bound<'_, PyAny>, Bound<'_, PyAny>)>,
        scale_rank_cpu: bool,
        kernel_scales: Vec<String>,
    ) -> PyResult<ReplayOptions> {
        let scale_kernels = (scale_kernels.as_ref())
            .map(|f| args::factor(f).map_err(|e| Error::config(format!("scale_kernels: {e}"))))
            .transpose()?;
        let scale_rank = rank_scales(&scale_rank)?;
        let mut o = ReplayOptions::new(
            &deps,
            scale_kernels,
            scale_only,
            scale_pattern,
            &scale_rank,
            scale_rank_cpu,
        )?;
        for k in &kernel_scales {
            o.kernels.push(kernel_scale(k)?);
            if !o.described.is_empty() {
                o.described.push_str(", ");
            }
            o.described.push_str(&format!("scale_kernels {k}"));
        }
        distinct_patterns(&o.kernels)?;
        Ok(o)
    }

    fn __repr__(&self) -> String {
        format!("ReplayOptions({})", self.described)
    }
}

impl ReplayOptions {
    /// The options of a plain replay.
    pub fn plain() -> ReplayOptions {
        ReplayOptions {
            sim: SimOptions::default(),
            kernels: Vec::new(),
            bare: None,
            scales: Vec::new(),
            scale_cpu: false,
            described: String::new(),
        }
    }

    /// Checked options, as the CLI checks its flags (the factors are
    /// checked against its range by the caller).
    pub fn new(
        deps: &[String],
        scale_kernels: Option<f64>,
        scale_only: &str,
        scale_pattern: Option<String>,
        scale_rank: &[(u32, f64)],
        scale_rank_cpu: bool,
    ) -> Result<ReplayOptions> {
        let mut sim = SimOptions::default();
        let (mut kernels, mut bare) = (Vec::new(), None);
        let mut described = Vec::new();
        for d in deps {
            sim = sim.drop_kind(dep_kind(d)?);
            described.push(format!("deps={d}"));
        }
        if let Some(f) = scale_kernels {
            described.push(format!(
                "scale_kernels={f} ({})",
                scale_pattern.as_deref().unwrap_or(scale_only)
            ));
            match selector(scale_only, scale_pattern)? {
                None => sim = sim.scale(GpuSelector::All, f),
                Some(select) => {
                    bare = select.gpu_selector().map(|gpu| (gpu, f));
                    kernels.push(KernelScale { select, factor: f });
                }
            }
        } else {
            // As the CLI refuses them without a bare factor, rather than
            // ignore them.
            if selector(scale_only, scale_pattern)?.is_some() {
                return Err(Error::config(
                    "scale_only and scale_pattern apply to a bare scale_kernels factor; \
                     use scale_kernels={pattern: factor} instead",
                ));
            }
        }
        let mut scales: Vec<RankScale> = (scale_rank.iter())
            .map(|&(rank, factor)| RankScale { rank, factor })
            .collect();
        // In the order given, so that the repeat named is the CLI's.
        lumos_report::distinct_ranks(&scales, "scale_rank").map_err(Error::config)?;
        scales.sort_by_key(|s| s.rank);
        for s in &scales {
            described.push(format!("scale_rank {}={}", s.rank, s.factor));
        }
        if scale_rank_cpu && scales.is_empty() {
            return Err(Error::config("scale_rank_cpu needs scale_rank"));
        }
        Ok(ReplayOptions {
            sim,
            kernels,
            bare,
            scales,
            scale_cpu: scale_rank_cpu,
            described: described.join(", "),
        })
    }

    /// These options with the simulator watching `progress`'s stop flag,
    /// so that Ctrl-C or a failed callback ends a long replay early.
    pub fn stoppable(&self, progress: &crate::progress::Progress) -> ReplayOptions {
        let mut opts = self.clone();
        opts.sim.cancel = Some(progress.stop_flag());
        opts
    }

    /// The simulator's options for a replay that takes no pattern (of
    /// representatives, which have no one graph to check one on): the
    /// bare factor applied unchecked; a pattern is a `ConfigError`.
    pub fn bare_only(&self, what: &str) -> Result<SimOptions> {
        if self.kernels.len() > usize::from(self.bare.is_some()) {
            return Err(Error::config(format!(
                "{what} takes a bare scale_kernels factor, not {{pattern: factor}}"
            )));
        }
        Ok(match &self.bare {
            Some((select, f)) => self.sim.clone().scale(select.clone(), *f),
            None => self.sim.clone(),
        })
    }
}
