//! `lumos.synth`'s training recipe (the CLI's `--cluster`,
//! `--global-batch`, `--micro-batch`, `--virtual-stages`,
//! `--no-sequence-parallel`, `--distributed-optimizer`, `--recompute`,
//! `--precision`, `--unfused-attention`, `--no-cuda-sync-events`,
//! `--no-event-records`), checked once when made and applied to the
//! synthesizer's configuration as `lumos synth` applies its flags.

use lumos_models::Cluster;
use lumos_report::range;
use lumos_synth::{Attention, Precision, Recompute, SynthConfig};
use pyo3::prelude::*;

use crate::args;
use crate::errors::{Error, Result};

/// How the synthesized job trains and what its profiler writes, beyond
/// the layout and the GPU; every default is the library's (and the CLI's).
#[pyclass(frozen, module = "lumos._lumos")]
#[derive(Debug, Clone)]
pub struct SynthRecipe {
    cluster: Option<Cluster>,
    global_batch: Option<usize>,
    micro_batch: Option<usize>,
    virtual_stages: Option<usize>,
    sequence_parallel: bool,
    distributed_optimizer: bool,
    recompute: Option<Recompute>,
    precision: Option<Precision>,
    unfused_attention: bool,
    cuda_sync_events: bool,
    event_records: bool,
    stream_waits: bool,
}

#[pymethods]
impl SynthRecipe {
    /// Checks and keeps the recipe; a bad name is a `ConfigError`.
    #[new]
    #[pyo3(signature = (cluster = None, global_batch = None, micro_batch = None, virtual_stages = None, sequence_parallel = true, distributed_optimizer = false, recompute = None, precision = None, unfused_attention = false, cuda_sync_events = true, event_records = true, stream_waits = true))]
    #[allow(clippy::too_many_arguments)] // the CLI's flags, one argument each
    fn py_new(
        cluster: Option<&str>,
        global_batch: Option<Bound<'_, PyAny>>,
        micro_batch: Option<Bound<'_, PyAny>>,
        virtual_stages: Option<Bound<'_, PyAny>>,
        sequence_parallel: bool,
        distributed_optimizer: bool,
        recompute: Option<&str>,
        precision: Option<&str>,
        unfused_attention: bool,
        cuda_sync_events: bool,
        event_records: bool,
        stream_waits: bool,
    ) -> PyResult<SynthRecipe> {
        // Each number in the range of its CLI flag.
        let global_batch = (global_batch.as_ref())
            .map(|v| args::whole("global_batch", v, 1, range::BATCH_MAX))
            .transpose()?
            .map(|v| v as usize);
        let micro_batch = args::count("micro_batch", micro_batch.as_ref())?.map(|v| v as usize);
        let virtual_stages =
            args::count("virtual_stages", virtual_stages.as_ref())?.map(|v| v as usize);
        let cluster = cluster
            .map(|c| Cluster::preset(c).map_err(|e| Error::config(format!("cluster: {e}"))))
            .transpose()?;
        let recompute = recompute
            .map(|n| {
                Recompute::from_name(n).ok_or_else(|| {
                    Error::config(format!("recompute: {n:?} is not none, selective or full"))
                })
            })
            .transpose()?;
        let precision = precision
            .map(|n| {
                Precision::from_name(n).ok_or_else(|| {
                    Error::config(format!("precision: {n:?} is not bf16, fp16 or fp8"))
                })
            })
            .transpose()?;
        Ok(SynthRecipe {
            cluster,
            global_batch,
            micro_batch,
            virtual_stages,
            sequence_parallel,
            distributed_optimizer,
            recompute,
            precision,
            unfused_attention,
            cuda_sync_events,
            event_records,
            stream_waits,
        })
    }
}

impl Default for SynthRecipe {
    fn default() -> Self {
        SynthRecipe {
            cluster: None,
            global_batch: None,
            micro_batch: None,
            virtual_stages: None,
            sequence_parallel: true,
            distributed_optimizer: false,
            recompute: None,
            precision: None,
            unfused_attention: false,
            cuda_sync_events: true,
            event_records: true,
            stream_waits: true,
        }
    }
}

impl SynthRecipe {
    /// The global batch asked, if any.
    pub fn global_batch(&self) -> Option<usize> {
        self.global_batch
    }

    /// Applies the recipe to `cfg` (after its layout and GPU are set), in
    /// the order `lumos synth` applies its flags.
    pub fn apply(&self, cfg: &mut SynthConfig) -> Result<()> {
        if let Some(c) = &self.cluster {
            cfg.gpu = c.gpu.clone();
            cfg.network = Some(c.network);
        }
        if let Some(b) = self.micro_batch {
            cfg.model.micro_batch = b;
        }
        if let Some(g) = self.global_batch {
            let p = &mut cfg.parallel;
            p.microbatches = p
                .microbatches_for(g, cfg.model.micro_batch)
                .ok_or_else(|| {
                    Error::config(format!(
                        "global_batch {g} is not a multiple of micro-batch {} x dp {}",
                        cfg.model.micro_batch, p.dp
                    ))
                })?;
        }
        if let Some(v) = self.virtual_stages {
            cfg.parallel.virtual_stages = v;
        }
        cfg.parallel.sequence_parallel = self.sequence_parallel;
        cfg.parallel.distributed_optimizer = self.distributed_optimizer;
        let t = &mut cfg.training;
        if let Some(r) = self.recompute {
            t.recompute = r;
        }
        if let Some(p) = self.precision {
            t.precision = p;
        }
        if self.unfused_attention {
            t.attention = Attention::Unfused;
        }
        t.cuda_sync_events = self.cuda_sync_events;
        t.event_records = self.event_records;
        t.stream_waits = self.stream_waits;
        Ok(())
    }
}
