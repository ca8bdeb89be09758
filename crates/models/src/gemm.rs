//! GEMM durations: FLOPs over a saturating efficiency curve, and the fit of
//! that curve to measured kernels.

/// Floating-point operations of a `[m, k] x [k, n]` matrix product (one
/// multiply and one add per term).
pub fn gemm_flops(m: u64, n: u64, k: u64) -> f64 {
    2.0 * m as f64 * n as f64 * k as f64
}

/// GEMM duration from FLOPs and a saturating efficiency curve.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GemmModel {
    /// Peak dense throughput in FLOP per ns (TFLOP/s x 1000).
    pub peak_flops_per_ns: f64,
    /// Fraction of peak that very large GEMMs reach.
    pub max_efficiency: f64,
    /// FLOPs at which a GEMM reaches half of `max_efficiency`.
    pub half_flops: f64,
    /// No kernel is shorter than this (launch, prologue, epilogue).
    pub min_ns: f64,
}

impl GemmModel {
    /// Achieved fraction of peak for a GEMM of `flops`.
    pub fn efficiency(&self, flops: f64) -> f64 {
        if flops <= 0.0 {
            return 0.0;
        }
        self.max_efficiency * flops / (flops + self.half_flops)
    }

    /// Duration in ns of a GEMM of `flops`.
    pub fn time_ns(&self, flops: f64) -> f64 {
        if flops <= 0.0 {
            return self.min_ns;
        }
        let t = flops / (self.peak_flops_per_ns * self.efficiency(flops));
        t.max(self.min_ns)
    }

    /// The model scaled to a kernel family that reaches only `factor` of
    /// the GEMM throughput (flash attention, for instance).
    pub fn derated(&self, factor: f64) -> GemmModel {
        GemmModel {
            max_efficiency: self.max_efficiency * factor,
            ..*self
        }
    }

    /// Fits `max_efficiency` and `half_flops` to measured `(flops, ns)`
    /// pairs for a GPU of the given peak, by least squares on
    /// `ns = (flops + half_flops) / (peak * max_eff)` (the curve is a
    /// straight line in these terms). Samples under `min_ns` are ignored
    /// since the floor, not the curve, explains them. Returns `None` with
    /// fewer than two usable samples or a fit that is not physical (negative
    /// slope or intercept).
    pub fn fit(peak_flops_per_ns: f64, min_ns: f64, samples: &[(f64, f64)]) -> Option<GemmModel> {
        let pts: Vec<(f64, f64)> = samples
            .iter()
            .copied()
            .filter(|&(f, t)| f > 0.0 && t > min_ns)
            .collect();
        if pts.len() < 2 {
            return None;
        }
        let n = pts.len() as f64;
        let (sx, sy) = pts
            .iter()
            .fold((0.0, 0.0), |(a, b), &(x, y)| (a + x, b + y));
        let (mx, my) = (sx / n, sy / n);
        let (sxy, sxx) = pts.iter().fold((0.0, 0.0), |(a, b), &(x, y)| {
            (a + (x - mx) * (y - my), b + (x - mx) * (x - mx))
        });
        if sxx <= 0.0 {
            return None;
        }
        let slope = sxy / sxx;
        let intercept = my - slope * mx;
        if slope <= 0.0 || intercept < 0.0 {
            return None;
        }
        Some(GemmModel {
            peak_flops_per_ns,
            max_efficiency: 1.0 / (slope * peak_flops_per_ns),
            half_flops: intercept / slope,
            min_ns,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::GpuSpec;

    #[test]
    fn gemm_efficiency_saturates() {
        let g = GpuSpec::h100().gemm();
        let e1 = g.efficiency(1e9);
        let e2 = g.efficiency(1e11);
        let e3 = g.efficiency(1e13);
        assert!(e1 < e2 && e2 < e3 && e3 < g.max_efficiency);
        assert!(e3 > 0.99 * g.max_efficiency);
        // An 8192^3 GEMM on H100 at ~700 TFLOP/s: ~1.6 ms.
        let t = g.time_ns(gemm_flops(8192, 8192, 8192));
        assert!((t - 1.55e6).abs() < 0.2e6, "{t}");
        // Tiny GEMMs cost the curve's fixed part, half_flops / (peak *
        // max_eff): about 4 us on every preset.
        for gpu in GpuSpec::NAMES {
            let g = GpuSpec::preset(gpu).unwrap().gemm();
            let t = g.time_ns(10.0);
            assert!((3_500.0..5_000.0).contains(&t), "{gpu}: {t}");
        }
    }

    #[test]
    fn gemm_fit_recovers_the_curve() {
        let truth = GpuSpec::a100().gemm();
        let samples: Vec<(f64, f64)> = [1e10, 3e10, 1e11, 5e11, 2e12]
            .iter()
            .map(|&f| (f, truth.time_ns(f)))
            .collect();
        let fit = GemmModel::fit(truth.peak_flops_per_ns, truth.min_ns, &samples).unwrap();
        assert!((fit.max_efficiency - truth.max_efficiency).abs() < 1e-6);
        assert!((fit.half_flops - truth.half_flops).abs() / truth.half_flops < 1e-6);
        assert!(GemmModel::fit(1.0, 0.0, &[(1.0, 2.0)]).is_none());
    }
}
