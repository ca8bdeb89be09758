//! `lumos.synth`'s model: a preset name, or a model file (JSON with
//! `layers`, `hidden`, `heads` and optionally `name`, `ffn_hidden`,
//! `seq_len`, `micro_batch`, `vocab`, `kv_heads`, `swiglu`), as `lumos
//! synth --model` takes, or the same object given as a dict. The text is
//! read by `lumos_report::model_from_json` and the size checked by
//! `lumos_synth::check_size`, as the CLI does; this module only turns
//! their refusals into this package's exceptions.

use std::path::Path;

use lumos_synth::ModelPreset;

use crate::errors::{Error, Kind, Result};

/// The model `arg` names: a model file when one exists at that path, else
/// a preset. An unknown preset is a `ConfigError`; a bad file an
/// `InputError` (an unreadable one a `LumosIOError`) naming it.
pub fn from_arg(arg: &str) -> Result<ModelPreset> {
    if !Path::new(arg).is_file() {
        // A path with nothing there (or a folder) is a file that cannot be
        // read: bad input, as the CLI says; only a name is a preset's.
        if let Some(problem) = lumos_report::not_a_file(arg) {
            return Err(Error::new(
                Kind::Input,
                format!("model {problem}; a model is a preset or a JSON file"),
            ));
        }
        return ModelPreset::preset(arg).map_err(|e| Error::config(format!("model: {e}")));
    }
    let text = lumos_report::read_preset_file(Path::new(arg)).map_err(|e| {
        // A file too large to be a model is bad input, not a failed read.
        let kind = match e.kind() {
            std::io::ErrorKind::InvalidData => Kind::Input,
            _ => Kind::Io,
        };
        Error::new(kind, format!("{arg}: cannot read: {e}"))
    })?;
    lumos_report::model_from_json(arg, &text).map_err(|m| Error::new(Kind::Input, m))
}

/// The model of a dict given as `model` (its JSON text): a bad one is a
/// `ConfigError`, as a bad option is, where a bad model file is an
/// `InputError`.
pub fn from_dict_json(text: &str) -> Result<ModelPreset> {
    lumos_report::model_from_json("model", text).map_err(Error::config)
}

/// Refuses, before anything is allocated, a configuration whose traces
/// lumos could not hold, as `lumos synth` does (`lumos_synth::check_size`):
/// a `ConfigError` giving the estimate and the limit.
pub fn check_size(cfg: &lumos_synth::SynthConfig) -> Result<()> {
    lumos_synth::check_size(cfg).map_err(|r| Error::config(r.to_string()))
}
