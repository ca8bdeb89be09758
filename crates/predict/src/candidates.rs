//! The traced ranks a [`Baseline`](crate::Baseline) is made of, given one
//! at a time. Only one rank stands for each pipeline stage (the lowest),
//! so a rank that can no longer be that one gives up its graph as soon as
//! it is known: every rank of a job of thousands can be given, and at most
//! one graph per stage is held, plus those of stages discovery could not
//! settle alone (they are looked at again with another stage's layer
//! blocks, so their stage is not known until every rank was given).

use std::collections::HashMap;

use lumos_graph::{Graph, LeftOut, LeftOutReason, Measured};

use crate::baseline::Input;
use crate::context::TraceContext;
use crate::discover::{discover, discover_with_hint, one_layer_hint, LayerHint, Structure};
use crate::error::PredictError;
use crate::plan::StageRole;
use crate::DiscoveredConfig;

/// A traced rank and what discovery found in it on its own
/// ([`Discovered::new`]): the step of a baseline that needs no other rank,
/// which callers may run for several ranks in parallel.
pub struct Discovered {
    pub(crate) input: Input,
    pub(crate) structure: Structure,
}

impl Discovered {
    /// Runs discovery on `input`.
    pub fn new(input: Input) -> Discovered {
        let structure = discover(&input.graph, &input.measured, &input.ctx);
        Discovered { input, structure }
    }

    /// The rank.
    pub fn input(&self) -> &Input {
        &self.input
    }

    /// What discovery found in it on its own.
    pub fn structure(&self) -> &Structure {
        &self.structure
    }
}

/// A traced rank lent, not given: the parts of an [`Input`] borrowed from
/// a caller that keeps them ([`Candidates::push_lent`]).
#[derive(Clone, Copy)]
pub struct LentInput<'a> {
    /// A name for reports (the file).
    pub name: &'a str,
    /// Its graph.
    pub graph: &'a Graph,
    /// Its measured times.
    pub measured: &'a Measured,
    /// Its metadata.
    pub ctx: &'a TraceContext,
}

impl LentInput<'_> {
    /// The rank's own copy, for [`Candidates::push_lent`] to hold.
    pub fn to_input(&self) -> Input {
        Input {
            name: self.name.to_owned(),
            graph: self.graph.clone(),
            measured: self.measured.clone(),
            ctx: self.ctx.clone(),
        }
    }
}

/// What discovery finds in `lent` on its own, as [`Discovered::new`] finds
/// it in an owned input; several ranks may be discovered in parallel.
pub fn discover_lent(lent: &LentInput<'_>) -> Structure {
    discover(lent.graph, lent.measured, lent.ctx)
}

/// The traced ranks given for a baseline so far, in order, each
/// discovered. Push every rank with [`Candidates::push`], then make the
/// baseline with [`Baseline::of`](crate::Baseline::of); the result is the
/// one [`Baseline::new`](crate::Baseline::new) makes of the same ranks.
#[derive(Default)]
pub struct Candidates {
    entries: Vec<Entry>,
    /// The layer blocks of the first rank that showed both, for stages
    /// that repeat none of their own.
    first_hint: Option<LayerHint>,
    /// The first rank's configuration, kept should it be left out.
    first_config: Option<DiscoveredConfig>,
    /// Per stage, the held settled rank that stands for it so far.
    lowest: HashMap<u32, usize>,
    /// The ranks given that hold no task, in order: left out, as a job's
    /// assembly leaves them out (`lumos_graph::assemble`), so that the
    /// other ranks are predicted; only when every rank given is one of
    /// them is there nothing to predict from. Kept apart before their
    /// degrees (none found) would make the ranks "not one job".
    without_tasks: Vec<LeftOut>,
    /// Each entry's position among all the ranks given (those without
    /// tasks included), which is what a front end's per-file lists are
    /// indexed by.
    positions: Vec<usize>,
}

/// A rank given, held whole or left out.
pub(crate) enum Entry {
    /// Boxed: a left-out rank's summary is a twentieth of its size.
    Held(Box<Discovered>),
    /// Left out: another settled rank of its stage has a lower rank.
    LeftOut(Summary),
}

/// What the checks between ranks read of a rank.
pub(crate) struct Summary {
    pub name: String,
    pub rank: u32,
    /// The world size the rank records, if any.
    pub world_size: Option<u32>,
    /// The trace states no rank: [`Self::rank`] is the 0 taken for it.
    pub rank_unstated: bool,
    /// Tensor-, data- and pipeline-parallel degrees (1 when not found).
    pub degrees: (u32, u32, u32),
    pub stage: u32,
    pub role: StageRole,
    /// The GPU the rank ran on, as its trace names it, if it does.
    pub device: Option<String>,
}

impl Summary {
    /// The summary of `input`, given at `index`, found to be `s`.
    pub fn of(input: &Input, s: &Structure, index: usize) -> Summary {
        Summary::of_named(
            &input.name,
            (
                input.ctx.rank,
                input.ctx.world_size,
                input.ctx.rank_unstated,
            ),
            input.ctx.device_name.as_deref(),
            s,
            index,
        )
    }

    /// The summary of the rank `rank` (of the world size it records; the
    /// flag when the trace states no rank) named `name`, run on `device`, given at `index`, found to be `s`. A
    /// rank whose stage was not found stands for a stage of its own (its
    /// index); one whose role was not found takes the role of its stage.
    fn of_named(
        name: &str,
        (rank, world_size, rank_unstated): (u32, Option<u32>, bool),
        device: Option<&str>,
        s: &Structure,
        index: usize,
    ) -> Summary {
        let c = &s.config;
        let degrees = (c.tp.unwrap_or(1), c.dp.unwrap_or(1), c.pp.unwrap_or(1));
        Summary {
            name: name.to_owned(),
            rank,
            world_size,
            rank_unstated,
            degrees,
            stage: c.stage.unwrap_or(index as u32),
            role: StageRole::from_report(&s.report.stage_role)
                .unwrap_or_else(|| StageRole::of(c.stage.unwrap_or(0), degrees.2)),
            device: device.map(str::to_owned),
        }
    }
}

/// Whether discovery could not settle the rank alone: its stage repeats
/// no layer block of its own.
fn unsettled(s: &Structure) -> bool {
    crate::discover::blocked(s)
}

/// Whether a rank found to be `s` is held until the last rank is given,
/// whatever the ranks after it: one discovery could not settle alone, or
/// one whose pipeline stage was not found (it stands for a stage of its
/// own). A caller that lends its ranks ([`Candidates::push_lent`]) would
/// copy every such rank.
pub fn held_to_the_end(s: &Structure) -> bool {
    unsettled(s) || s.config.stage.is_none()
}

impl Candidates {
    /// No rank yet.
    pub fn new() -> Candidates {
        Candidates::default()
    }

    /// Every one of `inputs` discovered and pushed, in order.
    pub fn discover_all(inputs: Vec<Input>) -> Candidates {
        let mut candidates = Candidates::new();
        for input in inputs {
            candidates.push(Discovered::new(input));
        }
        candidates
    }

    /// Ranks given so far (those without tasks included).
    pub fn len(&self) -> usize {
        self.entries.len() + self.without_tasks.len()
    }

    /// True before the first rank.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The ranks given so far that hold no task, in order: they are left
    /// out of the prediction ([`Baseline::left_out`](crate::Baseline::left_out)).
    pub fn left_out(&self) -> &[LeftOut] {
        &self.without_tasks
    }

    /// Ranks whose graph is held: at most one per stage, plus the ranks
    /// discovery could not settle alone.
    pub fn held(&self) -> usize {
        let held = |e: &&Entry| matches!(e, Entry::Held(_));
        self.entries.iter().filter(held).count()
    }

    /// Adds the next rank. If another settled rank of its stage has a
    /// lower rank (or the same, given earlier), this one is left out now;
    /// if it is lower than the one standing for its stage, that one is.
    /// A rank that holds no task is left out ([`Candidates::left_out`]).
    pub fn push(&mut self, d: Discovered) {
        let Discovered { input, structure } = d;
        if self.without_tasks(&input.name, input.ctx.rank, &input.graph) {
            return;
        }
        let (name, rank) = (input.name.clone(), input.ctx.rank);
        let (world_size, unstated) = (input.ctx.world_size, input.ctx.rank_unstated);
        let device = input.ctx.device_name.clone();
        self.push_parts(
            &name,
            (rank, world_size, unstated),
            device.as_deref(),
            structure,
            || input,
        );
    }

    /// Adds the next rank as [`push`](Candidates::push) does, lent:
    /// `structure` is what [`discover_lent`] found in `lent`, and `own`
    /// makes the rank's [`Input`] (a copy of `lent`) only if the rank is
    /// held. A rank left out at once is never copied, so a caller that
    /// keeps its ranks for other work (a joint replay) lends them all and
    /// copies at most one per stage, plus those discovery could not settle
    /// alone.
    pub fn push_lent(
        &mut self,
        lent: &LentInput<'_>,
        structure: Structure,
        own: impl FnOnce() -> Input,
    ) {
        if self.without_tasks(lent.name, lent.ctx.rank, lent.graph) {
            return;
        }
        self.push_parts(
            lent.name,
            (lent.ctx.rank, lent.ctx.world_size, lent.ctx.rank_unstated),
            lent.ctx.device_name.as_deref(),
            structure,
            own,
        );
    }

    /// Whether `graph` (rank `rank`, named `name`) holds no task; if so,
    /// it is left out, kept among [`Candidates::left_out`].
    fn without_tasks(&mut self, name: &str, rank: u32, graph: &Graph) -> bool {
        if !graph.tasks.is_empty() {
            return false;
        }
        self.without_tasks.push(LeftOut {
            rank,
            path: name.into(),
            reason: LeftOutReason::NoTasks,
        });
        true
    }

    /// [`push`](Candidates::push) of rank `rank` (of the world size it
    /// records) named `name`, run on `device`, found to be `structure`;
    /// `input` is called only if the rank is held.
    fn push_parts(
        &mut self,
        name: &str,
        (rank, world_size, unstated): (u32, Option<u32>, bool),
        device: Option<&str>,
        structure: Structure,
        input: impl FnOnce() -> Input,
    ) {
        let index = self.entries.len();
        self.positions.push(self.len());
        if index == 0 {
            self.first_config = Some(structure.config.clone());
        }
        if self.first_hint.is_none() {
            self.first_hint = structure.layer_hint();
        }
        let held = |structure| {
            let input = input();
            debug_assert_eq!(input.ctx.rank, rank, "the input is the rank given");
            Entry::Held(Box::new(Discovered { input, structure }))
        };
        if unsettled(&structure) {
            self.entries.push(held(structure));
            return;
        }
        let summary = Summary::of_named(
            name,
            (rank, world_size, unstated),
            device,
            &structure,
            index,
        );
        match self.lowest.get(&summary.stage).copied() {
            Some(j) if self.rank_of(j) <= summary.rank => {
                self.entries.push(Entry::LeftOut(summary));
            }
            standing => {
                if let Some(j) = standing {
                    self.leave_out(j);
                }
                self.lowest.insert(summary.stage, index);
                self.entries.push(held(structure));
            }
        }
    }

    fn rank_of(&self, j: usize) -> u32 {
        match &self.entries[j] {
            Entry::Held(d) => d.input.ctx.rank,
            Entry::LeftOut(s) => s.rank,
        }
    }

    /// Frees the graph of settled entry `j`, keeping its summary.
    fn leave_out(&mut self, j: usize) {
        if let Entry::Held(d) = &self.entries[j] {
            self.entries[j] = Entry::LeftOut(Summary::of(&d.input, &d.structure, j));
        }
    }

    /// The ranks that stand for their stages, one per stage, after the
    /// unsettled ranks were discovered again with another stage's blocks;
    /// the note on those left out goes to `notes`. An error when every
    /// rank holds no task (there is nothing to predict from; the first is
    /// named), or when the ranks' parallel degrees differ (they are then
    /// not of one job).
    pub(crate) fn keep(self, notes: &mut Vec<String>) -> Result<Kept, PredictError> {
        let Candidates {
            mut entries,
            first_hint,
            first_config,
            without_tasks,
            positions,
            ..
        } = self;
        if entries.is_empty() {
            return Err(match without_tasks.first() {
                Some(l) => PredictError::NoTasks {
                    input: l.path.display().to_string(),
                },
                None => PredictError::NoInputs,
            });
        }
        let mut unsettled_ranks: Vec<(&Input, &mut Structure)> = (entries.iter_mut())
            .filter_map(|e| match e {
                Entry::Held(d) if unsettled(&d.structure) => {
                    let Discovered { input, structure } = &mut **d;
                    Some((&*input, structure))
                }
                _ => None,
            })
            .collect();
        retry_unsettled(&mut unsettled_ranks, first_hint.as_ref());
        let first_config = match &entries[0] {
            Entry::Held(d) => d.structure.config.clone(),
            Entry::LeftOut(_) => first_config.unwrap_or_default(),
        };
        let (held, summaries): (Vec<Option<Discovered>>, Vec<Summary>) =
            (entries.into_iter().enumerate())
                .map(|(i, e)| match e {
                    Entry::Held(d) => {
                        let summary = Summary::of(&d.input, &d.structure, i);
                        (Some(*d), summary)
                    }
                    Entry::LeftOut(s) => (None, s),
                })
                .unzip();
        one_job(&summaries)?;
        let mut kept = one_rank_per_stage(held, &summaries, first_config, notes);
        for g in &mut kept.given {
            *g = positions[*g];
        }
        kept.left_out = without_tasks;
        Ok(kept)
    }
}

/// The traced ranks kept, one per stage, with what was found in them.
pub(crate) struct Kept {
    pub inputs: Vec<Input>,
    /// Each kept rank's position among those given (those without tasks
    /// included).
    pub given: Vec<usize>,
    pub structures: Vec<Structure>,
    pub roles: Vec<StageRole>,
    pub stages: Vec<u32>,
    /// The first rank's configuration (given first, kept or not).
    pub first_config: DiscoveredConfig,
    /// How many ranks holding tasks were given.
    pub given_count: usize,
    /// The ranks given that hold no task, left out.
    pub left_out: Vec<LeftOut>,
}

/// Discovery of the unsettled ranks again. A stage with one layer per
/// pass repeats no block of its own: the blocks another stage showed
/// (`hint`) are looked for instead, and where no stage repeats one (every
/// stage runs one layer per pass), the stages' own passes are the
/// candidates ([`one_layer_hint`]), shortest first: a middle stage's is
/// the layer alone, and it is taken when it unblocks every unsettled
/// rank, of at least two distinct stages.
pub(crate) fn retry_unsettled(ranks: &mut [(&Input, &mut Structure)], hint: Option<&LayerHint>) {
    if ranks.is_empty() {
        return;
    }
    if let Some(hint) = hint {
        retry_with_hint(ranks, hint, false);
        return;
    }
    // One stage's candidate may be an end stage's superset of the layer
    // (with the embedding or the loss), which its own trace cannot tell
    // apart; one that every unsettled rank of two or more distinct stages
    // runs is the layer: the first stage's has the embedding the last
    // stage lacks, and the other way round.
    let mut stages: Vec<Option<u32>> = ranks.iter().map(|(_, s)| s.config.stage).collect();
    stages.sort_unstable();
    stages.dedup();
    if stages.len() < 2 || stages.contains(&None) {
        return;
    }
    let mut candidates: Vec<LayerHint> = (ranks.iter())
        .filter_map(|(i, _)| one_layer_hint(&i.graph, &i.measured))
        .collect();
    candidates.sort_by_key(|h| (h.backward.len() + h.forward.len(), h.backward.clone()));
    candidates.dedup();
    for hint in &candidates {
        if retry_with_hint(ranks, hint, true) {
            break;
        }
    }
}

/// Discovers `ranks` again with `hint`, keeping each result that settles
/// its rank; with `all_or_none`, keeps them only when every one is
/// settled. Whether every one was.
fn retry_with_hint(
    ranks: &mut [(&Input, &mut Structure)],
    hint: &LayerHint,
    all_or_none: bool,
) -> bool {
    let again: Vec<Option<Structure>> = (ranks.iter())
        .map(|(i, _)| {
            let s = discover_with_hint(&i.graph, &i.measured, &i.ctx, Some(hint));
            (!unsettled(&s)).then_some(s)
        })
        .collect();
    let every = again.iter().all(Option::is_some);
    if every || !all_or_none {
        for ((_, s), found) in ranks.iter_mut().zip(again) {
            if let Some(found) = found {
                **s = found;
            }
        }
    }
    every
}

/// An error when the ranks are not those of one job: their parallel
/// degrees differ from the first's, or they ran on GPUs their traces name
/// differently; or, as a joint replay refuses them
/// (`lumos_graph::assemble`), two claim one rank, or one's rank is not
/// below the world size it records. A prediction would otherwise take one
/// of two runs' rank for a stage without a word (the DLRM job's rank 1, on
/// a V100, given with the MI300X trace's rank 0, of the same degrees, was
/// left out for it).
pub(crate) fn one_job(ranks: &[Summary]) -> Result<(), PredictError> {
    // Checked first: such a rank's degrees are guessed from its
    // collectives alone and its rank is a stand-in, so the other checks
    // would blame what is only missing. Alone, it is predicted.
    if ranks.len() > 1 {
        if let Some(r) = ranks.iter().find(|r| r.rank_unstated) {
            return Err(PredictError::NotOneJob(format!(
                "{}: cannot tell which rank this file is (no distributedInfo.rank, no rank<N> in \
                 the file name), so it has no place among the {} traces of a job: predict from \
                 it alone, or name it after its rank (rank<N>.json.gz)",
                r.name,
                ranks.len()
            )));
        }
    }
    let first = &ranks[0];
    if let Some(r) = ranks.iter().find(|r| r.degrees != first.degrees) {
        // The degrees are said: a rank whose collectives were not all
        // found (a recording cut short, no process-group metadata) differs
        // by a degree of 1, which names what to look at.
        let says = |(tp, dp, pp): (u32, u32, u32)| format!("tp{tp} dp{dp} pp{pp}");
        return Err(PredictError::NotOneJob(format!(
            "{}: parallel degrees {} differ from {}'s {} (as found in their collectives): are \
             these ranks of one job?",
            r.name,
            says(r.degrees),
            first.name,
            says(first.degrees)
        )));
    }
    // Only names both traces give are compared: a trace that lists no
    // device says nothing against the others.
    let mut named = ranks.iter().filter_map(|r| Some((r, r.device.as_deref()?)));
    if let Some((a, da)) = named.next() {
        if let Some((b, db)) = named.find(|&(_, d)| d != da) {
            return Err(PredictError::NotOneJob(format!(
                "{}: recorded on {db:?}, {} on {da:?}: are these ranks of one job?",
                b.name, a.name
            )));
        }
    }
    if ranks.len() < 2 {
        return Ok(());
    }
    if let Some(r) = ranks
        .iter()
        .find(|r| r.world_size.is_some_and(|w| r.rank >= w))
    {
        return Err(PredictError::NotOneJob(format!(
            "{}: rank {} is outside world size {}",
            r.name,
            r.rank,
            r.world_size.unwrap_or(0)
        )));
    }
    let mut by_rank: Vec<&Summary> = ranks.iter().collect();
    by_rank.sort_by_key(|r| r.rank);
    match by_rank.windows(2).find(|w| w[0].rank == w[1].rank) {
        Some(w) => {
            let (a, b) = (&w[0].name, &w[1].name);
            Err(PredictError::NotOneJob(format!(
                "{a} and {b} both claim rank {}: a job takes one file per rank; to compare two \
                 runs use `lumos diff {a} {b}`",
                w[0].rank
            )))
        }
        None => Ok(()),
    }
}

/// One rank per stage: ranks that differ only by their tensor or data
/// index are taken to behave alike, so the first of each stage (lowest
/// rank) stands for it. Ranks keep their order. Every one kept is held:
/// a rank is left out only for a settled one of its stage with a lower
/// rank. `held` has each rank given, `None` for those left out.
pub(crate) fn one_rank_per_stage(
    mut held: Vec<Option<Discovered>>,
    summaries: &[Summary],
    first_config: DiscoveredConfig,
    notes: &mut Vec<String>,
) -> Kept {
    let mut keep: Vec<usize> = (0..held.len()).collect();
    keep.sort_by_key(|&i| (summaries[i].stage, summaries[i].rank));
    keep.dedup_by_key(|i| summaries[*i].stage);
    keep.sort_unstable();
    if keep.len() < held.len() {
        notes.push(format!(
            "{} of {} inputs left out: one rank per pipeline stage stands for its stage ({})",
            held.len() - keep.len(),
            held.len(),
            keep.iter()
                .map(|&i| format!(
                    "rank {} for stage {}",
                    summaries[i].rank, summaries[i].stage
                ))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let given_count = held.len();
    let (inputs, structures) = (keep.iter())
        .map(|&i| {
            let d = held[i]
                .take()
                .expect("a rank left out has a settled rank of its stage below it");
            (d.input, d.structure)
        })
        .unzip();
    Kept {
        inputs,
        structures,
        roles: keep.iter().map(|&i| summaries[i].role).collect(),
        stages: keep.iter().map(|&i| summaries[i].stage).collect(),
        given: keep,
        first_config,
        given_count,
        left_out: Vec::new(),
    }
}
