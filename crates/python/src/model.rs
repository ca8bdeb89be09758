//! `lumos.synth`'s model: a preset name, or a model file (JSON with
//! `layers`, `hidden`, `heads` and optionally `name`, `ffn_hidden`,
//! `seq_len`, `micro_batch`, `vocab`, `kv_heads`, `swiglu`), as `lumos
//! synth --model` takes, or the same object given as a dict.
//!
//! The CLI's reader (`model_from_arg` in crates/cli/src/commands/synth.rs)
//! lives in the binary, which no library can call, and the synthesizer
//! knows no JSON (only the report crate and the front ends know serde);
//! so this is the same reading, with the same fields, ranges and
//! messages, in the other front end. Keep the two in step.

use std::path::Path;

use lumos_synth::ModelPreset;
use serde_json::Value;

use crate::errors::{Error, Kind, Result};

/// Largest layer, head or micro-batch count (the CLI's `range::COUNT_MAX`).
const COUNT_MAX: u64 = 65_536;
/// Largest hidden, FFN, sequence or vocabulary size (the CLI's
/// `range::SIZE_MAX`).
const SIZE_MAX: u64 = 1 << 20;

/// The model `arg` names: a model file when one exists at that path, else
/// a preset. An unknown preset is a `ConfigError`; a bad file an
/// `InputError` (an unreadable one a `LumosIOError`) naming it.
pub fn from_arg(arg: &str) -> Result<ModelPreset> {
    if !Path::new(arg).is_file() {
        return ModelPreset::preset(arg).map_err(|e| Error::config(format!("model: {e}")));
    }
    let text = std::fs::read_to_string(arg)
        .map_err(|e| Error::new(Kind::Io, format!("{arg}: cannot read: {e}")))?;
    from_json(arg, &text)
}

/// The model of a model file's text; `what` names it in messages (the
/// file, or `model` for a dict).
pub fn from_json(what: &str, text: &str) -> Result<ModelPreset> {
    let bad = |m: String| Error::new(Kind::Input, format!("{what}: {m}"));
    let v: Value = serde_json::from_str(text).map_err(|e| bad(format!("invalid JSON: {e}")))?;
    let field = |k: &str, max: u64| -> Result<Option<usize>> {
        match v.get(k) {
            None => Ok(None),
            Some(x) => x
                .as_u64()
                .filter(|n| (1..=max).contains(n))
                .map(|n| Some(n as usize))
                .ok_or_else(|| bad(format!("\"{k}\" must be a whole number from 1 to {max}"))),
        }
    };
    let (Some(layers), Some(hidden), Some(heads)) = (
        field("layers", COUNT_MAX)?,
        field("hidden", SIZE_MAX)?,
        field("heads", COUNT_MAX)?,
    ) else {
        return Err(bad(
            "a model file needs \"layers\", \"hidden\" and \"heads\"".into(),
        ));
    };
    let name = v.get("name").and_then(|n| n.as_str()).unwrap_or("custom");
    let mut m = ModelPreset::gpt(name, layers, hidden, heads);
    if let Some(f) = field("ffn_hidden", SIZE_MAX)? {
        m.ffn_hidden = f;
    }
    if let Some(s) = field("seq_len", SIZE_MAX)? {
        m.seq_len = s;
    }
    if let Some(b) = field("micro_batch", COUNT_MAX)? {
        m.micro_batch = b;
    }
    if let Some(b) = field("vocab", SIZE_MAX)? {
        m.vocab = b;
    }
    m.kv_heads = field("kv_heads", COUNT_MAX)?.unwrap_or(heads);
    match v.get("swiglu") {
        None => {}
        Some(Value::Bool(b)) => m.swiglu = *b,
        Some(_) => return Err(bad("\"swiglu\" must be true or false".into())),
    }
    Ok(m)
}

/// Most GPUs (tp x pp x dp) a synthesized job may have (the CLI's
/// `MAX_WORLD_SIZE`).
const MAX_WORLD_SIZE: u128 = 1 << 20;
/// Most bytes of JSON one synthesized rank may hold (the CLI's
/// `MAX_RANK_BYTES`: the largest trace the reader was measured on).
const MAX_RANK_BYTES: u128 = 4_000_000_000;
// What a synthesized rank holds, as the CLI estimates it
// (crates/cli/src/commands/synth.rs, where the measurements are told).
const EVENTS_PER_LAYER_PASS: u128 = 500;
const EVENTS_PER_STEP: u128 = 200;
const BYTES_PER_EVENT: u128 = 250;
const BYTES_PER_WORLD_RANK: u128 = 64;

/// Refuses, before anything is allocated, a configuration whose traces
/// lumos could not hold, as `lumos synth` does: a `ConfigError` giving the
/// estimate and the limit.
pub fn check_size(cfg: &lumos_synth::SynthConfig) -> Result<()> {
    let p = &cfg.parallel;
    let world = p.tp as u128 * p.pp as u128 * p.dp as u128;
    if world > MAX_WORLD_SIZE {
        return Err(Error::config(format!(
            "tp x pp x dp is {world} GPUs; synth writes jobs of at most {MAX_WORLD_SIZE}"
        )));
    }
    let chunks = p.pp as u128 * p.virtual_stages as u128;
    if chunks > cfg.model.layers as u128 {
        return Err(Error::config(format!(
            "invalid config: {} layers cannot fill {} pipeline stages of {} model chunks",
            cfg.model.layers, p.pp, p.virtual_stages
        )));
    }
    let layers = (cfg.model.layers as u128).div_ceil(p.pp.max(1) as u128);
    let events = cfg.steps as u128
        * (EVENTS_PER_STEP + p.microbatches as u128 * layers * EVENTS_PER_LAYER_PASS);
    let bytes = events * BYTES_PER_EVENT + world * BYTES_PER_WORLD_RANK;
    if bytes > MAX_RANK_BYTES {
        return Err(Error::config(format!(
            "each rank's trace would hold about {events} events, about {} GB of JSON \
             ({} steps of {} micro-batches over {layers} layers per stage); synth writes at \
             most {} GB per rank",
            bytes / 1_000_000_000,
            cfg.steps,
            p.microbatches,
            MAX_RANK_BYTES / 1_000_000_000
        )));
    }
    Ok(())
}
