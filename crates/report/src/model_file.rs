//! Model files in JSON (`lumos synth --model FILE`, `lumos.synth(model=)`):
//! the one place their text is parsed, so every front end reads them alike.

use lumos_synth::ModelPreset;
use serde_json::Value;

use crate::json_object::object_with_keys;
use crate::range::{COUNT_MAX, SIZE_MAX};

/// The keys a model file may hold.
const MODEL_KEYS: [&str; 10] = [
    "name",
    "layers",
    "hidden",
    "heads",
    "ffn_hidden",
    "seq_len",
    "micro_batch",
    "vocab",
    "kv_heads",
    "swiglu",
];

/// The model a model file's text describes: `layers`, `hidden`, `heads`
/// and optionally `name`, `ffn_hidden`, `seq_len`, `micro_batch`, `vocab`,
/// `kv_heads` and `swiglu` (true or false). Any other key is an error naming
/// it (a misspelt optional key would otherwise leave the default in place
/// without a word). `what` names the text in the message of a bad one (the
/// file, or `model` for a dict); reading the file is the caller's.
pub fn model_from_json(what: &str, text: &str) -> Result<ModelPreset, String> {
    let bad = |m: String| format!("{what}: {m}");
    let v: Value = serde_json::from_str(text).map_err(|e| bad(format!("invalid JSON: {e}")))?;
    object_with_keys(&v, "the model", &MODEL_KEYS).map_err(bad)?;
    let field = |k: &str, max: u64| -> Result<Option<usize>, String> {
        match v.get(k) {
            None => Ok(None),
            Some(x) => x
                .as_u64()
                .filter(|n| (1..=max).contains(n))
                .map(|n| Some(n as usize))
                .ok_or_else(|| bad(format!("\"{k}\" must be a whole number from 1 to {max}"))),
        }
    };
    // The ranges of the count and size flags (`--layers`, `--hidden`), so
    // that every product of them fits the synthesizer's arithmetic.
    let (count, size) = (u64::from(COUNT_MAX), SIZE_MAX);
    let (Some(layers), Some(hidden), Some(heads)) = (
        field("layers", count)?,
        field("hidden", size)?,
        field("heads", count)?,
    ) else {
        return Err(bad(
            "the model needs \"layers\", \"hidden\" and \"heads\"".into()
        ));
    };
    let name = match v.get("name") {
        None => "custom",
        Some(Value::String(n)) => n,
        Some(_) => return Err(bad("\"name\" must be a string".into())),
    };
    let mut m = ModelPreset::gpt(name, layers, hidden, heads);
    if let Some(f) = field("ffn_hidden", size)? {
        m.ffn_hidden = f;
    }
    if let Some(s) = field("seq_len", size)? {
        m.seq_len = s;
    }
    if let Some(b) = field("micro_batch", count)? {
        m.micro_batch = b;
    }
    if let Some(b) = field("vocab", size)? {
        m.vocab = b;
    }
    m.kv_heads = field("kv_heads", count)?.unwrap_or(heads);
    match v.get("swiglu") {
        None => {}
        Some(Value::Bool(b)) => m.swiglu = *b,
        Some(_) => return Err(bad("\"swiglu\" must be true or false".into())),
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_the_file_cannot_take_is_named() {
        let m = model_from_json("m.json", r#"{"layers": 2, "hidden": 512, "heads": 8}"#).unwrap();
        assert_eq!((m.layers, m.hidden, m.heads), (2, 512, 8));
        for (text, problem) in [
            (
                r#"{"layers": 2, "hidden": 512, "heads": 8, "seq_length": 4096}"#,
                "m.json: unknown key \"seq_length\" in the model (it takes name, layers,",
            ),
            (
                "[2, 512, 8]",
                "m.json: the model must be a JSON object, not an array",
            ),
            (
                r#"{"layers": 2, "hidden": 512, "heads": 8, "name": 7}"#,
                "m.json: \"name\" must be a string",
            ),
        ] {
            let e = model_from_json("m.json", text).unwrap_err();
            assert!(e.starts_with(problem), "{text}: {e}");
        }
    }
}
