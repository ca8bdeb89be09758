//! How far a prediction can be trusted: where its GPU time came from, how
//! well the models it used fit the trace, how much of each step's critical
//! path runs through inferred dependencies, what it extrapolates to, and a
//! verdict from documented thresholds (docs/PREDICTION.md, "Confidence").

use lumos_graph::{Graph, Span, TaskId};
use lumos_sim::{critical_path_hops_since, step_spans, timed_hops, Bound, Schedule};

use crate::config::{Coord, Layout};
use crate::discover::{Confidence, GroupClass};
use crate::edits::Prediction;
use crate::models::{gpu_for_device, not_calibrated, LinkCalibration, Source};
use crate::outcome::{Outcome, Steadiness};
use lumos_models::NetworkModel;

/// Modelled GPU time above this share lowers the verdict to medium.
pub const MODELLED_MEDIUM: f64 = 0.10;
/// Modelled GPU time above this share lowers the verdict to low.
pub const MODELLED_LOW: f64 = 0.50;
/// A used model whose mean calibration error (%) exceeds this lowers the
/// verdict to medium.
pub const MODEL_ERROR_MEDIUM_PCT: f64 = 20.0;
/// A used model whose mean calibration error (%) exceeds this lowers the
/// verdict to low.
pub const MODEL_ERROR_LOW_PCT: f64 = 50.0;
/// A step critical path running through inferred dependencies for more
/// than this share of its time lowers the verdict of an edited prediction
/// to medium.
pub const INFERRED_PATH_MEDIUM: f64 = 0.50;
/// This many extrapolations or more lower the verdict to low (one lowers
/// it to medium).
pub const EXTRAPOLATIONS_LOW: usize = 2;

/// Shares of the predicted GPU time by [`Source`], fractions summing to 1
/// (all 0 without GPU time: [`SourceShares::of_time`] tells).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct SourceShares {
    /// Measured durations, unchanged.
    pub measured: f64,
    /// Measured durations changed by a model ratio or a factor.
    pub scaled: f64,
    /// Durations from a model alone.
    pub modelled: f64,
}

impl SourceShares {
    /// The shares, or `None` without predicted GPU time (all three 0: no
    /// share of nothing exists, and 0% measured would read as a finding).
    pub fn of_time(self) -> Option<SourceShares> {
        (self.measured + self.scaled + self.modelled > 0.0).then_some(self)
    }
}

/// One duration model's fit to the trace.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelFit {
    /// `gemm`, or `network <link>` (`intra_node`, `inter_node`).
    pub model: String,
    /// Whether the prediction re-timed work with it.
    pub used: bool,
    /// False when the trace could not calibrate it (preset values).
    pub calibrated: bool,
    /// Points it was fitted on: GEMM kernels for the GEMM curve; for a
    /// network link, (kind, bytes, group) buckets of its collectives (per
    /// (kind, group) when only latency was fitted), not collectives.
    pub samples: usize,
    /// Mean |model - measured| / measured over them, %; `None` without
    /// any (no error to state).
    pub mean_abs_error_pct: Option<f64>,
    /// Why a link the trace ran collectives over is not calibrated (`None`
    /// for a calibrated model, the GEMM curve, or a link never seen).
    pub uncalibrated_why: Option<String>,
}

/// How far a prediction can be trusted: see [`Prediction::confidence`].
#[derive(Debug, Clone, PartialEq)]
pub struct PredictionConfidence {
    /// Where the predicted GPU time came from.
    pub gpu_time: SourceShares,
    /// Every duration model of the baseline, used or not.
    pub models: Vec<ModelFit>,
    /// Per predicted step, the share (0 to 1) of its critical path's time
    /// placed there by inferred dependencies (the slowest stage's path);
    /// `None` for a step whose path has no length (no share of nothing).
    pub inferred_path: Vec<Option<f64>>,
    /// What the prediction extrapolates to beyond the trace, in words.
    pub extrapolations: Vec<String>,
    /// The process groups the prediction re-times whose class discovery
    /// only guessed (low confidence), each with the rule it rests on.
    pub guessed_groups: Vec<String>,
    /// Communication kernels launched before the capture began on a
    /// stream of a group the prediction re-times, which could not be tied
    /// to a collective and so keep their traced durations, in words (each
    /// makes the verdict at most medium).
    pub untied_collectives: Vec<String>,
    /// The parallel degrees the prediction changes when the traced ones
    /// were guessed (no `pg_config` in the trace, `degrees_guessed`), in
    /// words: the verdict is then one level lower.
    pub guessed_degrees: Option<String>,
    /// The verdict.
    pub level: Confidence,
    /// Why it is not high, gravest first (empty for high).
    pub reasons: Vec<String>,
}

impl PredictionConfidence {
    /// The largest of [`Self::inferred_path`]; `None` without a step
    /// whose path has a length.
    pub fn worst_inferred_path(&self) -> Option<f64> {
        self.inferred_path
            .iter()
            .flatten()
            .copied()
            .reduce(f64::max)
    }
}

impl Prediction<'_> {
    /// The confidence of this prediction replayed as `outcome`, given its
    /// steadiness ([`Outcome::steadiness`] against the traced replay).
    pub fn confidence(
        &self,
        outcome: &Outcome,
        steadiness: Option<Steadiness>,
    ) -> PredictionConfidence {
        let identity = self.is_identity();
        let gpu_time = source_shares(outcome);
        let models = model_fits(self, outcome);
        let inferred_path = inferred_path_shares(self, outcome);
        let extrapolations = extrapolations(self);
        let guessed_groups = guessed_groups(self);
        let untied_collectives = crate::edits::untied_unlaunched(self.base, &self.target);
        let mut c = PredictionConfidence {
            gpu_time,
            models,
            inferred_path,
            extrapolations,
            guessed_groups,
            untied_collectives,
            guessed_degrees: guessed_degrees(self),
            level: Confidence::High,
            reasons: Vec::new(),
        };
        let (level, reasons) = verdict(&c, steadiness, identity);
        c.level = level;
        c.reasons = reasons;
        c
    }
}

fn source_shares(outcome: &Outcome) -> SourceShares {
    let by = outcome.job.gpu_time_by_source();
    let total: f64 = by.values().map(|&n| n as f64).sum();
    let share = |s: Source| {
        if total > 0.0 {
            by.get(&s).copied().unwrap_or(0) as f64 / total
        } else {
            0.0
        }
    };
    SourceShares {
        measured: share(Source::Measured),
        scaled: share(Source::Scaled),
        modelled: share(Source::Modelled),
    }
}

/// The baseline's models, each marked used when the prediction changed
/// the configuration or network and re-timed work of its kind (a kernel
/// speed-up alone scales by the user's factor, not by a model).
fn model_fits(p: &Prediction, outcome: &Outcome) -> Vec<ModelFit> {
    let retimed = p.target.config != p.base.config || p.target.network.is_some();
    let (mut compute, mut comm) = (false, false);
    for (t, s) in outcome.job.graph.tasks.iter().zip(&*outcome.job.source) {
        if t.kind.is_gpu() && *s != Source::Measured {
            if t.is_comm() {
                comm = true;
            } else {
                compute = true;
            }
        }
    }
    let links_used = target_links(p);
    let g = &p.base.gemm;
    let mut out = vec![ModelFit {
        model: "gemm".into(),
        used: retimed && compute,
        calibrated: g.fitted,
        samples: g.samples,
        mean_abs_error_pct: g.mean_abs_error_pct,
        uncalibrated_why: None,
    }];
    out.extend(p.base.network.links.iter().map(|l| ModelFit {
        model: format!("network {}", l.link),
        used: retimed && comm && links_used.contains(&l.link),
        calibrated: l.calibrated,
        samples: l.samples,
        mean_abs_error_pct: l.mean_abs_error_pct,
        uncalibrated_why: l.why_uncalibrated(),
    }));
    out
}

/// The first data- and tensor-parallel group of the target, with more
/// than one rank, as (class name, ranks).
fn target_groups(p: &Prediction) -> Vec<(&'static str, GroupClass, Vec<i64>)> {
    let layout = Layout::of(&p.target.config);
    let origin = Coord {
        tp: 0,
        dp: 0,
        pp: 0,
    };
    [
        ("data-parallel", GroupClass::Data),
        ("tensor-parallel", GroupClass::Tensor),
    ]
    .into_iter()
    .map(|(name, class)| (name, class, layout.group(class, origin)))
    .filter(|(_, _, r)| r.len() >= 2)
    .collect()
}

/// The network the target runs on: `--network`'s when given, so that its
/// node size decides which groups cross nodes, else the trace's calibrated
/// one.
fn target_network(p: &Prediction) -> NetworkModel {
    p.target
        .network
        .as_ref()
        .map_or_else(|| p.base.network.model(), |(m, _)| *m)
}

/// The link class `ranks` cross on `net`.
fn link_on(net: &NetworkModel, ranks: &[i64]) -> &'static str {
    let r: Vec<usize> = ranks.iter().map(|&x| x.max(0) as usize).collect();
    if net.spans_nodes(&r) {
        "inter_node"
    } else {
        "intra_node"
    }
}

/// The link class each group of the target crosses.
fn link_of(p: &Prediction, ranks: &[i64]) -> &'static str {
    link_on(&target_network(p), ranks)
}

/// The link `ranks` cross on the target network `net` when the trace
/// never used that link class (`links`, the baseline's calibration). A
/// link the trace ran collectives over but could not calibrate is no
/// extrapolation (the traced collectives ran on it): the model-fit
/// criterion counts it, with why.
fn unseen_link(
    links: &[LinkCalibration],
    net: &NetworkModel,
    ranks: &[i64],
) -> Option<&'static str> {
    let link = link_on(net, ranks);
    (!links
        .iter()
        .any(|l| l.link == link && (l.calibrated || l.seen())))
    .then_some(link)
}

fn target_links(p: &Prediction) -> Vec<&'static str> {
    target_groups(p)
        .iter()
        .map(|(_, _, r)| link_of(p, r))
        .collect()
}

/// A link, a GPU or a group size the trace never showed.
fn extrapolations(p: &Prediction) -> Vec<String> {
    let (b, t) = (&p.base.config, &p.target.config);
    let mut out = Vec::new();
    for (name, traced, target) in [
        ("data-parallel", b.dp, t.dp),
        ("tensor-parallel", b.tp, t.tp),
    ] {
        if target > traced {
            out.push(format!(
                "{name} group of {target} ranks; the trace's had {traced}"
            ));
        }
    }
    if crate::edits::tp_from_one(p.base, t) {
        out.push(format!(
            "tensor-parallel all-reduces added where the trace, at TP 1, ran none: their \
             kernels timed by the network model alone over the group of {} ranks, their place \
             and size by the shapes of the layers, the embedding and the output layer",
            t.tp
        ));
    }
    let changed = |class: GroupClass| match class {
        GroupClass::Data => t.dp != b.dp,
        _ => t.tp != b.tp,
    };
    let net = target_network(p);
    for (name, class, ranks) in target_groups(p) {
        if !changed(class) {
            continue;
        }
        if let Some(link) = unseen_link(&p.base.network.links, &net, &ranks) {
            out.push(format!(
                "{name} collectives over the {link} link, {}",
                not_calibrated(None)
            ));
        }
    }
    if b.microbatches == 1 && t.microbatches > 1 {
        out.push(format!(
            "{} micro-batches copied from a trace of one: the pass's own work told from the \
             step's prologue by its kind, not by a second traced pass",
            t.microbatches
        ));
    }
    let (slotted, own) = (p.sizes_from_envelope, p.sizes_from_own_time);
    if slotted + own > 0 {
        out.push(format!(
            "message sizes of {} re-timed collectives inferred from their timing, not recorded \
             ({slotted} from their slot's lower envelope over the steps, {own} from their own \
             time)",
            slotted + own
        ));
    }
    let retimed = t != b || p.target.network.is_some();
    let device = p
        .base
        .inputs
        .first()
        .and_then(|i| i.ctx.device_name.as_deref());
    if retimed && !gpu_for_device(device).1 {
        out.push(format!(
            "GPU {:?} is not among the presets: {} values used where no calibration applies",
            device.unwrap_or("unknown"),
            p.base.gemm.gpu
        ));
    }
    if let Some((net, what)) = &p.target.network {
        // The traced system's network is its GPU's preset: a target equal
        // to it (`--network a100` on an A100 trace) extrapolates nothing.
        // Before, the device name was searched for the description
        // ("preset a100"), which no device name holds, so every
        // `--network` counted as another system's.
        let (spec, known) = gpu_for_device(device);
        if !(known && spec.network == *net) {
            out.push(format!(
                "target network {what}, not the traced system's ({})",
                device.unwrap_or("unknown GPU")
            ));
        }
    }
    out
}

/// The groups an edited degree re-times (the data-parallel group's under
/// `--dp`, the tensor-parallel group's under `--tp`) that discovery
/// classified by a guess, each with the rule it rests on: the whole
/// prediction is then about collectives that may serve something else
/// (the tensor-parallel all-reduces of an inference trace read as a
/// data-parallel world group).
fn guessed_groups(p: &Prediction) -> Vec<String> {
    let (b, t) = (&p.base.config, &p.target.config);
    let mut out: Vec<String> = Vec::new();
    for (class, name, traced, target) in [
        (GroupClass::Data, "data-parallel", b.dp, t.dp),
        (GroupClass::Tensor, "tensor-parallel", b.tp, t.tp),
    ] {
        if traced == target {
            continue;
        }
        for s in &p.base.structures {
            let guessed = (s.report.groups.iter())
                .filter(|g| g.class == class && g.confidence == Confidence::Low);
            for g in guessed {
                let line = format!(
                    "{name} edit {traced} -> {target} re-times process group {} ({} tasks: {}), \
                     classified {} by a guess (low confidence): {}",
                    g.name,
                    g.tasks,
                    g.collectives.join(", "),
                    class.as_str(),
                    g.basis
                );
                if !out.contains(&line) {
                    out.push(line);
                }
            }
        }
    }
    out
}

/// The parallel degrees `p` changes (dp, tp, pp), when discovery guessed
/// the traced ones (a trace without `pg_config`): the edit scales from
/// degrees the trace does not state. `None` when no degree changes or
/// none was guessed.
fn guessed_degrees(p: &Prediction) -> Option<String> {
    let (b, t) = (&p.base.config, &p.target.config);
    let changed: Vec<String> = [("dp", b.dp, t.dp), ("tp", b.tp, t.tp), ("pp", b.pp, t.pp)]
        .into_iter()
        .filter(|&(_, traced, target)| traced != target)
        .map(|(name, traced, target)| format!("{name} {traced} -> {target}"))
        .collect();
    if changed.is_empty() {
        return None;
    }
    let guessed = (p.base.structures.iter()).find_map(|s| s.config.degrees_guessed.as_deref())?;
    Some(format!(
        "{} changed from traced degrees that were guessed, one level lower ({guessed})",
        changed.join(", ")
    ))
}

/// Per predicted step, the inferred share of the critical path of the
/// stage whose step is the longest.
fn inferred_path_shares(p: &Prediction, outcome: &Outcome) -> Vec<Option<f64>> {
    let job = &outcome.job;
    let mut per_stage: Vec<Vec<(i64, Option<f64>)>> = Vec::new();
    for (k, part) in job.parts.iter().enumerate() {
        let rows = if job.coupled {
            let steps = job.step_parts[k].clone();
            stage_shares(&job.graph, &outcome.schedule, steps, Some(part.clone()))
        } else {
            // Stages replayed alone: the joint schedule holds each stage's
            // bounds as its own replay numbered them.
            let local = local_schedule(&outcome.schedule, part.clone());
            let g = &p.stages[k].graph;
            stage_shares(g, &local, 0..g.steps.len() as u32, None)
        };
        per_stage.push(rows);
    }
    let n = per_stage.iter().map(Vec::len).max().unwrap_or(0);
    (0..n)
        .map(|i| {
            per_stage
                .iter()
                .filter_map(|s| s.get(i))
                .max_by_key(|(len, _)| *len)
                .and_then(|&(_, share)| share)
        })
        .collect()
}

/// The part `part` of a schedule whose bounds are numbered per part.
fn local_schedule(s: &Schedule, part: std::ops::Range<u32>) -> Schedule {
    let r = part.start as usize..part.end as usize;
    Schedule::new(
        s.start_ns[r.clone()].to_vec(),
        s.end_ns[r.clone()].to_vec(),
        s.bound_by[r].to_vec(),
        s.waits
            .iter()
            .filter(|w| part.contains(&w.task.0))
            .map(|w| lumos_sim::BlockingWait {
                task: TaskId(w.task.0 - part.start),
                ..*w
            })
            .collect(),
    )
}

/// (step length, inferred share) of each step in `steps` of `g`; a graph
/// without steps gives one row over the tasks of `part` (all of `g` when
/// `None`).
fn stage_shares(
    g: &Graph,
    s: &Schedule,
    steps: std::ops::Range<u32>,
    part: Option<std::ops::Range<u32>>,
) -> Vec<(i64, Option<f64>)> {
    if g.steps.is_empty() || steps.is_empty() {
        let part = part.unwrap_or(0..g.tasks.len() as u32);
        let tasks: Vec<TaskId> = part.map(TaskId).collect();
        let span = Span {
            start_ns: tasks.iter().map(|t| s.start_ns[t.idx()]).min().unwrap_or(0),
            end_ns: tasks.iter().map(|t| s.end_ns[t.idx()]).max().unwrap_or(0),
        };
        return path_share(g, s, &tasks, span).into_iter().collect();
    }
    let spans = step_spans(g, s, None);
    steps
        .filter_map(|i| {
            let span = *spans.get(i as usize)?;
            path_share(g, s, &g.steps[i as usize].tasks, span)
        })
        .collect()
}

/// The critical path of one step (its `tasks` over `span`): its length
/// and the share of it placed by inferred dependencies (a hop reached
/// through one: the wait for it and its own time on the path).
fn path_share(g: &Graph, s: &Schedule, tasks: &[TaskId], span: Span) -> Option<(i64, Option<f64>)> {
    let key = |t: &&TaskId| (s.end_ns[t.idx()], std::cmp::Reverse(**t));
    let last = *tasks
        .iter()
        .filter(|t| s.end_ns[t.idx()] <= span.end_ns)
        .max_by_key(key)
        .or_else(|| tasks.iter().max_by_key(key))?;
    let (from, to) = (span.start_ns, s.end_ns[last.idx()].max(span.start_ns));
    let hops = critical_path_hops_since(g, s, last, from);
    let clip = |a: i64, b: i64| b.min(to).saturating_sub(a.max(from)).max(0);
    let mut prev_anchor = from;
    let mut inferred = 0i64;
    for h in timed_hops(g, s, &hops) {
        let through_inferred = match h.hop.bound {
            Bound::Edge(e) => g.edges.get(e as usize).is_some_and(|e| e.inferred),
            Bound::Runtime { dep, .. } => {
                g.runtime_deps.get(dep as usize).is_some_and(|d| d.inferred)
            }
            _ => false,
        };
        if through_inferred {
            inferred = inferred.saturating_add(clip(prev_anchor, h.anchor_ns));
        }
        prev_anchor = h.anchor_ns;
    }
    let length = to - from;
    // A path of no length has no share (it was 0).
    Some((
        length,
        (length > 0).then(|| (inferred as f64 / length as f64).min(1.0)),
    ))
}

/// The verdict and its reasons: the lowest level any criterion gives, and
/// every criterion short of high, gravest first. The inferred share of the critical path and an
/// unknown steadiness count only for an edited prediction: on the traced
/// configuration the replay reproduces the measured run with those edges.
fn verdict(
    c: &PredictionConfidence,
    steadiness: Option<Steadiness>,
    identity: bool,
) -> (Confidence, Vec<String>) {
    let mut found: Vec<(Confidence, String)> = Vec::new();
    match steadiness {
        Some(s) if s.drifting => found.push((
            Confidence::Low,
            format!(
                "the predicted steps drift (a step up to {:.1}% of the steady-state step from the median step)",
                s.worst_deviation * 100.0
            ),
        )),
        None if !identity => found.push((
            Confidence::Medium,
            "fewer than three steps: whether the prediction is steady is unknown".into(),
        )),
        _ => {}
    }
    // Without GPU time every share is 0: none over a limit.
    let modelled = c.gpu_time.modelled;
    for (limit, level) in [
        (MODELLED_LOW, Confidence::Low),
        (MODELLED_MEDIUM, Confidence::Medium),
    ] {
        if modelled > limit {
            found.push((
                level,
                format!(
                    "{:.0}% of the predicted GPU time is modelled (over {:.0}%)",
                    modelled * 100.0,
                    limit * 100.0
                ),
            ));
            break;
        }
    }
    for m in c.models.iter().filter(|m| m.used) {
        if !m.calibrated {
            found.push((
                Confidence::Medium,
                format!(
                    "{} model {}",
                    m.model,
                    not_calibrated(m.uncalibrated_why.as_deref())
                ),
            ));
            continue;
        }
        for (limit, level) in [
            (MODEL_ERROR_LOW_PCT, Confidence::Low),
            (MODEL_ERROR_MEDIUM_PCT, Confidence::Medium),
        ] {
            // No error (nothing fitted) exceeds no limit.
            if let Some(e) = m.mean_abs_error_pct.filter(|&e| e > limit) {
                found.push((
                    level,
                    format!(
                        "{} model fits the trace with {e:.0}% mean error (over {limit:.0}%)",
                        m.model
                    ),
                ));
                break;
            }
        }
    }
    // A group classified by a guess: what the edit re-times may not be
    // what it means to re-time (docs/PREDICTION.md section 1.5).
    match c.guessed_groups.len() {
        0 => {}
        n => found.push((
            Confidence::Low,
            format!(
                "{n} re-timed process group{} classified by a guess (low confidence)",
                if n == 1 { "" } else { "s" }
            ),
        )),
    }
    // Kernels that may be the edited group's but kept their traced time:
    // part of what the edit changes is missing from the prediction.
    for u in &c.untied_collectives {
        found.push((Confidence::Medium, u.clone()));
    }
    // Paths of no length have no share through inferred dependencies.
    let over = |&x: &f64| !identity && x > INFERRED_PATH_MEDIUM;
    if let Some(inferred) = c.worst_inferred_path().filter(over) {
        found.push((
            Confidence::Medium,
            format!(
                "{:.0}% of a step's critical path runs through inferred dependencies \
                 (over {:.0}%)",
                inferred * 100.0,
                INFERRED_PATH_MEDIUM * 100.0
            ),
        ));
    }
    match c.extrapolations.len() {
        0 => {}
        n => found.push((
            if n >= EXTRAPOLATIONS_LOW {
                Confidence::Low
            } else {
                Confidence::Medium
            },
            format!(
                "{n} extrapolation{} beyond the trace",
                if n == 1 { "" } else { "s" }
            ),
        )),
    }
    // The gravest reasons first; the order among equals is the checks'.
    found.sort_by_key(|(l, _)| *l);
    let level = found.first().map_or(Confidence::High, |(l, _)| *l);
    let low = found.iter().filter(|(l, _)| *l == Confidence::Low).count();
    let mut reasons: Vec<String> = found.into_iter().map(|(_, r)| r).collect();
    // Degrees read from the trace's group sizes alone: every criterion
    // above may hold and the edit still scale the wrong parallelism, so
    // the verdict drops a level (at most to low), its reason first where
    // it lowered it, after the low ones where it was low already.
    let level = match &c.guessed_degrees {
        Some(why) => {
            let (level, at) = match level {
                Confidence::High => (Confidence::Medium, 0),
                Confidence::Medium => (Confidence::Low, 0),
                Confidence::Low => (Confidence::Low, low),
            };
            reasons.insert(at, why.clone());
            level
        }
        None => level,
    };
    (level, reasons)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clean() -> PredictionConfidence {
        PredictionConfidence {
            guessed_degrees: None,
            gpu_time: SourceShares {
                measured: 0.9,
                scaled: 0.1,
                modelled: 0.0,
            },
            models: vec![ModelFit {
                model: "gemm".into(),
                used: true,
                calibrated: true,
                samples: 10,
                mean_abs_error_pct: Some(5.0),
                uncalibrated_why: None,
            }],
            inferred_path: vec![Some(0.7), Some(0.2)],
            extrapolations: Vec::new(),
            guessed_groups: Vec::new(),
            untied_collectives: Vec::new(),
            level: Confidence::High,
            reasons: Vec::new(),
        }
    }

    fn steady(drifting: bool) -> Option<Steadiness> {
        Some(Steadiness {
            steady_step_ns: 100,
            replayed_steady_step_ns: 100,
            worst_deviation: if drifting { 0.5 } else { 0.01 },
            noise: Some(0.01),
            drifting,
        })
    }

    #[test]
    fn guessed_degrees_lower_the_verdict_by_one_level() {
        let mut c = clean();
        c.guessed_degrees = Some("dp 8 -> 16 changed from traced degrees that were guessed".into());
        let (level, reasons) = verdict(&c, steady(false), true);
        assert_eq!(level, Confidence::Medium);
        assert_eq!(
            reasons[0],
            "dp 8 -> 16 changed from traced degrees that were guessed"
        );
        // Medium (fewer than three steps) becomes low, low stays low.
        assert_eq!(verdict(&c, None, false).0, Confidence::Low);
        let (level, reasons) = verdict(&c, steady(true), true);
        assert_eq!(level, Confidence::Low);
        assert!(reasons[0].contains("drift"), "{reasons:?}");
        assert!(reasons[1].contains("guessed"), "{reasons:?}");
    }

    #[test]
    fn each_threshold_lowers_the_verdict_with_its_reason() {
        // The inferred path counts only under an edit.
        assert_eq!(verdict(&clean(), steady(false), true).0, Confidence::High);
        let (level, reasons) = verdict(&clean(), steady(false), false);
        assert_eq!(level, Confidence::Medium);
        assert!(
            reasons[0].contains("70% of a step's critical path"),
            "{reasons:?}"
        );
        assert_eq!(verdict(&clean(), None, true).0, Confidence::High);
        assert_eq!(verdict(&clean(), None, false).0, Confidence::Medium);

        let (level, reasons) = verdict(&clean(), steady(true), true);
        assert_eq!(level, Confidence::Low);
        assert!(reasons[0].contains("drift"), "{reasons:?}");

        let mut c = clean();
        c.gpu_time.modelled = 0.2;
        assert_eq!(verdict(&c, steady(false), true).0, Confidence::Medium);
        c.gpu_time.modelled = 0.6;
        assert_eq!(verdict(&c, steady(false), true).0, Confidence::Low);

        let mut c = clean();
        c.models[0].mean_abs_error_pct = Some(30.0);
        assert_eq!(verdict(&c, steady(false), true).0, Confidence::Medium);
        c.models[0].mean_abs_error_pct = Some(108.0);
        assert_eq!(verdict(&c, steady(false), true).0, Confidence::Low);
        // An unused model's error does not count.
        c.models[0].used = false;
        assert_eq!(verdict(&c, steady(false), true).0, Confidence::High);
        c.models[0].used = true;
        c.models[0].calibrated = false;
        assert_eq!(verdict(&c, steady(false), true).0, Confidence::Medium);

        let mut c = clean();
        c.extrapolations.push("a".into());
        assert_eq!(verdict(&c, steady(false), true).0, Confidence::Medium);
        c.extrapolations.push("b".into());
        let (level, reasons) = verdict(&c, steady(false), false);
        assert_eq!(level, Confidence::Low);
        // Every reason, gravest first.
        assert_eq!(reasons.len(), 2, "{reasons:?}");
        assert!(reasons[0].contains("2 extrapolations"), "{reasons:?}");

        // A re-timed group classified by a guess: low, saying which.
        let mut c = clean();
        c.guessed_groups
            .push("data-parallel edit 8 -> 2 re-times process group -".into());
        let (level, reasons) = verdict(&c, steady(false), true);
        assert_eq!(level, Confidence::Low);
        assert_eq!(
            reasons[0], "1 re-timed process group classified by a guess (low confidence)",
            "{reasons:?}"
        );
    }

    fn net(gpus_per_node: usize) -> NetworkModel {
        let link = lumos_models::Link {
            bandwidth_gbps: 100.0,
            efficiency: 0.8,
            hop_latency_us: 1.0,
        };
        NetworkModel {
            intra_node: link,
            inter_node: link,
            gpus_per_node,
            base_latency_us: 5.0,
            multi_rail: false,
        }
    }

    fn calibrated(link: &'static str) -> LinkCalibration {
        LinkCalibration {
            link,
            samples: 4,
            effective_gbps: 80.0,
            latency_scale: 1.0,
            mean_abs_error_pct: Some(3.0),
            calibrated: true,
            method: "alpha_beta",
            collectives: 4,
            unsized_collectives: 0,
            latency_calibrated: true,
        }
    }

    #[test]
    fn the_target_networks_node_size_decides_the_link() {
        // A trace of four GPUs per node calibrated only its NVLink; a group
        // of eight crosses nodes there, but fits in one node of eight.
        let links = [calibrated("intra_node")];
        let group: Vec<i64> = (0..8).collect();
        assert_eq!(unseen_link(&links, &net(4), &group), Some("inter_node"));
        assert_eq!(unseen_link(&links, &net(8), &group), None);
        assert_eq!(link_on(&net(8), &group), "intra_node");
        // A link the trace never used is reported, calibrated or not...
        let never = [LinkCalibration {
            calibrated: false,
            collectives: 0,
            ..calibrated("intra_node")
        }];
        assert_eq!(unseen_link(&never, &net(8), &group), Some("intra_node"));
        // ...but one its collectives ran over, uncalibrated (a fit too far
        // from the preset), is no extrapolation: it says why instead.
        let used = [LinkCalibration {
            calibrated: false,
            method: "preset",
            ..calibrated("intra_node")
        }];
        assert_eq!(unseen_link(&used, &net(8), &group), None);
        let why = used[0].why_uncalibrated().unwrap();
        assert!(why.contains("fit no ring model near the preset"), "{why}");
    }

    /// A traced baseline of `config` (TP, PP, DP, micro-batches) whose
    /// first data-parallel collective was launched before the capture and
    /// could not be tied to a launched one (it keeps its traced time).
    fn with_an_untied_collective(config: [usize; 4]) -> crate::Baseline {
        let mut base = crate::testutil::baseline("gpt-tiny", None, config);
        let c = (base.structures[0].comms.iter_mut())
            .find(|c| c.class == GroupClass::Data)
            .unwrap();
        (c.launched, c.class) = (false, GroupClass::Other);
        base
    }

    const UNTIED: &str = "launched before the capture began on a stream the data-parallel";

    /// The note and the verdict of a prediction that re-times the group
    /// whose stream the untied collective shares.
    fn untied_is_said(p: &crate::Prediction<'_>) -> PredictionConfidence {
        assert!(p.notes.iter().any(|n| n.contains(UNTIED)), "{:?}", p.notes);
        let out = p.simulate().unwrap();
        let c = p.confidence(&out, steady(false));
        assert_eq!(c.untied_collectives.len(), 1, "{c:?}");
        assert!(c.level <= Confidence::Medium, "{c:?}");
        c
    }

    /// A collective launched before the capture that could not be tied to
    /// a launched one keeps its traced time: an edit of the group whose
    /// stream it shares says so in its assumptions and is not high.
    #[test]
    fn collectives_not_tied_to_a_group_are_said_and_lower_the_verdict() {
        let base = with_an_untied_collective([1, 1, 2, 2]);
        let c = untied_is_said(&base.identity().with_dp(4).unwrap());
        assert!(c.reasons.iter().any(|r| r.contains(UNTIED)), "{c:?}");
        // Another edit does not re-time the group: nothing to say.
        let k = base
            .identity()
            .with_kernel_scale("class:gemm=0.5".parse().unwrap())
            .unwrap();
        assert!(!k.notes.iter().any(|n| n.contains(UNTIED)));
        let out = k.simulate().unwrap();
        assert!(k
            .confidence(&out, steady(false))
            .untied_collectives
            .is_empty());
    }

    /// A pipeline edit re-times the data-parallel collectives too (their
    /// group's ranks in the target layout): an untied collective on their
    /// stream is said there as well. Before, only data- and
    /// tensor-parallel edits said so.
    #[test]
    fn collectives_not_tied_to_a_group_are_said_under_a_pipeline_edit() {
        let base = with_an_untied_collective([1, 2, 2, 4]);
        untied_is_said(&base.identity().with_pp(1).unwrap());
    }
}
