//! Duration models and their calibration on the trace's own kernels.
//!
//! Two families change materially under the edits (method.md section 6):
//!
//! - **GEMMs**: `time = flops / (peak x efficiency(flops))` with the
//!   saturating efficiency curve of [`GemmModel`], whose `max_efficiency`
//!   and `half_flops` are fitted by least squares to the trace's own GEMMs
//!   (shapes from the launching operator's `Input Dims`). A GEMM's new
//!   duration is its measured duration times `T(new flops) / T(old flops)`,
//!   which depends only on the fitted `half_flops`, so the GPU's peak (often
//!   unknown) does not matter. Fused attention uses the same curve.
//! - **Collectives**: the alpha-beta ring model of [`NetworkModel`]
//!   (all-reduce moves `2(n-1)/n` of the bytes, all-gather and
//!   reduce-scatter `(n-1)/n`, send/recv all of them; a hop latency per ring
//!   step and a fixed cost), calibrated per link class (inside a node,
//!   across nodes) on the trace's own collectives: the link's effective
//!   bandwidth and a scale on the latencies. A link class the trace never
//!   used keeps the preset's (or the user's) values and is reported as
//!   uncalibrated. A collective's new duration is its measured duration plus
//!   `T_target(new) - T_base(old)`, so time it spent waiting for peers is
//!   kept, not scaled.
//!
//! The models are behind the [`ComputeModel`] and [`CommModel`] traits, so
//! a caller can plug in others.

use lumos_models::{CollectiveKind, GemmModel, GpuSpec, Link, NetworkModel};

use crate::discover::{GroupClass, Structure, WorkClass};
use crate::error::PredictError;

/// Where a predicted duration came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Source {
    /// The measured duration, unchanged.
    Measured,
    /// A measured duration changed by a model ratio or difference, or by a
    /// user's factor.
    Scaled,
    /// From a model alone (no measured counterpart: transfers between
    /// stages whose measured time included waiting, new links).
    Modelled,
}

impl Source {
    /// Stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Measured => "measured",
            Source::Scaled => "scaled",
            Source::Modelled => "modelled",
        }
    }
}

/// Compute-kernel durations.
pub trait ComputeModel {
    /// Duration in ns of a matrix product of `flops`.
    fn gemm_ns(&self, flops: f64) -> f64;
}

/// Communication durations.
pub trait CommModel {
    /// Duration in ns of `kind` moving `bytes` over the global `ranks`.
    fn collective_ns(&self, kind: CollectiveKind, bytes: u64, ranks: &[i64]) -> f64;
}

impl ComputeModel for GemmModel {
    fn gemm_ns(&self, flops: f64) -> f64 {
        self.time_ns(flops)
    }
}

impl CommModel for NetworkModel {
    fn collective_ns(&self, kind: CollectiveKind, bytes: u64, ranks: &[i64]) -> f64 {
        let r: Vec<usize> = ranks.iter().map(|&x| x.max(0) as usize).collect();
        self.collective_time_ns(kind, bytes, &r)
    }
}

/// The GPU preset a device name refers to; H100 when it names none.
pub fn gpu_for_device(name: Option<&str>) -> (GpuSpec, bool) {
    let lower = name.unwrap_or("").to_ascii_lowercase();
    for (key, spec) in [
        ("a100", GpuSpec::a100()),
        ("h200", GpuSpec::h200()),
        ("h100", GpuSpec::h100()),
        ("b200", GpuSpec::b200()),
    ] {
        if lower.contains(key) {
            return (spec, true);
        }
    }
    (GpuSpec::h100(), false)
}

/// The GEMM curve fitted to a trace's GEMMs.
#[derive(Debug, Clone, PartialEq)]
pub struct GemmCalibration {
    /// Peak used, TFLOP/s (only absolute times depend on it).
    pub peak_tflops: f64,
    /// Fitted fraction of peak that large GEMMs reach.
    pub max_efficiency: f64,
    /// Fitted FLOPs at half that efficiency.
    pub half_gflops: f64,
    /// GEMM kernels with shapes used.
    pub samples: usize,
    /// Mean |model - measured| / measured over them, %.
    pub mean_abs_error_pct: f64,
    /// False when the fit failed and the preset curve is used.
    pub fitted: bool,
    /// GPU preset the peak came from.
    pub gpu: String,
}

impl GemmCalibration {
    /// Fits the curve to the GEMMs of `graph` (classified in `s`) for a GPU
    /// of `spec`.
    pub fn fit(graph: &lumos_graph::Graph, s: &Structure, spec: &GpuSpec) -> GemmCalibration {
        let preset = spec.gemm();
        let samples: Vec<(f64, f64)> = s
            .work
            .iter()
            .enumerate()
            .filter_map(|(i, w)| match w {
                WorkClass::Gemm(shape) => Some((shape.flops(), graph.tasks[i].duration_ns as f64)),
                _ => None,
            })
            .collect();
        // A curve that never reaches 5% of peak comes from GEMMs too small
        // to show the rate (fixed costs only): not one to extrapolate with.
        let fit = GemmModel::fit(preset.peak_flops_per_ns, 2_000.0, &samples)
            .filter(|m| (0.05..=1.0).contains(&m.max_efficiency));
        let model = fit.unwrap_or(preset);
        let err = if samples.is_empty() {
            0.0
        } else {
            samples
                .iter()
                .map(|&(f, t)| ((model.time_ns(f) - t) / t).abs())
                .sum::<f64>()
                / samples.len() as f64
                * 100.0
        };
        GemmCalibration {
            peak_tflops: model.peak_flops_per_ns / 1e3,
            max_efficiency: model.max_efficiency,
            half_gflops: model.half_flops / 1e9,
            samples: samples.len(),
            mean_abs_error_pct: err,
            fitted: fit.is_some(),
            gpu: spec.name.into(),
        }
    }

    /// The fitted curve.
    pub fn model(&self) -> GemmModel {
        GemmModel {
            peak_flops_per_ns: self.peak_tflops * 1e3,
            max_efficiency: self.max_efficiency,
            half_flops: self.half_gflops * 1e9,
            min_ns: 2_000.0,
        }
    }
}

/// One link class's calibration.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkCalibration {
    /// `intra_node` or `inter_node`.
    pub link: &'static str,
    /// Collectives used.
    pub samples: usize,
    /// Effective bandwidth (bandwidth x efficiency), GB/s, after the fit.
    pub effective_gbps: f64,
    /// Factor applied to the preset's latencies.
    pub latency_scale: f64,
    /// Mean |model - measured| / measured over the samples, %.
    pub mean_abs_error_pct: f64,
    /// False when the trace had no usable collective on this link.
    pub calibrated: bool,
}

/// The network model fitted to a trace's collectives.
#[derive(Debug, Clone, PartialEq)]
pub struct NetworkCalibration {
    /// Per link class.
    pub links: Vec<LinkCalibration>,
    /// The preset or file it started from.
    pub start: String,
    model: NetworkModel,
}

impl NetworkCalibration {
    /// The calibrated model.
    pub fn model(&self) -> NetworkModel {
        self.model
    }

    /// True when the link class `ranks` use was calibrated.
    pub fn calibrated_for(&self, ranks: &[i64]) -> bool {
        let r: Vec<usize> = ranks.iter().map(|&x| x.max(0) as usize).collect();
        let name = if self.model.spans_nodes(&r) {
            "inter_node"
        } else {
            "intra_node"
        };
        self.links.iter().any(|l| l.link == name && l.calibrated)
    }

    /// Fits `start` to the collectives of the graphs (one per stage): per
    /// link class, the effective bandwidth and a latency scale, by least
    /// squares on `t = s x alpha(kind, n) + traffic(kind, n) x bytes / B`
    /// over the median duration of each (kind, bytes, group) bucket.
    /// Point-to-point transfers and model-parallel reductions are left out:
    /// their measured time includes waiting for other stages.
    pub fn fit(
        stages: &[(&lumos_graph::Graph, &Structure)],
        start: NetworkModel,
        start_name: &str,
    ) -> NetworkCalibration {
        use std::collections::BTreeMap;
        let mut buckets: BTreeMap<(bool, u8, u64, Vec<i64>), Vec<f64>> = BTreeMap::new();
        for (graph, s) in stages {
            for c in &s.comms {
                let Some(kind) = c.kind else { continue };
                if matches!(c.class, GroupClass::Pipeline | GroupClass::ModelParallel)
                    || kind == CollectiveKind::SendRecv
                    || c.ranks.len() < 2
                {
                    continue;
                }
                let Some(bytes) = c.bytes else { continue };
                let r: Vec<usize> = c.ranks.iter().map(|&x| x.max(0) as usize).collect();
                let inter = start.spans_nodes(&r);
                buckets
                    .entry((inter, kind as u8, bytes, c.ranks.clone()))
                    .or_default()
                    .push(graph.tasks[c.task.idx()].duration_ns as f64);
            }
        }
        let kind_of = |k: u8| match k {
            0 => CollectiveKind::AllReduce,
            1 => CollectiveKind::AllGather,
            2 => CollectiveKind::ReduceScatter,
            _ => CollectiveKind::SendRecv,
        };
        let mut model = start;
        let mut links = Vec::new();
        for inter in [false, true] {
            let link = if inter {
                start.inter_node
            } else {
                start.intra_node
            };
            let base_alpha = |kind: CollectiveKind, n: usize| {
                (start.base_latency_us + kind.steps(n) as f64 * link.hop_latency_us) * 1e3
            };
            // (alpha, traffic bytes, measured)
            let pts: Vec<(f64, f64, f64)> = buckets
                .iter()
                .filter(|((i, ..), _)| *i == inter)
                .map(|((_, k, bytes, ranks), ts)| {
                    let mut ts = ts.clone();
                    ts.sort_by(f64::total_cmp);
                    let med = ts[ts.len() / 2];
                    let kind = kind_of(*k);
                    let n = ranks.len();
                    (
                        base_alpha(kind, n),
                        kind.traffic_factor(n) * *bytes as f64,
                        med,
                    )
                })
                .collect();
            let name = if inter { "inter_node" } else { "intra_node" };
            let preset_eff = link.bandwidth_gbps * link.efficiency;
            // A fit far from the preset means the durations are not ring
            // transfers (waiting for peers dominates); then only one factor
            // on the preset's times is fitted, and if even that is far off,
            // the preset is kept.
            let plausible = |s: f64, eff: f64| {
                (0.25..=4.0).contains(&s) && (0.1 * preset_eff..=2.0 * preset_eff).contains(&eff)
            };
            let (scale, eff_gbps, ok) = match fit_alpha_beta(&pts) {
                Some((s, inv_b)) if plausible(s, 1.0 / inv_b) => (s, 1.0 / inv_b, true),
                _ => match fit_factor(&pts, preset_eff) {
                    Some(k) if plausible(k, preset_eff / k) => (k, preset_eff / k, true),
                    _ => (1.0, preset_eff, false),
                },
            };
            let predict = |a: f64, x: f64| scale * a + x / eff_gbps;
            let err = if pts.is_empty() {
                0.0
            } else {
                pts.iter()
                    .map(|&(a, x, t)| ((predict(a, x) - t) / t).abs())
                    .sum::<f64>()
                    / pts.len() as f64
                    * 100.0
            };
            let fitted = Link {
                bandwidth_gbps: link.bandwidth_gbps,
                efficiency: eff_gbps / link.bandwidth_gbps,
                hop_latency_us: link.hop_latency_us * scale,
            };
            if ok {
                if inter {
                    model.inter_node = fitted;
                } else {
                    model.intra_node = fitted;
                    // The fixed cost is shared; it scales with the link the
                    // trace shows most of.
                    model.base_latency_us = start.base_latency_us * scale;
                }
            }
            links.push(LinkCalibration {
                link: name,
                samples: pts.len(),
                effective_gbps: eff_gbps,
                latency_scale: scale,
                mean_abs_error_pct: err,
                calibrated: ok,
            });
        }
        NetworkCalibration {
            links,
            start: start_name.into(),
            model,
        }
    }
}

/// One factor `k` on the preset: `t = k (a + x / B_preset)`, least squares
/// on relative error; `None` without points.
fn fit_factor(pts: &[(f64, f64, f64)], preset_gbps: f64) -> Option<f64> {
    if pts.is_empty() {
        return None;
    }
    let (mut num, mut den) = (0.0, 0.0);
    for &(a, x, t) in pts {
        let m = a + x / preset_gbps;
        let w = 1.0 / (t * t).max(1.0);
        num += w * m * t;
        den += w * m * m;
    }
    (den > 0.0)
        .then(|| num / den)
        .filter(|k| k.is_finite() && *k > 0.0)
}

/// Least squares for `t = s a + x / B` (no intercept) over `(a, x, t)`;
/// `None` unless both coefficients come out positive with at least two
/// distinct traffic sizes.
fn fit_alpha_beta(pts: &[(f64, f64, f64)]) -> Option<(f64, f64)> {
    if pts.len() < 2 {
        return None;
    }
    let (mut saa, mut sax, mut sxx, mut sat, mut sxt) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &(a, x, t) in pts {
        // Relative errors matter: weight each point by 1/t^2.
        let w = 1.0 / (t * t).max(1.0);
        saa += w * a * a;
        sax += w * a * x;
        sxx += w * x * x;
        sat += w * a * t;
        sxt += w * x * t;
    }
    let det = saa * sxx - sax * sax;
    if det.abs() < 1e-30 * saa.max(1.0) * sxx.max(1.0) {
        return None;
    }
    let s = (sat * sxx - sxt * sax) / det;
    let inv_b = (saa * sxt - sax * sat) / det;
    (s > 0.0 && inv_b > 0.0 && s.is_finite() && inv_b.is_finite()).then_some((s, inv_b))
}

/// A network preset by GPU name (`a100`, `h100`, `h200`, `b200`), with its
/// description for reports (`preset h100`).
pub fn network_preset(name: &str) -> Result<(NetworkModel, String), PredictError> {
    GpuSpec::preset(name)
        .map(|g| (g.network, format!("preset {}", g.name)))
        .map_err(|e| PredictError::InvalidNetwork {
            name: None,
            problem: e.to_string(),
        })
}

/// Changes to a preset network, each field left out keeping the preset's
/// value (a `--network` file's content, parsed by the front end).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NetworkOverrides {
    /// The preset the others change (`h100` when `None`).
    pub preset: Option<String>,
    /// GPUs per node.
    pub gpus_per_node: Option<f64>,
    /// The latency every collective pays once, in microseconds.
    pub base_latency_us: Option<f64>,
    /// Changes to the link between GPUs of one node.
    pub intra_node: LinkOverrides,
    /// Changes to the link between nodes.
    pub inter_node: LinkOverrides,
}

/// Changes to one link of a preset network.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LinkOverrides {
    /// Bandwidth per GPU and direction, GB/s.
    pub bandwidth_gbps: Option<f64>,
    /// Achieved share of the bandwidth (at most 1).
    pub efficiency: Option<f64>,
    /// Latency per ring hop, microseconds.
    pub hop_latency_us: Option<f64>,
}

/// The network `overrides` describe, with its description for reports.
/// `name` says where the overrides came from (the `--network` file): errors
/// start with it and the description names it. Every number must be
/// finite and positive.
pub fn network_with(
    overrides: &NetworkOverrides,
    name: &str,
) -> Result<(NetworkModel, String), PredictError> {
    let invalid = |problem: String| PredictError::InvalidNetwork {
        name: Some(name.to_owned()),
        problem,
    };
    let base = overrides.preset.as_deref().unwrap_or("h100");
    let mut net = GpuSpec::preset(base)
        .map_err(|e| invalid(e.to_string()))?
        .network;
    let positive = |x: Option<f64>, key: &str| -> Result<Option<f64>, PredictError> {
        match x {
            Some(f) if !(f.is_finite() && f > 0.0) => {
                Err(invalid(format!("\"{key}\" must be a positive number")))
            }
            x => Ok(x),
        }
    };
    if let Some(n) = positive(overrides.gpus_per_node, "gpus_per_node")? {
        net.gpus_per_node = n as usize;
    }
    if let Some(b) = positive(overrides.base_latency_us, "base_latency_us")? {
        net.base_latency_us = b;
    }
    for (o, link) in [
        (&overrides.intra_node, &mut net.intra_node),
        (&overrides.inter_node, &mut net.inter_node),
    ] {
        if let Some(b) = positive(o.bandwidth_gbps, "bandwidth_gbps")? {
            link.bandwidth_gbps = b;
        }
        if let Some(e) = positive(o.efficiency, "efficiency")? {
            link.efficiency = e.min(1.0);
        }
        if let Some(h) = positive(o.hop_latency_us, "hop_latency_us")? {
            link.hop_latency_us = h;
        }
    }
    Ok((net, format!("file {name} (over preset {base})")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alpha_beta_fit_recovers_a_ring() {
        let net = GpuSpec::h100().network;
        let link = net.intra_node;
        let mut pts = Vec::new();
        for (kind, n) in [
            (CollectiveKind::AllReduce, 4),
            (CollectiveKind::AllGather, 2),
            (CollectiveKind::ReduceScatter, 2),
        ] {
            for bytes in [1u64 << 16, 1 << 22, 1 << 26] {
                let ranks: Vec<usize> = (0..n).collect();
                let t = net.collective_time_ns(kind, bytes, &ranks) * 1.1;
                let a = (net.base_latency_us + kind.steps(n) as f64 * link.hop_latency_us) * 1e3;
                pts.push((a, kind.traffic_factor(n) * bytes as f64, t));
            }
        }
        let (s, inv_b) = fit_alpha_beta(&pts).unwrap();
        assert!((s - 1.1).abs() < 1e-6, "{s}");
        let eff = link.bandwidth_gbps * link.efficiency / 1.1;
        assert!((1.0 / inv_b - eff).abs() / eff < 1e-6);
        assert!(fit_alpha_beta(&pts[..1]).is_none());
    }

    #[test]
    fn network_presets_and_descriptions() {
        let (n, what) = network_preset("b200").unwrap();
        assert_eq!(n, GpuSpec::b200().network);
        assert_eq!(what, "preset b200");
        let e = network_preset("tpu").unwrap_err();
        assert!(e.is_usage());
        assert!(e.to_string().contains("tpu"), "{e}");
        let overrides = NetworkOverrides {
            preset: Some("a100".into()),
            gpus_per_node: Some(4.0),
            inter_node: LinkOverrides {
                bandwidth_gbps: Some(100.0),
                ..Default::default()
            },
            ..Default::default()
        };
        let (n, what) = network_with(&overrides, "net.json").unwrap();
        assert_eq!(what, "file net.json (over preset a100)");
        assert_eq!(n.inter_node.bandwidth_gbps, 100.0);
        assert_eq!(n.intra_node, GpuSpec::a100().network.intra_node);
        assert_eq!(n.gpus_per_node, 4);
        let negative = NetworkOverrides {
            inter_node: LinkOverrides {
                bandwidth_gbps: Some(-1.0),
                ..Default::default()
            },
            ..Default::default()
        };
        let e = network_with(&negative, "net.json").unwrap_err();
        assert_eq!(
            e.to_string(),
            "net.json: \"bandwidth_gbps\" must be a positive number"
        );
        let tpu = NetworkOverrides {
            preset: Some("tpu".into()),
            ..Default::default()
        };
        let e = network_with(&tpu, "net.json").unwrap_err();
        assert!(e.to_string().starts_with("net.json: "), "{e}");
        assert!(matches!(e, PredictError::InvalidNetwork { .. }));
    }

    #[test]
    fn device_names_pick_presets() {
        assert_eq!(gpu_for_device(Some("NVIDIA H100 80GB HBM3")).0.name, "h100");
        assert_eq!(gpu_for_device(Some("NVIDIA A100-SXM4-80GB")).0.name, "a100");
        assert!(!gpu_for_device(Some("Tesla V100")).1);
    }
}
