//! The replay's options (the CLI's `--deps`, `--scale-kernels`,
//! `--scale-only`, `--scale-pattern`, `--scale-rank`, `--scale-rank-cpu`),
//! checked once when made.

use lumos_graph::DepKind;
use lumos_report::RankScale;
use lumos_sim::{GpuSelector, SimOptions};
use pyo3::prelude::*;

use crate::errors::{Error, Result};

/// Checked replay options; `lumos.replay` and friends make one from their
/// keyword arguments.
#[pyclass(frozen, module = "lumos._lumos")]
#[derive(Debug, Clone)]
pub struct ReplayOptions {
    /// The simulator's options.
    pub sim: SimOptions,
    /// Per-rank what-ifs of a job.
    pub scales: Vec<RankScale>,
    /// Whether the ranks' CPU tasks scale too.
    pub scale_cpu: bool,
    /// The options as the report's `what_if` lists them, for `repr`.
    described: String,
}

fn positive(what: &str, f: f64) -> Result<f64> {
    if f.is_finite() && f > 0.0 {
        Ok(f)
    } else {
        Err(Error::config(format!(
            "{what} must be a positive number, got {f}"
        )))
    }
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

fn selector(only: &str, pattern: Option<String>) -> Result<GpuSelector> {
    Ok(match (pattern, only) {
        (Some(p), _) => GpuSelector::NameContains(p),
        (None, "all") => GpuSelector::All,
        (None, "compute") => GpuSelector::Compute,
        (None, "comm") => GpuSelector::Comm,
        (None, other) => {
            return Err(Error::config(format!(
                "scale_only: unknown value `{other}` (expected all, compute or comm)"
            )))
        }
    })
}

#[pymethods]
impl ReplayOptions {
    /// Checks and keeps the options; a bad value is a `ConfigError`.
    #[new]
    #[pyo3(signature = (deps = Vec::new(), scale_kernels = None, scale_only = "all", scale_pattern = None, scale_rank = Vec::new(), scale_rank_cpu = false))]
    fn py_new(
        deps: Vec<String>,
        scale_kernels: Option<f64>,
        scale_only: &str,
        scale_pattern: Option<String>,
        scale_rank: Vec<(u32, f64)>,
        scale_rank_cpu: bool,
    ) -> PyResult<ReplayOptions> {
        Ok(ReplayOptions::new(
            &deps,
            scale_kernels,
            scale_only,
            scale_pattern,
            &scale_rank,
            scale_rank_cpu,
        )?)
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
            scales: Vec::new(),
            scale_cpu: false,
            described: String::new(),
        }
    }

    /// Checked options, as the CLI checks its flags.
    pub fn new(
        deps: &[String],
        scale_kernels: Option<f64>,
        scale_only: &str,
        scale_pattern: Option<String>,
        scale_rank: &[(u32, f64)],
        scale_rank_cpu: bool,
    ) -> Result<ReplayOptions> {
        let mut sim = SimOptions::default();
        let mut described = Vec::new();
        for d in deps {
            sim = sim.drop_kind(dep_kind(d)?);
            described.push(format!("deps={d}"));
        }
        if let Some(f) = scale_kernels {
            let f = positive("scale_kernels", f)?;
            described.push(format!(
                "scale_kernels={f} ({})",
                scale_pattern.as_deref().unwrap_or(scale_only)
            ));
            sim = sim.scale(selector(scale_only, scale_pattern)?, f);
        } else {
            selector(scale_only, scale_pattern)?;
        }
        let mut scales = Vec::new();
        for &(rank, factor) in scale_rank {
            let factor = positive(&format!("scale_rank {rank}"), factor)?;
            scales.push(RankScale { rank, factor });
            described.push(format!("scale_rank {rank}={factor}"));
        }
        if scale_rank_cpu && scales.is_empty() {
            return Err(Error::config("scale_rank_cpu needs scale_rank"));
        }
        Ok(ReplayOptions {
            sim,
            scales,
            scale_cpu: scale_rank_cpu,
            described: described.join(", "),
        })
    }
}
