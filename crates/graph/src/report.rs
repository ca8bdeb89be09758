//! What graph building found, inferred and doubted.

use std::collections::BTreeMap;

use rayon::prelude::*;

use crate::acyclic::StreamTails;
use crate::build::{sync_kind, SyncKind, PAR_MIN};
use crate::model::{DepKind, Graph, Measured, TaskId, TaskKind};

/// How an edge was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rule {
    /// Named by a `cuda_sync` event.
    CudaSyncEvent,
    /// From the order of runtime calls and launches on a thread.
    LaunchSequence,
    /// A GPU task started late; the task on another stream that ended just
    /// before it is taken as the cause.
    ObservedWait,
    /// Fallback: the last task launched onto another stream of the device.
    LastOtherStream,
    /// A synchronizing runtime call named as such.
    NamedCall,
    /// The stream whose task ended last before the call returned.
    EndsBeforeReturn,
    /// A long runtime call that returned right after a GPU task ended.
    LongCallEndsAfterGpu,
    /// A launch that returned right after a task of its stream ended,
    /// with hundreds launched before it still waiting: it waited for a
    /// slot in the stream's full launch queue.
    FullLaunchQueue,
    /// A `cudaEventQuery` polling loop that ended right after GPU work ended.
    PollingLoop,
    /// A long CPU gap that ended right after a task on another thread.
    GapAfterOtherThread,
    /// Framework semantics: a collective's stream waits for the last
    /// compute task its thread launched before it (PyTorch's NCCL process
    /// group syncs the two streams before every collective).
    CollectiveInput,
    /// Framework semantics: the thread's compute stream waits for the
    /// latest collective not yet waited for, at the first compute task
    /// launched after the wait call (`Work::wait()`).
    CollectiveConsumer,
    /// Framework semantics in a trace with no stream evidence (no
    /// stream-wait calls, no `cuda_sync` events): a collective's stream
    /// waits for the last task its thread launched onto its current
    /// stream before it.
    ImpliedCollectiveInput,
    /// Framework semantics in a trace with no stream evidence: the current
    /// stream's consumer of a collective (the thread's next compute task
    /// when it started after the collective ended, else the first to start
    /// after it that waited for it) waits for it.
    ImpliedCollectiveConsumer,
}

impl Rule {
    /// Stable snake-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::CudaSyncEvent => "cuda_sync_event",
            Rule::LaunchSequence => "launch_sequence",
            Rule::ObservedWait => "observed_wait",
            Rule::LastOtherStream => "last_other_stream",
            Rule::NamedCall => "named_call",
            Rule::EndsBeforeReturn => "ends_before_return",
            Rule::LongCallEndsAfterGpu => "long_call_ends_after_gpu",
            Rule::FullLaunchQueue => "full_launch_queue",
            Rule::PollingLoop => "polling_loop",
            Rule::GapAfterOtherThread => "gap_after_other_thread",
            Rule::CollectiveInput => "collective_input",
            Rule::CollectiveConsumer => "collective_consumer",
            Rule::ImpliedCollectiveInput => "implied_collective_input",
            Rule::ImpliedCollectiveConsumer => "implied_collective_consumer",
        }
    }

    /// True when the edge is read from the trace rather than inferred.
    pub fn is_recorded(self) -> bool {
        matches!(self, Rule::CudaSyncEvent)
    }
}

/// Counts and warnings from [`crate::build`].
#[derive(Debug, Clone, Default)]
pub struct BuildReport {
    /// Tasks per kind.
    pub tasks_by_kind: BTreeMap<TaskKind, u64>,
    /// Edges per kind (runtime sync dependencies counted under `Sync`).
    pub edges_by_kind: BTreeMap<DepKind, u64>,
    /// Dependencies found per kind and rule, for the kinds that need finding.
    pub inferred: BTreeMap<(DepKind, Rule), u64>,
    /// CPU threads with tasks.
    pub threads: u64,
    /// GPU streams with tasks.
    pub streams: u64,
    /// Events left out with their threads: those of threads past the
    /// [`crate::MAX_TRACKS`] a build keeps.
    pub events_on_left_out_threads: u64,
    /// Events left out with their streams (past [`crate::MAX_TRACKS`]),
    /// and the `cuda_sync` events waiting on one.
    pub events_on_left_out_streams: u64,
    /// Communication tasks identified by `Collective name`.
    pub comm_by_args: u64,
    /// Communication tasks identified by kernel name only.
    pub comm_by_name: u64,
    /// `cuda_sync` events in the trace.
    pub cuda_sync_events: u64,
    /// GPU tasks whose launch call is missing.
    pub gpu_without_launch: u64,
    /// The other way round: kernel launch, graph launch and copy calls
    /// (not memsets, whose GPU event real traces leave out) whose
    /// correlation id no GPU task has, so their kernels or copies are
    /// missing from the graph. Those in the window's last tenth after the
    /// last launch whose GPU task was recorded (work still running when
    /// profiling stopped) are not counted. The build warns past a few (2,
    /// or 1% of the launch calls); this counts them all, warned about or
    /// not, and is the number the warning gives when there is one.
    pub launches_without_gpu_task: u64,
    /// GPU tasks given a release offset because nothing explains their start.
    pub released_gpu_tasks: u64,
    /// Runtime calls whose correlation id was seen before.
    pub repeated_correlations: u64,
    /// CPU events that overlap a sibling without nesting in it.
    pub partial_overlaps: u64,
    /// GPU tasks clipped because they overlapped the previous one on their stream.
    pub clipped_gpu_overlaps: u64,
    /// `cudaEventQuery` polling loops collapsed into one task each.
    pub polling_loops: u64,
    /// Blocking calls split into an issuing and a waiting task.
    pub split_calls: u64,
    /// Stream waits whose source and target are on the same stream.
    pub same_stream_waits: u64,
    /// Stream waits whose inferred source ended after the target started in
    /// the measured run, so the inference was rejected.
    pub rejected_waits: u64,
    /// Stream synchronizations whose stream could not be identified (no GPU
    /// work ended during the call and no stream launched onto was idle).
    pub unresolved_syncs: u64,
    /// Stream waits that gave no edge and are not explained otherwise:
    /// the build warns with this count.
    pub unresolved_waits: u64,
    /// Stream waits satisfied at once, so with no edge and no warning: the
    /// `cuda_sync` "Stream Wait Event" shows that the waiting stream runs
    /// no GPU task in the trace (or none after the call), or that the
    /// event's stream ran none before its record call. One-rank DDP gives
    /// two per bucket (its NCCL stream runs no kernel: it waits on the
    /// compute stream, which then waits on an event recorded on it);
    /// cuDNN's idle side streams give some too.
    pub idle_stream_waits: u64,
    /// GPU tasks on a stream in another order than their launches.
    pub stream_order_violations: u64,
    /// Windows of more than 40 ms with no CPU event.
    pub cpu_holes: u64,
    /// The longest of those windows, ns (0 when there are none).
    pub longest_cpu_hole_ns: i64,
    /// Runtime calls that carry a correlation id: where launches are found.
    /// None at all means the trace recorded no launch calls, rather than
    /// lost some.
    pub correlated_calls: u64,
    /// Dependencies found or inferred but left out of the graph because
    /// they would have closed a cycle with processor order and the
    /// dependencies kept before them, by kind (runtime sync dependencies
    /// under `Sync`). A measured run has no cycles, so any count here means
    /// the trace's times or ids contradict each other. [`Self::inferred`]
    /// still counts them (what the rules found); [`Self::edges_by_kind`]
    /// counts what the graph kept.
    pub rejected_cycles: BTreeMap<DepKind, u64>,
    /// GPU tasks that start before the call that launched them: a measured
    /// run cannot do that, so the host's and the device's clocks disagree.
    /// Not stored in `.lgraph` files: derived again from the stored graph
    /// and measured times ([`Self::derive_launch_facts`]).
    pub launched_early: u64,
    /// The longest lead of those tasks over their launch, ns (0 when there
    /// are none): the most the replay, which starts them after their
    /// launch, can differ from the measured times because of it.
    pub longest_launch_lead_ns: i64,
    /// The shortest time from a launch call's start to the start of a GPU
    /// task it launched, over all the graph's launches, ns (0 when there
    /// are none; minus [`Self::longest_launch_lead_ns`] when a task starts
    /// before its launch). Queued kernels wait long, but some kernel starts
    /// soon after its launch in a measured run: [`GROSS_LAUNCH_DELAY_NS`]
    /// or more here means the device's clock is ahead of the host's. Not
    /// stored: derived again like [`Self::launched_early`].
    pub shortest_launch_delay_ns: i64,
    /// Launch calls other than graph launches that launched several GPU
    /// tasks (GPU tasks repeating a kernel launch's correlation id). Not
    /// stored: derived again like [`Self::launched_early`].
    pub shared_launches: u64,
    /// The GPU tasks those calls launched, in all.
    pub tasks_of_shared_launches: u64,
    /// Synchronizing calls (runtime dependencies: a stream, event or
    /// device synchronize, a blocking copy; and copies into pageable
    /// memory and stream synchronizes, resolved or not) that returned
    /// [`GROSS_SYNC_LEAD_NS`] or more before the GPU work they waited for
    /// ended. A call returns only once that work is done, so the device's
    /// clock is ahead of the host's by that much at least. Not stored:
    /// derived again from the stored graph and measured times
    /// ([`Self::derive_sync_facts`], which says what each call waited
    /// for).
    pub syncs_returned_early: u64,
    /// The longest time by which the GPU work a synchronizing call waited
    /// for ended after the call returned, over all the graph's runtime
    /// dependencies, ns (0 when none did). Not stored: derived again like
    /// [`Self::syncs_returned_early`].
    pub longest_sync_lead_ns: i64,
    /// Median launch latency where the launch held the kernel, ns.
    pub typical_launch_latency_ns: i64,
    /// Median gap between back-to-back tasks on a busy stream, ns.
    pub typical_stream_gap_ns: i64,
    /// Problems that matter for accuracy.
    pub warnings: Vec<String>,
    /// The rule behind each edge that had to be found (inter-stream and
    /// inter-thread) as (index in [`Graph::edges`], rule), by index. Edges
    /// from program order or a launch's correlation have none.
    pub edge_rules: Vec<(u32, Rule)>,
    /// The rule behind each runtime dependency, parallel to
    /// [`Graph::runtime_deps`].
    pub runtime_dep_rules: Vec<Rule>,
}

impl BuildReport {
    /// The rule that found edge `edge` of the built graph, if it had to be
    /// found.
    pub fn edge_rule(&self, edge: usize) -> Option<Rule> {
        let i = self
            .edge_rules
            .binary_search_by_key(&edge, |&(e, _)| e as usize)
            .ok()?;
        Some(self.edge_rules[i].1)
    }

    /// Sets [`Edge::inferred`](crate::Edge::inferred) and
    /// [`RuntimeDep::inferred`](crate::RuntimeDep::inferred) of `g` from
    /// the rules recorded here: a dependency is inferred when its rule is
    /// not [`Rule::is_recorded`]. The builder calls it once the edges are
    /// final; a reader of a stored graph calls it with the stored report
    /// (rules naming an edge `g` does not have are ignored).
    pub fn mark_inferred(&self, g: &mut Graph) {
        (g.edges.par_iter_mut().with_min_len(PAR_MIN)).for_each(|e| e.inferred = false);
        for &(e, rule) in &self.edge_rules {
            if let Some(edge) = g.edges.get_mut(e as usize) {
                edge.inferred = !rule.is_recorded();
            }
        }
        for (i, d) in g.runtime_deps.iter_mut().enumerate() {
            d.inferred = self
                .runtime_dep_rules
                .get(i)
                .is_some_and(|r| !r.is_recorded());
        }
    }

    /// Counts edge `edge`, of `kind`, as found by `rule`. Edges are
    /// recorded in index order.
    pub(crate) fn record_edge(&mut self, edge: usize, kind: DepKind, rule: Rule) {
        debug_assert!(self
            .edge_rules
            .last()
            .is_none_or(|&(e, _)| (e as usize) < edge));
        self.edge_rules.push((edge as u32, rule));
        *self.inferred.entry((kind, rule)).or_insert(0) += 1;
    }

    /// Why the trace looks damaged (events the profiler dropped, ids
    /// merged, clocks hours apart), one line per reason; empty when it does
    /// not. A trace with reasons is *flagged*: its replay error says more
    /// about the trace than about the model, so it is reported apart.
    /// Every line is also one of [`Self::warnings`].
    ///
    /// Of the build's other warnings, these are no reason: steps of zero
    /// length (left out, not replayed), overlapping steps (work counted in
    /// both, measured and replayed alike) and steps of one name (told apart
    /// by their order) are about the annotations, not the times or the
    /// dependencies the replay reads; a GPU task that starts before its
    /// launch by less than [`GROSS_CLOCK_SKEW_NS`] moves the replayed
    /// times by that lead at most, within the model's own error.
    pub fn flag_reasons(&self) -> Vec<String> {
        let tasks: u64 = self.tasks_by_kind.values().sum();
        let mut out = Vec::new();
        // A few GPU tasks without a launch happen at the window's edges;
        // more than 1% of all tasks is a loss.
        if self.gpu_without_launch.saturating_mul(100) > tasks {
            out.extend(self.missing_launch_warning());
        }
        out.extend(self.repeated_correlation_warning());
        // The GPU side of the same damage: all but one of the GPU tasks
        // hang off a call that did not launch them, so their launch
        // dependencies, and the replayed times that follow them, are the
        // trace's error.
        out.extend(self.shared_launch_warning());
        out.extend(self.cpu_hole_warning());
        out.extend(self.rejected_cycle_warning());
        // The measured window and steps hold the early GPU tasks where the
        // replay cannot put them (after their launch): past the threshold
        // they measure the clocks' disagreement, not the run (3 hours of
        // skew gave a measured window of 10,800 s against 19.8 s replayed).
        if self.longest_launch_lead_ns >= GROSS_CLOCK_SKEW_NS {
            out.extend(self.launched_early_warning());
        }
        // The other way round (the GPU clock ahead), the replay takes the
        // skew for launch latency where the launch binds and matches the
        // measured window, skew and all, so any what-if keeps it: 3 hours
        // gave 10,802 s measured and replayed alike.
        out.extend(self.launched_late_warning());
        // A GPU clock ahead by less than a minute is told apart from
        // queueing by the calls that waited for GPU work: they returned
        // before it ended.
        out.extend(self.returned_early_warning());
        out
    }

    /// True when [`Self::flag_reasons`] has any.
    pub fn flagged(&self) -> bool {
        !self.flag_reasons().is_empty()
    }

    /// The warning about GPU tasks without a launch call, if any: dropped
    /// calls when some were recorded, a GPU-only capture when none were.
    pub(crate) fn missing_launch_warning(&self) -> Option<String> {
        if self.gpu_without_launch == 0 {
            return None;
        }
        Some(if self.correlated_calls > 0 {
            format!(
                "{} no recorded launch call (events dropped by the profiler?)",
                counted(self.gpu_without_launch, "GPU task has", "GPU tasks have")
            )
        } else {
            format!(
                "no launch calls recorded: {} measured start times \
                 (a GPU-only capture, or every launch dropped?)",
                counted(
                    self.gpu_without_launch,
                    "GPU task keeps its",
                    "GPU tasks keep their"
                )
            )
        })
    }

    /// The warning about GPU tasks that started before the call that
    /// launched them, if any, with the longest lead: the replay starts such
    /// tasks after their launch, so its times differ from the measured ones
    /// by up to that lead.
    pub(crate) fn launched_early_warning(&self) -> Option<String> {
        let early = self.launched_early;
        (early > 0).then(|| {
            format!(
                "{} before the call that launched {} (by up to {:.3} ms): \
                 host and GPU clocks disagree?",
                counted(early, "GPU task starts", "GPU tasks start"),
                if early == 1 { "it" } else { "them" },
                self.longest_launch_lead_ns as f64 / 1e6
            )
        })
    }

    /// The warning about GPU tasks that all started long after the calls
    /// that launched them, if the shortest such delay
    /// ([`Self::shortest_launch_delay_ns`]) is [`GROSS_LAUNCH_DELAY_NS`] or
    /// more: the GPU clock is ahead of the host's by about that much.
    pub(crate) fn launched_late_warning(&self) -> Option<String> {
        let delay = self.shortest_launch_delay_ns;
        (delay >= GROSS_LAUNCH_DELAY_NS).then(|| {
            format!(
                "every launched GPU task starts {:.3} s or more after the call \
                 that launched it (a queue of kernels holds seconds at most): \
                 host and GPU clocks disagree?",
                delay as f64 / 1e9
            )
        })
    }

    /// The warning about synchronizing calls that returned
    /// [`GROSS_SYNC_LEAD_NS`] or more before the GPU work they waited for
    /// ended ([`Self::syncs_returned_early`]), if any, with the longest
    /// such lead: the GPU clock is ahead of the host's by that much at
    /// least. Worded as the launch warnings are, so that a trace with more
    /// than one says the same.
    pub(crate) fn returned_early_warning(&self) -> Option<String> {
        let early = self.syncs_returned_early;
        (early > 0).then(|| {
            format!(
                "{} before the GPU work {} waited for ends (by up to {:.3} ms; \
                 a synchronizing call returns once that work is done): \
                 host and GPU clocks disagree?",
                counted(
                    early,
                    "synchronizing call returns",
                    "synchronizing calls return"
                ),
                if early == 1 { "it" } else { "they" },
                self.longest_sync_lead_ns as f64 / 1e6
            )
        })
    }

    /// The warning about launch calls (other than graph launches) that
    /// launched several GPU tasks, if any.
    pub(crate) fn shared_launch_warning(&self) -> Option<String> {
        (self.shared_launches > 0).then(|| {
            format!(
                "{} several GPU tasks ({} in all) that repeat a \
                 correlation id (events merged or ids reused?)",
                counted(
                    self.shared_launches,
                    "launch call that is no graph launch has",
                    "launch calls that are no graph launch have"
                ),
                self.tasks_of_shared_launches
            )
        })
    }

    /// Sets the facts of the graph's launches that a stored report does
    /// not hold ([`Self::launched_early`], [`Self::longest_launch_lead_ns`],
    /// [`Self::shortest_launch_delay_ns`], [`Self::shared_launches`],
    /// [`Self::tasks_of_shared_launches`]) from
    /// `g`'s launch edges and the measured times `m` of its tasks, as the
    /// build found them: a reader of a stored graph calls it, so that a
    /// graph read back is flagged as the trace's own build was (launch
    /// edges are never left out of a build, so its launches are the
    /// graph's). A gross delay after the launches that the stored warnings
    /// do not name (a file written before it was warned about) is added to
    /// them, since every reason a flag gives is one of the warnings.
    pub fn derive_launch_facts(&mut self, g: &Graph, m: &Measured) {
        let start = |t: TaskId| m.tasks.get(t.idx()).map_or(0, |s| s.start_ns);
        let mut times = LaunchTimes::default();
        // Launches per calling task, counted in place: a sort of the
        // callers cost as much as the rest of a stored graph's checks.
        let mut launched = vec![0u32; g.tasks.len()];
        for e in g.edges.iter().filter(|e| e.kind == DepKind::Launch) {
            times.add(start(e.from), start(e.to));
            if let Some(n) = launched.get_mut(e.from.idx()) {
                *n = n.saturating_add(1);
            }
        }
        let (mut shared, mut tasks) = (0u64, 0u64);
        for (call, &n) in launched.iter().enumerate().filter(|(_, &n)| n > 1) {
            if !is_graph_launch(g, TaskId(call as u32)) {
                shared += 1;
                tasks += u64::from(n);
            }
        }
        times.set(self);
        self.shared_launches = shared;
        self.tasks_of_shared_launches = tasks;
        if let Some(w) = self.launched_late_warning() {
            if !self.warnings.contains(&w) {
                self.warnings.push(w);
            }
        }
    }

    /// Sets the facts of the graph's synchronizing calls that a stored
    /// report does not hold ([`Self::syncs_returned_early`],
    /// [`Self::longest_sync_lead_ns`]) from `g`'s runtime dependencies and
    /// the measured times `m` of its tasks, as the build found them: a
    /// reader of a stored graph calls it, so that a graph read back is
    /// flagged as the trace's own build was. The warning, which a file
    /// written before it was given lacks, is added to the stored ones when
    /// the facts call for it, since every reason a flag gives is one of the
    /// warnings.
    ///
    /// What a call must have waited for: the work its runtime dependency
    /// resolves to, a copy into pageable memory's own copy, and for a
    /// stream synchronize the earliest end among the work launched onto
    /// each stream before it (the call waited for one of them).
    pub fn derive_sync_facts(&mut self, g: &Graph, m: &Measured) {
        let span = |t: TaskId| {
            m.tasks
                .get(t.idx())
                .map_or((0, 0), |s| (s.start_ns, s.end_ns))
        };
        self.set_sync_facts(g, span);
        if let Some(w) = self.returned_early_warning() {
            if !self.warnings.contains(&w) {
                self.warnings.push(w);
            }
        }
    }

    /// Sets [`Self::syncs_returned_early`] and
    /// [`Self::longest_sync_lead_ns`] from `g`'s runtime dependencies and
    /// its synchronizing calls, with `span_of` giving each task's measured
    /// start and end, so that the build and a stored graph's reader find
    /// the same. A call's lead is the longest of three, each the time by
    /// which GPU work the call must have waited for ended after it
    /// returned:
    ///
    /// - its runtime dependency's: what the replay resolves it to on
    ///   measured times ([`StreamTails`]: a stream's tail is its last task
    ///   whose launch call, and those of the tasks before it, started
    ///   before the call did; a device's, the tails of its streams). Where
    ///   a rule chose the work because it ended while the call ran, it
    ///   ended before the call returned by construction; the lead shows
    ///   where the work is known otherwise (a device synchronize, a
    ///   blocking copy's own copy, a `cuda_sync` event naming the stream
    ///   or event);
    /// - a copy's, for its own copy from device to pageable memory, which
    ///   the call returns only once done (CUDA's documented behaviour of
    ///   `cudaMemcpyAsync` too), whatever rule its dependency came from;
    /// - a stream synchronize's, resolved or not: it waited for one stream,
    ///   so for the earliest of the ends of the streams' tails (here, the
    ///   work of each stream whose launch calls all ended before the call
    ///   started; a GPU task without a launch call ends the work known).
    ///   A stream with no such work (or work left out with its stream)
    ///   makes it none: the call may have waited for that stream.
    pub(crate) fn set_sync_facts(&mut self, g: &Graph, span_of: impl Fn(TaskId) -> (i64, i64)) {
        // Lead per call; a call has one runtime dependency at most.
        let mut leads: BTreeMap<u32, i64> = BTreeMap::new();
        let mut note = |t: TaskId, lead: i64| {
            let l = leads.entry(t.0).or_insert(lead);
            *l = (*l).max(lead);
        };
        if !g.runtime_deps.is_empty() {
            let tails = StreamTails::new(g, |t| span_of(t).0);
            for (d, dep) in g.runtime_deps.iter().enumerate() {
                let (start, end) = span_of(dep.task);
                let awaited = tails.targets(g, d, start).into_iter();
                if let Some(last) = awaited.map(|t| span_of(t).1).max() {
                    note(dep.task, last.saturating_sub(end));
                }
            }
        }
        for (call, lead) in sync_call_leads(g, &span_of, self.events_on_left_out_streams > 0) {
            note(call, lead);
        }
        let early = leads.values().filter(|&&l| l >= GROSS_SYNC_LEAD_NS).count();
        self.syncs_returned_early = early as u64;
        self.longest_sync_lead_ns = leads.values().copied().max().unwrap_or(0).max(0);
    }

    pub(crate) fn repeated_correlation_warning(&self) -> Option<String> {
        (self.repeated_correlations > 0).then(|| {
            format!(
                "{} a correlation id (events dropped or merged?)",
                counted(
                    self.repeated_correlations,
                    "runtime call repeats",
                    "runtime calls repeat"
                )
            )
        })
    }

    pub(crate) fn cpu_hole_warning(&self) -> Option<String> {
        (self.cpu_holes > 0).then(|| {
            format!(
                "{} over {} ms with no CPU events (longest {:.1} ms): events dropped?",
                counted(self.cpu_holes, "window", "windows"),
                crate::build::CPU_HOLE_NS / 1_000_000,
                self.longest_cpu_hole_ns as f64 / 1e6
            )
        })
    }

    pub(crate) fn rejected_cycle_warning(&self) -> Option<String> {
        let total: u64 = self.rejected_cycles.values().sum();
        (total > 0).then(|| {
            let kinds: Vec<String> = self
                .rejected_cycles
                .iter()
                .map(|(k, n)| format!("{k} {n}"))
                .collect();
            format!(
                "{} left out because {} close a cycle ({}): \
                 times or ids contradict each other (events dropped?)",
                counted(total, "dependency", "dependencies"),
                if total == 1 { "it would" } else { "they would" },
                kinds.join(", ")
            )
        })
    }

    /// Keeps the rule records in step with the graph when the edges and
    /// runtime dependencies marked in `drop_edge` / `drop_dep` are removed
    /// (both indexed as before the removal).
    pub(crate) fn forget_dropped(&mut self, drop_edge: &[bool], drop_dep: &[bool]) {
        // New index of each kept edge: old index minus the drops before it.
        let mut new_index = Vec::with_capacity(drop_edge.len());
        let mut dropped = 0u32;
        for &d in drop_edge {
            new_index.push(dropped);
            dropped += u32::from(d);
        }
        self.edge_rules.retain(|&(e, _)| !drop_edge[e as usize]);
        for (e, _) in &mut self.edge_rules {
            *e -= new_index[*e as usize];
        }
        let mut d = 0;
        self.runtime_dep_rules.retain(|_| {
            d += 1;
            !drop_dep[d - 1]
        });
    }

    /// Counts the runtime dependency just added as found by `rule`.
    pub(crate) fn record_runtime_dep(&mut self, rule: Rule) {
        self.runtime_dep_rules.push(rule);
        *self.inferred.entry((DepKind::Sync, rule)).or_insert(0) += 1;
    }

    /// Counts the graph's tasks, edges and processors by kind. Counted in
    /// arrays indexed by kind and then added to the maps: a map entry per
    /// task and per edge cost more than the rest of the count.
    pub(crate) fn fill_counts(&mut self, g: &Graph) {
        // Millions of tasks and edges on a large trace: counted on every
        // core (sums, so the same whatever the split).
        let (tasks, mut edges): ([u64; TaskKind::ALL.len()], [u64; DepKind::ALL.len()]) =
            rayon::join(
                || count_by(&g.tasks, |t| t.kind as usize),
                || count_by(&g.edges, |e| e.kind as usize),
            );
        for (kind, n) in TaskKind::ALL.into_iter().zip(tasks) {
            if n > 0 {
                *self.tasks_by_kind.entry(kind).or_insert(0) += n;
            }
        }
        edges[DepKind::Sync as usize] += g.runtime_deps.len() as u64;
        for (kind, n) in DepKind::ALL.into_iter().zip(edges) {
            if n > 0 {
                *self.edges_by_kind.entry(kind).or_insert(0) += n;
            }
        }
        self.streams = g.processors.iter().filter(|p| p.is_stream()).count() as u64;
        self.threads = g.processors.len() as u64 - self.streams;
    }
}

/// How many of `items` fall in each of `N` classes (`class` is below `N`).
fn count_by<T: Sync, const N: usize>(items: &[T], class: impl Fn(&T) -> usize + Sync) -> [u64; N] {
    // A plain loop per chunk: about 3x faster on a 1 GB rank's tasks and
    // edges than a fold, which carries the array from item to item.
    (items.par_chunks(PAR_MIN))
        .map(|chunk| {
            let mut n = [0u64; N];
            for x in chunk {
                n[class(x)] += 1;
            }
            n
        })
        .reduce(
            || [0u64; N],
            |mut a, b| {
                a.iter_mut().zip(b).for_each(|(a, b)| *a += b);
                a
            },
        )
}

/// A GPU task that starts before its launch by this much or more is not
/// clock noise (Kineto maps the device's clock onto the host's; what drift
/// is left is microseconds): the clocks are a different base apart (a bad
/// merge, an edited trace), and the lead, which bounds what the skew moves
/// the replayed times by, is as long as a window with no CPU event that the
/// build takes for dropped events (40 ms) and half
/// the shortest training step of the corpus (77 ms): measured steps and the
/// window then hold the skew, not the run.
pub const GROSS_CLOCK_SKEW_NS: i64 = 40_000_000;

/// When every launched GPU task starts this long or more after the call
/// that launched it, the GPU clock is ahead of the host's: no queue of
/// kernels is that deep. Far above [`GROSS_CLOCK_SKEW_NS`], because a delay,
/// unlike a lead, is what a measured run has: a kernel waits behind the
/// ones queued before it, so the CPU of a training run with no sync in the
/// window stays ahead of the GPU throughout. In the corpus every GPU task
/// of `mi300x-resnet-ddp-rank0of8` starts 21 ms or more after its launch,
/// and single kernels wait up to 3.1 s (`a100-alexnet-cuda-sync`); a
/// minute is 20 times that, and a clock of another base (a time zone, 15
/// minutes or more, a bad merge) is further ahead still.
pub const GROSS_LAUNCH_DELAY_NS: i64 = 60_000_000_000;

/// When a synchronizing call returns this long or more before the GPU work
/// it waited for ends, the GPU clock is ahead of the host's: the call
/// returns only once that work is done, so in a measured run the work ends
/// first. In the corpus it ends at most 4 us after the call returned
/// (blocking copies of `resnet50-2021-legacy-autograd-api`: the clocks'
/// mapping, not a wait), and at or before it in every other trace, the AMD
/// ones included; a copy into pageable memory ends 6 us or more before
/// its call returns, and the earliest end of the streams' work 2 us or more
/// before a stream synchronize does. 5 ms is over a thousand times that;
/// it catches a GPU clock ahead by less than the minute
/// ([`GROSS_LAUNCH_DELAY_NS`]) that launch delays cannot tell from
/// queueing, where the trace synchronizes on work known other than by when
/// it ended (a device synchronize, a blocking copy, a `cuda_sync` event, a
/// copy into pageable memory, a stream synchronize while every stream had
/// work), and stays below [`GROSS_CLOCK_SKEW_NS`], the skew the other way
/// that flags a trace.
pub const GROSS_SYNC_LEAD_NS: i64 = 5_000_000;

/// The launch facts of a [`BuildReport`] ([`BuildReport::launched_early`],
/// [`BuildReport::longest_launch_lead_ns`],
/// [`BuildReport::shortest_launch_delay_ns`]), gathered one launch at a
/// time: by the build from its launchers, by a stored graph's reader from
/// its launch edges.
#[derive(Default)]
pub(crate) struct LaunchTimes {
    early: u64,
    longest_lead: i64,
    shortest_delay: Option<i64>,
}

impl LaunchTimes {
    /// Adds a launch call that started at `call_start` and a GPU task it
    /// launched that started at `task_start`, ns.
    pub(crate) fn add(&mut self, call_start: i64, task_start: i64) {
        let lead = call_start.saturating_sub(task_start);
        if lead > 0 {
            self.early += 1;
            self.longest_lead = self.longest_lead.max(lead);
        }
        let delay = task_start.saturating_sub(call_start);
        self.shortest_delay = Some(self.shortest_delay.map_or(delay, |d| d.min(delay)));
    }

    /// Writes the facts into `r` (a delay of 0 where nothing was launched).
    pub(crate) fn set(self, r: &mut BuildReport) {
        r.launched_early = self.early;
        r.longest_launch_lead_ns = self.longest_lead;
        r.shortest_launch_delay_ns = self.shortest_delay.unwrap_or(0);
    }
}

/// Whether task `call` of `g` is a graph launch, which starts several GPU
/// tasks by design (`cudaGraphLaunch`, `hipGraphLaunch`).
pub(crate) fn is_graph_launch(g: &Graph, call: TaskId) -> bool {
    let name = g.tasks[call.idx()].name.0 as usize;
    g.names.get(name).is_some_and(|n| n.contains("GraphLaunch"))
}

/// The leads of `g`'s synchronizing calls that need no runtime dependency
/// to be known: copies to pageable memory over their own copy, and stream
/// synchronizes over the earliest end of the streams' known work (see
/// [`BuildReport::set_sync_facts`]), as (call, lead) pairs; `streams_left_out`
/// when some stream's work is not in `g` (a stream synchronize may have
/// waited for that one, so none is taken).
fn sync_call_leads(
    g: &Graph,
    span_of: &impl Fn(TaskId) -> (i64, i64),
    streams_left_out: bool,
) -> Vec<(TaskId, i64)> {
    let kinds: Vec<SyncKind> = g.names.iter().map(|n| sync_kind(n)).collect();
    let pageable: Vec<bool> = (g.names.iter())
        .map(|n| n.contains("(Device -> Pageable)"))
        .collect();
    let kind_of = |t: TaskId| {
        let name = g.tasks[t.idx()].name.0 as usize;
        kinds.get(name).copied().unwrap_or(SyncKind::None)
    };
    let mut out = Vec::new();
    // Copies into pageable memory, by their launch edges. A call split in
    // two by the build (it waited for what it launched) returns at the end
    // of its waiting part, the task after it on its thread.
    let copies = (g.edges.iter()).filter(|e| {
        e.kind == DepKind::Launch
            && (g.tasks.get(e.to.idx()))
                .is_some_and(|t| pageable.get(t.name.0 as usize) == Some(&true))
    });
    let mut next_on_thread: Option<Vec<u32>> = None;
    for e in copies {
        let (start, mut end) = span_of(e.from);
        if start == end {
            let next = next_on_thread.get_or_insert_with(|| next_tasks(g));
            let after = TaskId(next[e.from.idx()]);
            if after.idx() < g.tasks.len()
                && g.tasks[after.idx()].name == g.tasks[e.from.idx()].name
                && span_of(after).0 == start
            {
                end = span_of(after).1;
            }
        }
        out.push((e.from, span_of(e.to).1.saturating_sub(end)));
    }
    // Stream synchronizes: each stream's known work as prefix maxima of
    // its launch calls' ends and of its tasks' ends.
    if streams_left_out {
        return out;
    }
    let calls = (0..g.tasks.len() as u32)
        .map(TaskId)
        .filter(|&t| g.tasks[t.idx()].kind == TaskKind::Runtime && kind_of(t) == SyncKind::Stream);
    let calls: Vec<TaskId> = calls.collect();
    if calls.is_empty() {
        return out;
    }
    let mut launch_end = vec![i64::MAX; g.tasks.len()];
    for e in g.edges.iter().filter(|e| e.kind == DepKind::Launch) {
        if let Some(l) = launch_end.get_mut(e.to.idx()) {
            let end = span_of(e.from).1;
            *l = if *l == i64::MAX { end } else { (*l).max(end) };
        }
    }
    // Per stream: (latest launch end so far, latest task end so far).
    let streams: Vec<Vec<(i64, i64)>> = (g.processors.iter())
        .filter(|p| p.is_stream() && !p.tasks.is_empty())
        .map(|p| {
            let (mut launched, mut ended) = (i64::MIN, i64::MIN);
            (p.tasks.iter())
                .map(|&t| {
                    launched = launched.max(launch_end[t.idx()]);
                    ended = ended.max(span_of(t).1);
                    (launched, ended)
                })
                .collect()
        })
        .collect();
    if streams.is_empty() {
        return out;
    }
    for call in calls {
        let (start, end) = span_of(call);
        let earliest = streams.iter().map(|s| {
            let k = s.partition_point(|&(launched, _)| launched < start);
            k.checked_sub(1).map_or(i64::MIN, |i| s[i].1)
        });
        let earliest = earliest.min().unwrap_or(i64::MIN);
        if earliest != i64::MIN {
            out.push((call, earliest.saturating_sub(end)));
        }
    }
    out
}

/// For each task of `g`, the task after it on its processor
/// (`u32::MAX` for the last).
fn next_tasks(g: &Graph) -> Vec<u32> {
    let mut next = vec![u32::MAX; g.tasks.len()];
    for p in &g.processors {
        for w in p.tasks.windows(2) {
            if let Some(n) = next.get_mut(w[0].idx()) {
                *n = w[1].0;
            }
        }
    }
    next
}

/// `n` and the noun phrase that agrees with it: "1 window", "2 windows".
pub(crate) fn counted(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{
        Anchor, Edge, NameId, ProcId, ProcKind, Processor, RuntimeDep, Task, WaitTarget,
    };

    #[test]
    fn kinds_are_listed_in_declaration_order() {
        // `fill_counts` indexes its arrays by `kind as usize`.
        for (i, k) in TaskKind::ALL.into_iter().enumerate() {
            assert_eq!(k as usize, i, "{k:?}");
        }
        for (i, k) in DepKind::ALL.into_iter().enumerate() {
            assert_eq!(k as usize, i, "{k:?}");
        }
    }

    /// A thread that launched a copy (task 1, `cudaMemcpyAsync`) onto
    /// stream 0 and then synchronized a stream (task 2), with stream 1
    /// holding `other` (a kernel and when its launch call, task 4 on
    /// another thread, ended; `None`: launched with no call). All times in
    /// ms; the copy ends `copy_end` and the synchronize runs 10 to 11.
    fn stream_sync_graph(
        copy_end: i64,
        other: Option<(i64, Option<i64>)>,
    ) -> (Graph, Vec<(i64, i64)>) {
        let ms = 1_000_000;
        let task = |kind, name| Task {
            kind,
            name: NameId(name),
            proc: ProcId(0),
            duration_ns: 0,
            release_ns: 0,
            collective: None,
            correlation: 0,
        };
        let launch = |from, to| Edge {
            from: TaskId(from),
            to: TaskId(to),
            kind: DepKind::Launch,
            anchor: Anchor::Start,
            latency_ns: 0,
            inferred: false,
        };
        let stream = |stream, tasks: Vec<u32>| Processor {
            kind: ProcKind::Stream { device: 0, stream },
            tasks: tasks.into_iter().map(TaskId).collect(),
        };
        let thread = |tid, tasks: Vec<u32>| Processor {
            kind: ProcKind::Thread { pid: 1, tid },
            tasks: tasks.into_iter().map(TaskId).collect(),
        };
        let mut g = Graph {
            names: [
                "copy",
                "cudaMemcpyAsync",
                "cudaStreamSynchronize",
                "cudaLaunchKernel",
            ]
            .map(str::to_owned)
            .to_vec(),
            tasks: vec![
                task(TaskKind::Memcpy, 0),
                task(TaskKind::Runtime, 1),
                task(TaskKind::Runtime, 2),
            ],
            processors: vec![stream(0, vec![0]), thread(1, vec![1, 2]), stream(1, vec![])],
            edges: vec![launch(1, 0)],
            ..Graph::default()
        };
        let mut spans = vec![(2 * ms, copy_end * ms), (ms, 2 * ms), (10 * ms, 11 * ms)];
        if let Some((kernel_end, call_end)) = other {
            g.tasks.push(task(TaskKind::Kernel, 0));
            g.processors[2].tasks.push(TaskId(3));
            spans.push((3 * ms, kernel_end * ms));
            if let Some(call_end) = call_end {
                g.tasks.push(task(TaskKind::Runtime, 3));
                g.processors.push(thread(2, vec![4]));
                g.edges.push(launch(4, 3));
                spans.push((call_end * ms - 1, call_end * ms));
            }
        }
        (g, spans)
    }

    /// A stream synchronize waited for one stream: its lead is the earliest
    /// end of the work launched before it on each stream, none where a
    /// stream had no such work (idle, its launch call not yet ended, or
    /// launched by no recorded call), so it is never more than what the
    /// call waited for.
    #[test]
    fn a_stream_synchronize_leads_by_the_earliest_stream_end() {
        let ms = 1_000_000;
        // (copy end, stream 1, lead)
        let cases = [
            // One stream, ending 9 ms after the call returned.
            (20, None, 9 * ms),
            // The work ended before the call returned: no lead.
            (9, None, 0),
            // Stream 1 ends earlier (15), its launch ended before the call.
            (20, Some((15, Some(5))), 4 * ms),
            // Stream 1 was idle when the call started.
            (20, Some((8, Some(5))), 0),
            // Its launch call ended after the call started: not known
            // to be waited for.
            (20, Some((15, Some(10))), 0),
            // Launched by no recorded call.
            (20, Some((15, None)), 0),
        ];
        for (copy_end, other, lead) in cases {
            let (g, spans) = stream_sync_graph(copy_end, other);
            let mut r = BuildReport::default();
            r.set_sync_facts(&g, |t| spans[t.idx()]);
            let label = format!("copy ends {copy_end}, stream 1 {other:?}");
            assert_eq!(r.longest_sync_lead_ns, lead, "{label}");
            assert_eq!(
                r.syncs_returned_early,
                u64::from(lead >= GROSS_SYNC_LEAD_NS),
                "{label}"
            );
            // With a stream's work left out of the graph, the call may
            // have waited for that one.
            r.events_on_left_out_streams = 1;
            r.set_sync_facts(&g, |t| spans[t.idx()]);
            assert_eq!(r.longest_sync_lead_ns, 0, "{label}");
        }
    }

    /// A copy into pageable memory returns once its own copy is done;
    /// where the build split the call, at the end of its waiting part.
    #[test]
    fn a_pageable_copy_leads_by_its_own_copy() {
        let ms = 1_000_000;
        let (mut g, mut spans) = stream_sync_graph(20, None);
        g.names[0] = "Memcpy DtoH (Device -> Pageable)".to_owned();
        // Two calls lead: the copy by 18 ms, the synchronize by 9.
        let mut r = BuildReport::default();
        r.set_sync_facts(&g, |t| spans[t.idx()]);
        assert_eq!(
            (r.syncs_returned_early, r.longest_sync_lead_ns),
            (2, 18 * ms)
        );
        // Into pinned memory, the call need not wait.
        g.names[0] = "Memcpy DtoH (Device -> Pinned)".to_owned();
        r.set_sync_facts(&g, |t| spans[t.idx()]);
        assert_eq!(
            (r.syncs_returned_early, r.longest_sync_lead_ns),
            (1, 9 * ms)
        );
        // Split: the issuing part is the zero-length call, the waiting part
        // (task 3, after it on the thread) ends at 19, 1 ms before the copy.
        g.names[0] = "Memcpy DtoH (Device -> Pageable)".to_owned();
        g.tasks.push(g.tasks[1].clone());
        g.processors[1].tasks.insert(1, TaskId(3));
        spans.push((spans[1].0, 19 * ms));
        spans[1].1 = spans[1].0;
        r.set_sync_facts(&g, |t| spans[t.idx()]);
        assert_eq!(
            (r.syncs_returned_early, r.longest_sync_lead_ns),
            (1, 9 * ms)
        );
    }

    #[test]
    fn only_dependencies_found_by_an_inferring_rule_are_inferred() {
        let edge = |kind| Edge {
            from: TaskId(0),
            to: TaskId(1),
            kind,
            anchor: Anchor::End,
            latency_ns: 0,
            inferred: true,
        };
        let dep = RuntimeDep {
            task: TaskId(1),
            target: WaitTarget::Task(TaskId(0)),
            latency_ns: 0,
            inferred: true,
        };
        let mut g = Graph {
            edges: vec![
                edge(DepKind::IntraThread),
                edge(DepKind::InterStream),
                edge(DepKind::InterStream),
            ],
            runtime_deps: vec![dep, dep, dep],
            ..Graph::default()
        };
        let report = BuildReport {
            // A rule naming an edge the graph lacks (a damaged stored
            // report) is ignored.
            edge_rules: vec![
                (1, Rule::CudaSyncEvent),
                (2, Rule::ObservedWait),
                (9, Rule::ObservedWait),
            ],
            runtime_dep_rules: vec![Rule::CudaSyncEvent, Rule::NamedCall],
            ..BuildReport::default()
        };
        report.mark_inferred(&mut g);
        let edges: Vec<bool> = g.edges.iter().map(|e| e.inferred).collect();
        assert_eq!(edges, [false, false, true]);
        let deps: Vec<bool> = g.runtime_deps.iter().map(|d| d.inferred).collect();
        assert_eq!(deps, [false, true, false]);
    }
}
