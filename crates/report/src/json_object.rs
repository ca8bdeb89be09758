//! The JSON objects of the files a user writes by hand (`--network FILE`,
//! `--model FILE`, a model dict in Python): one check, so that a misspelt
//! key is an error naming it rather than a value silently left at the
//! preset's.

use serde_json::Value;

/// Whether `v` is an object whose keys are all in `known`; else why not,
/// `what` naming the object ("a network file", "\"intra_node\"").
pub(crate) fn object_with_keys(v: &Value, what: &str, known: &[&str]) -> Result<(), String> {
    let Value::Object(o) = v else {
        return Err(format!("{what} must be a JSON object, not {}", kind(v)));
    };
    match o.keys().find(|k| !known.contains(&k.as_str())) {
        Some(k) => Err(format!(
            "unknown key \"{}\" in {what} (it takes {})",
            k.escape_debug(),
            known.join(", ")
        )),
        None => Ok(()),
    }
}

/// What kind of JSON value `v` is, for a message.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "true or false",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_object_of_known_keys_passes() {
        let known = ["a", "b"];
        let check = |text: &str| {
            let v: Value = serde_json::from_str(text).unwrap();
            object_with_keys(&v, "the file", &known)
        };
        assert_eq!(check(r#"{"a": 1, "b": 2}"#), Ok(()));
        assert_eq!(check("{}"), Ok(()));
        assert_eq!(
            check(r#"{"a": 1, "c\n": 2}"#),
            Err("unknown key \"c\\n\" in the file (it takes a, b)".into())
        );
        assert_eq!(
            check("[]"),
            Err("the file must be a JSON object, not an array".into())
        );
        assert_eq!(
            check("null"),
            Err("the file must be a JSON object, not null".into())
        );
    }
}
