//! Tasks: CPU leaves per thread (polling loops folded), GPU tasks per stream,
//! launches by correlation, and collectives.

use super::*;

/// The indices of the events that become tasks, by track, from the one
/// pass over the trace's events that every step shares.
pub(super) struct Tracks {
    /// CPU events (ops, annotations, runtime and driver calls) by
    /// (pid, tid), in file order.
    threads: FxHashMap<(Ident, Ident), Vec<u32>>,
    /// GPU work by (device, stream), in file order.
    streams: FxHashMap<(i64, i64), Vec<u32>>,
}

/// Event indices grouped by track while the events are read. Consecutive
/// events are mostly on one track, so the last track's list is kept at hand
/// and the map is only hashed into when the track changes. Indices are
/// `u32` (the reader keeps fewer than 2^32 events: `collective_ops` is
/// `u32` too): the lists hold every event until its track's tasks are
/// made.
struct ByTrack<K> {
    slot: FxHashMap<K, usize>,
    lists: Vec<(K, Vec<u32>)>,
    last: Option<(K, usize)>,
}

impl<K: Copy + Eq + std::hash::Hash> ByTrack<K> {
    fn new() -> Self {
        ByTrack {
            slot: FxHashMap::default(),
            lists: Vec::new(),
            last: None,
        }
    }

    fn push(&mut self, key: K, i: u32) {
        let s = match self.last {
            Some((k, s)) if k == key => s,
            _ => {
                let n = self.lists.len();
                let s = *self.slot.entry(key).or_insert(n);
                if s == n {
                    self.lists.push((key, Vec::new()));
                }
                self.last = Some((key, s));
                s
            }
        };
        self.lists[s].1.push(i);
    }

    fn into_map(self) -> FxHashMap<K, Vec<u32>> {
        self.lists.into_iter().collect()
    }
}

impl Builder {
    /// Sorts the events out in one pass: tasks by track, and the few events
    /// later steps read (`cuda_sync` events, CPU ops with collective
    /// arguments) into [`Builder::sync_events`] and
    /// [`Builder::collective_ops`], so that no step reads every event again.
    #[inline(never)]
    pub(super) fn tracks(&mut self, events: &[Event]) -> Tracks {
        let names = &self.g.names;
        let (mut threads, mut streams) = (ByTrack::new(), ByTrack::new());
        for (i, e) in events.iter().enumerate() {
            match e.category {
                Category::CpuOp
                | Category::UserAnnotation
                | Category::Runtime
                | Category::Driver => {
                    threads.push((e.pid, e.tid), i as u32);
                    // The boxed extra is looked at last: reaching it is a
                    // cache miss.
                    let collective = || e.extra.as_ref().is_some_and(|x| x.collective.is_some());
                    if e.category == Category::CpuOp && e.external_id().is_some() && collective() {
                        self.collective_ops.push(i as u32);
                    }
                }
                Category::Kernel | Category::Memcpy | Category::Memset => {
                    let device = e.device().unwrap_or(ident_num(e.pid));
                    let stream = e
                        .stream()
                        .or_else(|| stream_of_tid(names, e.tid))
                        .unwrap_or(0);
                    streams.push((device, stream), i as u32);
                }
                Category::CudaSync => self.sync_events.push(SyncRecord {
                    correlation: e.correlation(),
                    stream: e.stream(),
                    device: e.device().unwrap_or(ident_num(e.pid)),
                    stream_wait: names[e.name.0 as usize] == "Stream Wait Event",
                    waits_on: e.extra.as_ref().and_then(|x| {
                        Some((x.wait_on_stream()?, x.wait_on_event_record_correlation()?))
                    }),
                }),
                _ => {}
            }
        }
        let tracks = Tracks {
            threads: threads.into_map(),
            streams: streams.into_map(),
        };
        // At most one task per event (a few more where calls are split):
        // reserved once instead of grown, which copies them several times.
        let n = (tracks.threads.values().map(Vec::len).sum::<usize>())
            + tracks.streams.values().map(Vec::len).sum::<usize>();
        self.g.tasks.reserve(n);
        self.raw.reserve(n);
        self.pos.reserve(n);
        self.g.task_scopes.reserve(n);
        tracks
    }

    /// CPU leaves become tasks; annotations are returned for steps. Nesting
    /// policy: only leaves of each thread's call tree are scheduled; time a
    /// parent spends outside its children becomes the gap before the next
    /// leaf, so CPU overhead survives replay.
    #[inline(never)]
    pub(super) fn cpu_tasks(
        &mut self,
        events: &[Event],
        tracks: &mut Tracks,
    ) -> Vec<StepAnnotation> {
        let by_thread = &mut tracks.threads;
        let mut keys: Vec<_> = by_thread.keys().copied().collect();
        keys.sort();
        let mut steps = Vec::new();
        // (correlation, call) of every runtime call, in the order seen.
        let mut calls: Vec<(u64, TaskId)> = Vec::new();
        for key in keys {
            // Parents before children: earlier start, then longer, then
            // annotations before ops before runtime calls. The keys are
            // taken once, so that sorting does not reach into the events.
            // The keys are distinct (the index is one of them), so every
            // way of sorting them gives this one order. Exporters write a
            // thread's calls and its ops in separate runs, each in tree
            // order, which `sort_nested` sorts in linear time; the two are
            // then merged.
            let list = by_thread.remove(&key).unwrap_or_default();
            let (mut ops_k, mut calls_k) = (Vec::with_capacity(list.len()), Vec::new());
            for i in list {
                let e = &events[i as usize];
                let rank: u8 = match e.category {
                    Category::UserAnnotation => 0,
                    Category::CpuOp => 1,
                    _ => 2,
                };
                // The index as `u32` (its list's type): 24 bytes a key, not
                // 32, over the three lists alive while they are merged.
                let k = (e.ts_ns, std::cmp::Reverse(e.dur_ns), rank, i);
                if rank == 2 {
                    calls_k.push(k);
                } else {
                    ops_k.push(k);
                }
            }
            sort_nested(&mut calls_k);
            sort_nested(&mut ops_k);
            let keyed = merge_sorted(&ops_k, &calls_k);
            drop((ops_k, calls_k));
            let idx: Vec<usize> = keyed.iter().map(|k| k.3 as usize).collect();
            let mut has_child = vec![false; idx.len()];
            // Positions as `u32` (a thread has fewer than 2^32 events):
            // these vectors are the build's largest while a long thread's
            // tasks are made.
            let mut parent: Vec<Option<u32>> = vec![None; idx.len()];
            let mut stack: Vec<usize> = Vec::new();
            // The tree is built from the keys alone, without going back to
            // the events (each a cache miss on a large trace).
            for (k, &(ts, std::cmp::Reverse(dur), _, _)) in keyed.iter().enumerate() {
                let end = ts.saturating_add(dur);
                while let Some(&top) = stack.last() {
                    let (p_ts, std::cmp::Reverse(p_dur), p_rank, _) = keyed[top];
                    let p_end = p_ts.saturating_add(p_dur);
                    // Runtime calls are never parents: a zero-length call at
                    // the same timestamp is a sibling, not a child.
                    let can_parent = p_rank != 2;
                    if can_parent && ts < p_end && end <= p_end {
                        break;
                    }
                    if can_parent && ts < p_end {
                        self.report.partial_overlaps += 1;
                    }
                    stack.pop();
                }
                if let Some(&top) = stack.last() {
                    has_child[top] = true;
                    parent[k] = Some(top as u32);
                }
                stack.push(k);
            }
            drop((keyed, stack));
            let proc = self.processor(ProcKind::Thread {
                pid: ident_num(key.0),
                tid: ident_num(key.1),
            });
            self.thread_pid.insert(proc, key.0);
            let (polls, absorbed) = polling_runs(events, &self.g.names, &idx, &has_child, &parent);
            let mut next_poll = 0;
            let mut last_end = i64::MIN;
            let mut scope_of: Vec<Option<ScopeId>> = vec![None; idx.len()];
            for (k, &i) in idx.iter().enumerate() {
                while polls.get(next_poll).is_some_and(|p| p.0 < k) {
                    next_poll += 1;
                }
                let poll_end = polls.get(next_poll).filter(|p| p.0 == k).map(|p| p.1);
                if absorbed[k] {
                    continue;
                }
                let e = &events[i];
                let name = &self.g.names[e.name.0 as usize];
                // Legacy traces record steps as `Operator` events.
                if name.starts_with("ProfilerStep#") && !e.category.is_runtime() {
                    steps.push(StepAnnotation {
                        name: NameId(e.name.0),
                        proc,
                        start: e.ts_ns,
                        end: e.end_ns(),
                    });
                }
                let enclosing = parent[k].and_then(|p| scope_of[p as usize]);
                if has_child[k] {
                    // Parents come before their children in this order, so
                    // the enclosing scope already exists.
                    scope_of[k] = Some(ScopeId(self.g.scopes.len() as u32));
                    let extra = e.extra.as_deref();
                    self.g.scopes.push(Scope {
                        name: NameId(e.name.0),
                        parent: enclosing,
                        annotation: e.category == Category::UserAnnotation,
                        input_dims: extra.and_then(|x| x.input_dims.clone()),
                        input_type: extra.and_then(|x| x.input_type.clone()),
                    });
                    self.scope_spans.push(Span {
                        start_ns: e.ts_ns,
                        end_ns: e.end_ns(),
                    });
                    continue;
                }
                let kind = match e.category {
                    Category::CpuOp => TaskKind::CpuOp,
                    Category::UserAnnotation => TaskKind::Annotation,
                    _ => TaskKind::Runtime,
                };
                // Leaves that overlap a previous leaf (clock noise) are
                // clipped so the thread runs one thing at a time.
                let start = e.ts_ns.max(last_end);
                let end = poll_end.unwrap_or(e.end_ns()).max(start);
                last_end = end;
                let id = self.add_task(kind, e, proc, start, end);
                self.g.task_scopes[id.idx()] = enclosing;
                if poll_end.is_some() {
                    self.polls.insert(id);
                    self.report.polling_loops += 1;
                }
                if kind == TaskKind::Runtime {
                    if let Some(c) = e.correlation() {
                        self.report.correlated_calls += 1;
                        calls.push((c, id));
                    }
                }
            }
            if self.g.processors[proc.idx()].tasks.is_empty() {
                self.g.processors.pop();
            }
        }
        let (index, repeated) = CorrIndex::new(&calls);
        self.call_by_corr = index;
        self.report.repeated_correlations += repeated;
        steps
    }

    #[inline(never)]
    pub(super) fn gpu_tasks<'e>(
        &mut self,
        events: &'e [Event],
        tracks: &mut Tracks,
    ) -> GpuArgs<'e> {
        let mut gpu_args = GpuArgs::new();
        let by_stream = &mut tracks.streams;
        let mut keys: Vec<_> = by_stream.keys().copied().collect();
        keys.sort();
        for key in keys {
            let mut keyed: Vec<_> = (by_stream.remove(&key).unwrap_or_default())
                .into_iter()
                .map(|i| {
                    (
                        events[i as usize].ts_ns,
                        events[i as usize].correlation(),
                        i,
                    )
                })
                .collect();
            keyed.sort_unstable();
            let idx: Vec<usize> = keyed.into_iter().map(|k| k.2 as usize).collect();
            let proc = self.processor(ProcKind::Stream {
                device: key.0,
                stream: key.1,
            });
            let mut last_end = i64::MIN;
            for &i in &idx {
                let e = &events[i];
                let kind = match e.category {
                    Category::Kernel => TaskKind::Kernel,
                    Category::Memcpy => TaskKind::Memcpy,
                    _ => TaskKind::Memset,
                };
                let start = e.ts_ns.max(last_end);
                if start > e.ts_ns {
                    self.report.clipped_gpu_overlaps += 1;
                }
                let end = e.end_ns().max(start);
                last_end = end;
                let id = self.add_task(kind, e, proc, start, end);
                // What `collectives` reads, taken while the event is at hand.
                let own = e.extra.as_ref().and_then(|x| x.collective.as_deref());
                gpu_args.push((id, e.external_id(), own));
            }
        }
        gpu_args
    }

    #[inline(never)]
    pub(super) fn launches(&mut self) {
        self.launcher = vec![None; self.g.tasks.len()];
        // (call, GPU task) in GPU task order.
        let mut pairs: Vec<(u32, TaskId)> = Vec::new();
        for id in 0..self.g.tasks.len() {
            let tid = TaskId(id as u32);
            let task = &self.g.tasks[id];
            if !task.kind.is_gpu() {
                continue;
            }
            if task.correlation == 0 {
                self.report.gpu_without_launch += 1;
                continue;
            }
            match self.call_by_corr.get(&task.correlation) {
                Some(&call) => {
                    self.g.task_scopes[id] = self.g.task_scopes[call.idx()];
                    self.launcher[id] = Some(call);
                    pairs.push((call.0, tid));
                    self.edge(call, tid, DepKind::Launch, Anchor::Start);
                }
                None => self.report.gpu_without_launch += 1,
            }
        }
        self.launched = Launched::new(self.g.tasks.len(), &pairs);
        // Fixed from here on: later steps split calls, which keeps their
        // start, and add no GPU task.
        self.launch_times = self.stream_launch_times();
    }

    /// Communication tasks: `Collective name` on the GPU task, else on the
    /// CPU op it was launched under (same `External id`), else a name
    /// pattern.
    #[inline(never)]
    pub(super) fn collectives(&mut self, events: &[Event], gpu_args: GpuArgs<'_>) {
        let mut by_ext: FxHashMap<u64, &lumos_trace::CollectiveArgs> = FxHashMap::default();
        for e in self.collective_ops.iter().map(|&i| &events[i as usize]) {
            if let (Some(x), Some(c)) = (
                e.external_id(),
                e.extra.as_ref().and_then(|x| x.collective.as_ref()),
            ) {
                by_ext.entry(x).or_insert(c);
            }
        }
        // Whether each name is a collective library's kernel, worked out
        // once per name rather than once per task.
        let mut comm_name: Vec<Option<bool>> = vec![None; self.g.names.len()];
        // Every GPU task, in task order, with its event's `External id` and
        // collective arguments (`gpu_tasks`).
        for (tid, external_id, own) in gpu_args {
            let id = tid.idx();
            let task = &self.g.tasks[id];
            let name = &self.g.names[task.name.0 as usize];
            let via_op = external_id.and_then(|x| by_ext.get(&x).copied());
            let args = own.filter(|c| c.name.is_some()).or(via_op);
            let by_name = match comm_name.get_mut(task.name.0 as usize) {
                Some(known) => *known.get_or_insert_with(|| is_comm_kernel_name(name)),
                None => is_comm_kernel_name(name),
            };
            let coll = match args {
                Some(a) if by_name || own.is_some() => Collective {
                    name: a
                        .name
                        .as_deref()
                        .map_or_else(|| comm_family(name), str::to_owned),
                    process_group: a.pg_name.as_deref().map(str::to_owned),
                    seq: a.seq,
                    bytes: a.bytes(),
                    elements: a.in_nelems.max(a.out_nelems),
                    group_size: a.group_size,
                },
                _ if by_name => Collective {
                    name: comm_family(name),
                    process_group: None,
                    seq: None,
                    bytes: None,
                    elements: None,
                    group_size: None,
                },
                _ => continue,
            };
            if args.is_some() {
                self.report.comm_by_args += 1;
            } else {
                self.report.comm_by_name += 1;
            }
            self.g.tasks[id].collective = Some(self.g.collectives.len() as u32);
            self.g.collectives.push(coll);
        }
    }
}
