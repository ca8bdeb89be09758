//! Published training runs next to the synthesizer: every usable row of
//! `shared/docs/published-runs.md` (Megatron-LM SC21, Korthikanti et al.,
//! BLOOM and its topology search, MT-NLG, NeMo and Megatron-Bridge) and
//! the Lumos paper's GPT-3 15B runs, as configurations ([`rows`]), their
//! synthesized iteration (or layer) times ([`evaluate`]), the fit of the
//! free parameters on the rows marked for it ([`fit`]), and the report
//! `docs/SYNTH-VALIDATION.md` is written from ([`report`]).
//!
//! The synthesizer is a model, not a lookup: nothing here is per row but
//! the configuration the source gives. Three numbers are free, one per GPU
//! and precision, the fraction of the tensor-core peak that large GEMMs
//! reach ([`Param`]); every second published row of each fits it, the Lumos
//! runs fit the H100 BF16 one with their base-like run only, and every
//! other row validates. Everything else comes from FLOPs, bytes, the
//! datasheets and cited measurements (`lumos_models::Hardware`,
//! `lumos_models::Cluster`).

use lumos_models::{
    Hardware, A100_GEMM_EFFICIENCY, H100_FP8_GEMM_EFFICIENCY, H100_GEMM_EFFICIENCY,
};
use rayon::prelude::*;

use crate::config::SynthConfig;
use crate::lockstep::{layer_times, step_times};
use crate::SynthError;

mod lumos_bounds;
mod report;
mod rows;

pub use report::report;

/// What a row measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Measure {
    /// The time of one training iteration.
    Iteration,
    /// One transformer layer's forward plus backward on one rank (the
    /// published row's time is the sum).
    Layer {
        /// The published forward, s.
        forward_s: f64,
        /// The published backward, s.
        backward_s: f64,
    },
}

/// A free parameter of the hardware models.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Param {
    /// Fraction of the A100 FP16/BF16 peak large GEMMs reach.
    A100Gemm,
    /// The same on H100 (and H200).
    H100Gemm,
    /// Fraction of the H100 FP8 peak large FP8 GEMMs reach.
    H100Fp8Gemm,
}

impl Param {
    /// Every parameter.
    pub const ALL: [Param; 3] = [Param::A100Gemm, Param::H100Gemm, Param::H100Fp8Gemm];

    /// The value committed in `lumos_models`.
    pub fn committed(self) -> f64 {
        match self {
            Param::A100Gemm => A100_GEMM_EFFICIENCY,
            Param::H100Gemm => H100_GEMM_EFFICIENCY,
            Param::H100Fp8Gemm => H100_FP8_GEMM_EFFICIENCY,
        }
    }

    /// The constant's name, for the report.
    pub fn name(self) -> &'static str {
        match self {
            Param::A100Gemm => "A100_GEMM_EFFICIENCY",
            Param::H100Gemm => "H100_GEMM_EFFICIENCY",
            Param::H100Fp8Gemm => "H100_FP8_GEMM_EFFICIENCY",
        }
    }

    /// `cfg` with this parameter at `value` (if it applies to the GPU).
    fn apply(self, cfg: &SynthConfig, value: f64) -> SynthConfig {
        let mut c = cfg.clone();
        let mut hw: Hardware = c.hardware();
        match (self, c.gpu.name) {
            (Param::A100Gemm, "a100") | (Param::H100Gemm, "h100" | "h200") => {
                hw.gemm16.efficiency = value
            }
            (Param::H100Fp8Gemm, "h100" | "h200") => {
                if let Some(g) = hw.gemm8.as_mut() {
                    g.efficiency = value;
                }
            }
            _ => {}
        }
        c.hardware = Some(hw);
        c
    }
}

/// Whether a row fits a parameter or validates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split {
    /// The row fits this parameter.
    Fit(Param),
    /// The row only checks.
    Validation,
}

/// One published measurement and the configuration it ran.
#[derive(Debug, Clone)]
pub struct Row {
    /// Where it is published (`SC21 Table 1`).
    pub source: &'static str,
    /// Which run (`145.6B`).
    pub label: String,
    /// The run as the synthesizer's input (noise off).
    pub config: SynthConfig,
    /// The cluster preset it ran on.
    pub cluster: &'static str,
    /// What was measured.
    pub measure: Measure,
    /// The published (or derived) time, s.
    pub published_s: f64,
    /// Fit or validation.
    pub split: Split,
    /// What the source leaves out and was filled in, and from where.
    pub assumed: &'static str,
}

impl Row {
    /// True for the Lumos paper's runs (reported apart).
    pub fn is_lumos(&self) -> bool {
        self.source.starts_with("Lumos")
    }
}

/// Every usable row, in the order of the sources.
pub fn rows() -> Vec<Row> {
    rows::all()
}

/// Published measurements left out, and why.
pub fn excluded() -> &'static [(&'static str, &'static str)] {
    rows::EXCLUDED
}

/// The synthesized counterpart of a row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outcome {
    /// Synthesized time, s (iteration, or layer forward plus backward).
    pub synthesized_s: f64,
    /// For a layer row, the synthesized forward and backward, s.
    pub layer_s: Option<(f64, f64)>,
}

impl Outcome {
    /// Signed relative error against `row`, in percent.
    pub fn error_pct(&self, row: &Row) -> f64 {
        (self.synthesized_s - row.published_s) / row.published_s * 100.0
    }
}

/// Synthesizes `cfg` and returns what `measure` measured.
fn measure(cfg: &SynthConfig, measure: Measure) -> Result<Outcome, SynthError> {
    match measure {
        Measure::Iteration => {
            let t = step_times(cfg)?.iteration_ns() as f64 / 1e9;
            Ok(Outcome {
                synthesized_s: t,
                layer_s: None,
            })
        }
        Measure::Layer { .. } => {
            let (f, b) = layer_times(cfg)?;
            let (f, b) = (f as f64 / 1e9, b as f64 / 1e9);
            Ok(Outcome {
                synthesized_s: f + b,
                layer_s: Some((f, b)),
            })
        }
    }
}

/// The synthesized time of `row` with the committed models.
pub fn evaluate(row: &Row) -> Result<Outcome, SynthError> {
    measure(&row.config, row.measure)
}

/// Every row evaluated, in parallel.
pub fn evaluate_all(rows: &[Row]) -> Result<Vec<Outcome>, SynthError> {
    rows.par_iter().map(evaluate).collect()
}

/// Fits `param` on the rows marked for it: the value minimizing the
/// squared log error of their synthesized times. A row's time is close to
/// `a + b / x` in the GEMM fraction `x` (GEMM time scales with `1 / x`,
/// the rest does not), so each round synthesizes the rows at one new
/// value, fits `a` and `b` per row through the last two values, and moves
/// to the minimum of that model (golden-section search in `[0.2, 1.0]`),
/// until it moves by less than 1e-4. `None` when no row fits `param`.
pub fn fit(param: Param, rows: &[Row]) -> Result<Option<f64>, SynthError> {
    let fit_rows: Vec<&Row> = rows
        .iter()
        .filter(|r| r.split == Split::Fit(param))
        .collect();
    if fit_rows.is_empty() {
        return Ok(None);
    }
    let times = |x: f64| -> Result<Vec<f64>, SynthError> {
        fit_rows
            .par_iter()
            .map(|r| Ok(measure(&param.apply(&r.config, x), r.measure)?.synthesized_s))
            .collect()
    };
    let (mut x0, mut x1) = (0.5, 0.8);
    let (mut t0, mut t1) = (times(x0)?, times(x1)?);
    for _ in 0..12 {
        let model: Vec<(f64, f64)> = t0
            .iter()
            .zip(&t1)
            .map(|(&u, &v)| {
                let b = (u - v) / (1.0 / x0 - 1.0 / x1);
                (u - b / x0, b)
            })
            .collect();
        let loss = |x: f64| -> f64 {
            model
                .iter()
                .zip(&fit_rows)
                .map(|(&(a, b), r)| ((a + b / x).max(1e-12) / r.published_s).ln().powi(2))
                .sum()
        };
        let x = golden_min(loss, 0.2, 1.0);
        if (x - x1).abs() < 1e-4 {
            return Ok(Some(x));
        }
        (x0, t0) = (x1, t1);
        x1 = x;
        t1 = times(x)?;
    }
    Ok(Some(x1))
}

/// The minimum of `f` on `[a, b]` by golden-section search, to 1e-7.
fn golden_min(f: impl Fn(f64) -> f64, mut a: f64, mut b: f64) -> f64 {
    let phi = (5f64.sqrt() - 1.0) / 2.0;
    let mut c = b - phi * (b - a);
    let mut d = a + phi * (b - a);
    let (mut fc, mut fd) = (f(c), f(d));
    while b - a > 1e-7 {
        if fc < fd {
            (b, d, fd) = (d, c, fc);
            c = b - phi * (b - a);
            fc = f(c);
        } else {
            (a, c, fc) = (c, d, fd);
            d = a + phi * (b - a);
            fd = f(d);
        }
    }
    (a + b) / 2.0
}

/// Mean and largest absolute error, percent, of `errors`.
pub fn summary(errors: &[f64]) -> (f64, f64) {
    if errors.is_empty() {
        return (0.0, 0.0);
    }
    let mean = errors.iter().map(|e| e.abs()).sum::<f64>() / errors.len() as f64;
    let max = errors.iter().fold(0.0f64, |m, e| m.max(e.abs()));
    (mean, max)
}
