//! Predicting new training configurations by editing the execution graph
//! (method.md section 6).
//!
//! Data flows one way:
//!
//! ```text
//! Graph + Measured + TraceContext (one per traced rank / pipeline stage)
//!   --discover--> Structure: units, steps, passes, layers, work classes,
//!                 parallel groups, configuration, StructureReport
//!   --Baseline::new--> calibrated models (GEMM curve, network), parameters
//!   --Prediction::with_*--> Target, stage graphs rebuilt and re-timed
//!   --Prediction::simulate--> Outcome (steps, breakdown per stage)
//! ```
//!
//! - [`discover()`] finds, in one rank's graph, the step's prologue, the
//!   forward and backward pass of each micro-batch with their transformer
//!   layers (from scopes named like layers, else the repeated block of
//!   top-level operators), the optimizer epilogue, the GEMMs with their
//!   shapes, and which collectives serve data, tensor, pipeline or
//!   model-parallel groups, each finding with its confidence.
//! - [`Baseline`] holds the traced ranks (one per pipeline stage, or one
//!   rank), the traced [`Config`], the GEMM efficiency curve and network
//!   model calibrated on them ([`GemmCalibration`], [`NetworkCalibration`];
//!   replaceable through [`Baseline::with_models`]). Given every rank of a
//!   large job, push them one at a time into [`Candidates`] (each
//!   [`Discovered`] as it is read) and make the baseline with
//!   [`Baseline::of`]: a rank that cannot stand for its stage gives up its
//!   graph as it comes.
//! - A [`Prediction`] is built by edits, each a function returning a new
//!   prediction with new graphs: [`Prediction::with_dp`],
//!   [`Prediction::with_tp`], [`Prediction::with_pp`],
//!   [`Prediction::with_microbatches`], [`Prediction::with_layers`],
//!   [`Prediction::with_hidden`], [`Prediction::with_ffn`],
//!   [`Prediction::with_micro_batch`],
//!   [`Prediction::with_kernel_scale`], [`Prediction::with_network`], or
//!   several at once with [`Prediction::with_edits`]. Every target is
//!   checked first: a configuration that cannot exist, an edit the traces
//!   do not support, or stages too large to hold are refused
//!   ([`PredictError::is_usage`]).
//!   Structural edits copy units of the traced graphs in a new order
//!   (layers cloned or removed in every pass, passes in the 1F1B order of
//!   each new stage), re-attaching every dependency by its position;
//!   durations are then recomputed from the traced ones with the models,
//!   each tagged with its [`Source`]. The graphs never hold a measured
//!   start.
//! - [`Prediction::simulate`] replays them; several stages replay together,
//!   coupled by their transfers. [`Prediction::written_job`] is the
//!   predicted job as the stages' timelines state it (ranks, Megatron's
//!   process groups of the target layout, each collective's group, `Seq`
//!   and peers), checked to pair across the stages what the replay
//!   coupled.
//! - [`transfer_durations`] re-times a graph with the durations measured in
//!   another recording of the same program (`--durations-from`), matching
//!   operators by a sequence alignment ([`Transfer`]).
//!
//! See docs/PREDICTION.md for the method, its assumptions and its
//! validation.
//!
//! ```
//! use std::path::Path;
//! use lumos_predict::{Baseline, Input, TraceContext};
//! use lumos_models::GpuSpec;
//! use lumos_synth::{synthesize_rank, ModelPreset, Parallelism, SynthConfig};
//!
//! // One rank of a small data-parallel job...
//! let cfg = SynthConfig::new(
//!     ModelPreset::preset("gpt-tiny").unwrap(),
//!     Parallelism::new(1, 1, 2, 2),
//!     GpuSpec::h100(),
//! );
//! let text = synthesize_rank(&cfg, 0).unwrap();
//! let trace = lumos_trace::read_bytes(Path::new("rank0.json"), text.as_bytes()).unwrap();
//! let (graph, measured, _) = lumos_graph::build(&trace);
//! let ctx = TraceContext::from_trace(&trace, &measured);
//! let base = Baseline::new(vec![Input { name: "rank0".into(), graph, measured, ctx }]).unwrap();
//! assert_eq!(base.config.layers, 4);
//!
//! // ...predicted with twice the layers and sixteen data-parallel ranks.
//! let p = base.identity().with_layers(8).unwrap().with_dp(16).unwrap();
//! let traced = base.identity();
//! let replayed = traced.simulate().unwrap();
//! let predicted = p.simulate().unwrap();
//! assert!(predicted.mean_step_ns() > replayed.mean_step_ns());
//! ```
#![deny(missing_docs)]

mod assemble;
mod baseline;
mod candidates;
mod checks;
mod confidence;
mod config;
mod context;
mod couple;
mod discover;
mod edits;
mod error;
mod models;
mod outcome;
mod pattern;
mod plan;
mod queue;
mod retime;
mod shapes;
mod slots;
#[cfg(test)]
mod testutil;
mod tp_sites;
mod transfer;
mod units;
mod written;

pub use baseline::{Baseline, Input, Models, ParamCount};
pub use candidates::{discover_lent, held_to_the_end, Candidates, Discovered, LentInput};
pub use checks::{estimated_tasks, BYTES_PER_PREDICTED_TASK, MAX_PREDICTED_TASKS, MAX_WORLD_SIZE};
pub use confidence::{
    ModelFit, PredictionConfidence, SourceShares, EXTRAPOLATIONS_LOW, INFERRED_PATH_MEDIUM,
    MODELLED_LOW, MODELLED_MEDIUM, MODEL_ERROR_LOW_PCT, MODEL_ERROR_MEDIUM_PCT,
};
pub use config::{
    repeated_pattern, replay_scales, Config, Coord, KernelScale, KernelSelector, Layout,
};
pub use context::{GroupInfo, TraceContext};
pub use couple::Job;
pub use discover::{
    discover, discover_with_hint, one_layer_hint, CommInfo, Confidence, DiscoveredConfig, Finding,
    GroupClass, GroupReport, LayerHint, LayerMethod, P2p, Part, PassKind, PassStructure, PhaseTime,
    Role, StepStructure, Structure, StructureReport, WorkClass,
};
pub use edits::{Edit, EditSet, PredictedStage, Prediction, Target};
pub use error::PredictError;
pub use models::{
    gpu_for_device, identify_gpu, network_preset, network_with, CommModel, ComputeModel,
    GemmCalibration, GpuMatch, LinkCalibration, LinkOverrides, NetworkCalibration,
    NetworkOverrides, Source, ENVELOPE_PERCENTILE, GEMM_MAX_FIT_ERROR_PCT,
};
pub use outcome::{Outcome, StageOutcome, Steadiness};
pub use plan::StageRole;
pub use queue::LaunchQueue;
pub use retime::{collective_issue_spans, DEFAULT_COLLECTIVE_ISSUE_NS};
pub use shapes::GemmShape;
pub use transfer::{transfer_durations, MatchedTime, ThreadPair, Transfer, MIN_MATCHED_SHARE};
pub use units::{Unit, Units, NO_UNIT};
pub use written::{WrittenComm, WrittenJob, WrittenStage};
