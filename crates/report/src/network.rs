//! Network descriptions in JSON (`lumos predict --network FILE`): the one
//! place their text is parsed, so every front end reads them alike.

use lumos_models::NetworkModel;
use lumos_predict::{network_with, LinkOverrides, NetworkOverrides, PredictError};
use serde_json::Value;

use crate::json_object::object_with_keys;

/// A network described in JSON, with its description for reports. `name`
/// says where the text came from (the `--network` file): errors start with
/// it and the description names it. Reading the file is the caller's.
///
/// The text holds any of `gpus_per_node`, `base_latency_us`,
/// `multi_rail` (true or false: whether rings that span nodes use the NICs
/// of all their members on a node, as on nodes with a NIC per GPU), and
/// `intra_node` / `inter_node` objects with `bandwidth_gbps` (per GPU and
/// direction, GB/s), `efficiency` and `hop_latency_us`; what it leaves out
/// comes from `"preset"` (default `h100`). Any other key, or a value of the
/// wrong kind, is an error naming it (a misspelt key would otherwise leave
/// the preset's value in place without a word):
///
/// ```json
/// { "preset": "h100", "inter_node": { "bandwidth_gbps": 100 } }
/// ```
pub fn network_from_json(text: &str, name: &str) -> Result<(NetworkModel, String), PredictError> {
    let invalid = |problem: String| PredictError::InvalidNetwork {
        name: Some(name.to_owned()),
        problem,
    };
    let v: Value = serde_json::from_str(text).map_err(|e| invalid(format!("invalid JSON: {e}")))?;
    let keys = [
        "preset",
        "gpus_per_node",
        "base_latency_us",
        "multi_rail",
        "intra_node",
        "inter_node",
    ];
    object_with_keys(&v, "a network file", &keys).map_err(invalid)?;
    // Numbers only: their bounds are `network_with`'s, which every front
    // end's network goes through.
    let num = |o: &Value, k: &str| -> Result<Option<f64>, PredictError> {
        match o.get(k) {
            None => Ok(None),
            Some(x) => (x.as_f64().map(Some))
                .ok_or_else(|| invalid(format!("\"{k}\" must be a positive number"))),
        }
    };
    let link = |key: &str| -> Result<LinkOverrides, PredictError> {
        let Some(o) = v.get(key) else {
            return Ok(LinkOverrides::default());
        };
        let keys = ["bandwidth_gbps", "efficiency", "hop_latency_us"];
        object_with_keys(o, &format!("\"{key}\""), &keys).map_err(invalid)?;
        Ok(LinkOverrides {
            bandwidth_gbps: num(o, "bandwidth_gbps")?,
            efficiency: num(o, "efficiency")?,
            hop_latency_us: num(o, "hop_latency_us")?,
        })
    };
    let preset = match v.get("preset") {
        None => None,
        Some(Value::String(p)) => Some(p.clone()),
        Some(_) => return Err(invalid("\"preset\" must be a preset's name".into())),
    };
    let multi_rail = match v.get("multi_rail") {
        None => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => return Err(invalid("\"multi_rail\" must be true or false".into())),
    };
    let overrides = NetworkOverrides {
        preset,
        gpus_per_node: num(&v, "gpus_per_node")?,
        base_latency_us: num(&v, "base_latency_us")?,
        intra_node: link("intra_node")?,
        inter_node: link("inter_node")?,
        multi_rail,
    };
    network_with(&overrides, name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_changes_only_what_it_names() {
        let (net, what) = network_from_json(
            r#"{"preset": "a100", "inter_node": {"bandwidth_gbps": 7}}"#,
            "f.json",
        )
        .unwrap();
        let a100 = lumos_predict::network_preset("a100").unwrap().0;
        assert_eq!(net.inter_node.bandwidth_gbps, 7.0);
        assert_eq!(net.intra_node, a100.intra_node);
        assert_eq!(what, "file f.json (over preset a100)");
    }

    #[test]
    fn a_file_says_how_rings_cross_nodes() {
        // The H100 preset has a NIC per GPU; a file can say its nodes do not.
        let h100 = lumos_predict::network_preset("h100").unwrap().0;
        assert!(h100.multi_rail);
        let (net, _) = network_from_json(r#"{"multi_rail": false}"#, "f.json").unwrap();
        assert!(!net.multi_rail);
        assert_eq!(net.inter_node, h100.inter_node);
        let e = network_from_json(r#"{"multi_rail": 1}"#, "f.json").unwrap_err();
        assert!(
            e.to_string()
                .contains("\"multi_rail\" must be true or false"),
            "{e}"
        );
    }

    #[test]
    fn bad_numbers_and_text_name_the_file() {
        for (text, problem) in [
            ("{", "invalid JSON"),
            (
                r#"{"gpus_per_node": -1}"#,
                "\"gpus_per_node\" must be a whole number from 1 to 65536",
            ),
            (
                r#"{"intra_node": {"efficiency": "x"}}"#,
                "\"efficiency\" must be a positive number",
            ),
            (r#"{"preset": "tpu"}"#, "tpu"),
            (r#"{"preset": 5}"#, "\"preset\" must be a preset's name"),
            ("null", "a network file must be a JSON object, not null"),
            (
                r#"{"inter_node": {"bandwidth": 100}}"#,
                "unknown key \"bandwidth\" in \"inter_node\" (it takes bandwidth_gbps, efficiency, hop_latency_us)",
            ),
            (
                r#"{"intra_node": 5}"#,
                "\"intra_node\" must be a JSON object, not a number",
            ),
            (
                r#"{"gpus_per_node": 8, "nvlink_gbps": 900}"#,
                "unknown key \"nvlink_gbps\" in a network file",
            ),
            (
                r#"{"gpus_per_node": 0.5}"#,
                "\"gpus_per_node\" must be a whole number from 1 to 65536",
            ),
            (
                r#"{"inter_node": {"efficiency": 80}}"#,
                "\"efficiency\" must be a share from 0.01 to 1, not 80",
            ),
            (
                r#"{"inter_node": {"efficiency": 1e-300}}"#,
                "\"efficiency\" must be a share from 0.01 to 1, not 1e-300",
            ),
            (
                r#"{"intra_node": {"bandwidth_gbps": 0}}"#,
                "\"bandwidth_gbps\" must be a positive number",
            ),
            // Values that made predicted steps of -9.2e12 ms before the
            // simulator refused clocks past their range.
            (
                r#"{"base_latency_us": 1e14}"#,
                "\"base_latency_us\" must be at most 1000000, not 100000000000000",
            ),
            (
                r#"{"intra_node": {"hop_latency_us": 1e308}}"#,
                "\"hop_latency_us\" must be at most 1000000, not 1e308",
            ),
            (
                r#"{"intra_node": {"bandwidth_gbps": 1e-12}}"#,
                "\"bandwidth_gbps\" must be at least 0.001, not 1e-12",
            ),
        ] {
            let e = network_from_json(text, "net.json").unwrap_err().to_string();
            assert!(e.starts_with("net.json"), "{e}");
            assert!(e.contains(problem), "{text}: {e}");
        }
    }
}
