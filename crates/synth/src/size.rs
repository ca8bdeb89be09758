//! How big a synthesized job's traces would be, checked before anything
//! is allocated, so that what the synthesizer writes can be read back.

use std::fmt;

use crate::SynthConfig;

/// Most GPUs (tp x pp x dp) a synthesized job may have: each trace lists
/// its process groups, whose size grows with the world.
pub const MAX_WORLD_SIZE: u128 = 1 << 20;

/// Most bytes of JSON one synthesized rank may hold. A rank's trace is
/// rendered in memory before it is compressed (one per thread at a time),
/// and 4 GB is the largest trace lumos' reader was measured on
/// (docs/PERFORMANCE.md, Scale), so that what is written can be read.
pub const MAX_RANK_BYTES: u128 = 4_000_000_000;

/// What a synthesized rank holds, measured on gpt-tiny and gpt-small
/// traces and rounded up: about 290 events per layer and micro-batch (440
/// with tensor parallelism), 140 per step besides, 215 bytes per event,
/// and 36 bytes of process-group metadata per rank of the world.
const EVENTS_PER_LAYER_PASS: u128 = 500;
const EVENTS_PER_STEP: u128 = 200;
const BYTES_PER_EVENT: u128 = 250;
const BYTES_PER_WORLD_RANK: u128 = 64;
/// Per step and per chunk of parameters a rank's optimizer updates: four
/// multi-tensor kernels (the gradient norm, its scaling, Adam, the copy to
/// BF16), each with its launch call, whose long kernel names make about
/// 3,750 bytes (measured on a 4-layer model of hidden size 524,288:
/// 4.72 GB of JSON for 2 steps of 629,000 chunks), rounded up.
const EVENTS_PER_OPTIMIZER_CHUNK: u128 = 8;
const BYTES_PER_OPTIMIZER_CHUNK: u128 = 4_000;

/// Why a configuration is too big to synthesize; each front end words it
/// in its own terms (flags or keywords).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SizeRefusal {
    /// tp x pp x dp is over [`MAX_WORLD_SIZE`].
    World {
        /// tp x pp x dp.
        world: u128,
    },
    /// More model chunks (stages x virtual stages) than layers.
    Chunks {
        /// The model's layers.
        layers: usize,
        /// Pipeline stages.
        pp: usize,
        /// Model chunks per stage.
        virtual_stages: usize,
    },
    /// Each rank's trace would be over [`MAX_RANK_BYTES`].
    Bytes {
        /// Estimated events per rank.
        events: u128,
        /// Estimated bytes of JSON per rank.
        bytes: u128,
        /// Profiled steps.
        steps: usize,
        /// Micro-batches per step.
        microbatches: usize,
        /// Layers per stage.
        layers_per_stage: u128,
    },
}

impl fmt::Display for SizeRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            SizeRefusal::World { world } => write!(
                f,
                "tp x pp x dp is {world} GPUs; synth writes jobs of at most {MAX_WORLD_SIZE}"
            ),
            SizeRefusal::Chunks {
                layers,
                pp,
                virtual_stages,
            } => write!(
                f,
                "invalid config: {layers} layers cannot fill {pp} pipeline stages of \
                 {virtual_stages} model chunks"
            ),
            SizeRefusal::Bytes {
                events,
                bytes,
                steps,
                microbatches,
                layers_per_stage,
            } => write!(
                f,
                "each rank's trace would hold about {events} events, about {} GB of JSON \
                 ({steps} steps of {microbatches} micro-batches over {layers_per_stage} layers \
                 per stage); synth writes at most {} GB per rank",
                bytes / 1_000_000_000,
                MAX_RANK_BYTES / 1_000_000_000
            ),
        }
    }
}

/// Refuses a configuration whose traces lumos could not hold (see
/// [`MAX_RANK_BYTES`]) or whose model chunks outnumber its layers.
pub fn check_size(cfg: &SynthConfig) -> Result<(), SizeRefusal> {
    let p = &cfg.parallel;
    let world = p.tp as u128 * p.pp as u128 * p.dp as u128;
    if world > MAX_WORLD_SIZE {
        return Err(SizeRefusal::World { world });
    }
    // Every model chunk needs a layer; said here, before the
    // synthesizer's check walks every chunk.
    if p.pp as u128 * p.virtual_stages as u128 > cfg.model.layers as u128 {
        return Err(SizeRefusal::Chunks {
            layers: cfg.model.layers,
            pp: p.pp,
            virtual_stages: p.virtual_stages,
        });
    }
    let layers_per_stage = (cfg.model.layers as u128).div_ceil(p.pp.max(1) as u128);
    // The optimizer's kernels grow with the parameters a rank updates, not
    // with the layers: a model of huge hidden size is mostly those (a
    // 4-layer model of hidden size 1,048,576 aborted on a 16 GiB
    // allocation). Bounded above by the model's over the tensor-parallel
    // ranks.
    let params = u128::from(cfg.model.params()) / p.tp.max(1) as u128;
    let chunks = cfg.steps as u128 * params.div_ceil(u128::from(crate::megatron::MTA_CHUNK));
    let passes = cfg.steps as u128
        * (EVENTS_PER_STEP + p.microbatches as u128 * layers_per_stage * EVENTS_PER_LAYER_PASS);
    let events = passes + chunks * EVENTS_PER_OPTIMIZER_CHUNK;
    let bytes = passes * BYTES_PER_EVENT
        + chunks * BYTES_PER_OPTIMIZER_CHUNK
        + world * BYTES_PER_WORLD_RANK;
    if bytes > MAX_RANK_BYTES {
        return Err(SizeRefusal::Bytes {
            events,
            bytes,
            steps: cfg.steps,
            microbatches: p.microbatches,
            layers_per_stage,
        });
    }
    Ok(())
}
