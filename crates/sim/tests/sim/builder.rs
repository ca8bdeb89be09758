//! A small builder for hand-made execution graphs.

use lumos_graph::*;
use lumos_sim::{simulate, Schedule, SimError, SimOptions};

/// Builds a [`Graph`] task by task; each task is appended to its
/// processor's order.
#[derive(Default)]
pub struct Builder {
    pub graph: Graph,
}

impl Builder {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn thread(&mut self) -> ProcId {
        let tid = self.graph.processors.len() as i64;
        self.proc(ProcKind::Thread { pid: 1, tid })
    }

    pub fn stream(&mut self, device: i64) -> ProcId {
        let stream = self.graph.processors.len() as i64;
        self.proc(ProcKind::Stream { device, stream })
    }

    fn proc(&mut self, kind: ProcKind) -> ProcId {
        self.graph.processors.push(Processor {
            kind,
            tasks: Vec::new(),
        });
        ProcId(self.graph.processors.len() as u32 - 1)
    }

    fn name(&mut self, name: &str) -> NameId {
        if let Some(i) = self.graph.names.iter().position(|n| n == name) {
            return NameId(i as u32);
        }
        self.graph.names.push(name.to_owned());
        NameId(self.graph.names.len() as u32 - 1)
    }

    pub fn task(&mut self, proc: ProcId, kind: TaskKind, name: &str, duration_ns: i64) -> TaskId {
        let name = self.name(name);
        self.graph.tasks.push(Task {
            kind,
            name,
            proc,
            duration_ns,
            release_ns: 0,
            collective: None,
            correlation: 0,
        });
        let id = TaskId(self.graph.tasks.len() as u32 - 1);
        self.graph.processors[proc.idx()].tasks.push(id);
        id
    }

    pub fn cpu(&mut self, proc: ProcId, duration_ns: i64) -> TaskId {
        self.task(proc, TaskKind::CpuOp, "op", duration_ns)
    }

    pub fn call(&mut self, proc: ProcId, duration_ns: i64) -> TaskId {
        self.task(proc, TaskKind::Runtime, "cudaLaunchKernel", duration_ns)
    }

    pub fn kernel(&mut self, proc: ProcId, duration_ns: i64) -> TaskId {
        self.task(proc, TaskKind::Kernel, "gemm_kernel", duration_ns)
    }

    pub fn comm(&mut self, proc: ProcId, duration_ns: i64) -> TaskId {
        let t = self.task(
            proc,
            TaskKind::Kernel,
            "ncclDevKernel_AllReduce",
            duration_ns,
        );
        self.graph.collectives.push(Collective {
            name: "allreduce".into(),
            process_group: None,
            seq: None,
            bytes: None,
            elements: None,
            group_size: None,
        });
        self.graph.tasks[t.idx()].collective = Some(self.graph.collectives.len() as u32 - 1);
        t
    }

    pub fn release(&mut self, t: TaskId, release_ns: i64) {
        self.graph.tasks[t.idx()].release_ns = release_ns;
    }

    pub fn edge(
        &mut self,
        from: TaskId,
        to: TaskId,
        kind: DepKind,
        anchor: Anchor,
        latency_ns: i64,
    ) -> u32 {
        self.graph.edges.push(Edge {
            from,
            to,
            kind,
            anchor,
            latency_ns,
            inferred: false,
        });
        self.graph.edges.len() as u32 - 1
    }

    /// A launch: the kernel may start `latency_ns` after the call starts.
    pub fn launch(&mut self, call: TaskId, kernel: TaskId, latency_ns: i64) -> u32 {
        self.edge(call, kernel, DepKind::Launch, Anchor::Start, latency_ns)
    }

    pub fn wait(&mut self, call: TaskId, target: WaitTarget, latency_ns: i64) -> u32 {
        self.graph.runtime_deps.push(RuntimeDep {
            task: call,
            target,
            latency_ns,
            inferred: false,
        });
        self.graph.runtime_deps.len() as u32 - 1
    }

    pub fn run(&self) -> Schedule {
        self.run_with(&SimOptions::default())
    }

    pub fn run_with(&self, opts: &SimOptions) -> Schedule {
        simulate(&self.graph, opts).expect("graph schedules")
    }

    pub fn try_run(&self) -> Result<Schedule, SimError> {
        self.try_run_with(&SimOptions::default())
    }

    pub fn try_run_with(&self, opts: &SimOptions) -> Result<Schedule, SimError> {
        simulate(&self.graph, opts)
    }
}

/// Start and end of a task, for terse assertions.
pub fn span(s: &Schedule, t: TaskId) -> (i64, i64) {
    (s.start_ns[t.idx()], s.end_ns[t.idx()])
}
