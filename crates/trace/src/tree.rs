//! A small JSON document for the top-level members the reader uses
//! (`deviceProperties`, `distributedInfo`, ...), built with the event
//! parser's scanner: the same grammar, the same nesting limit
//! ([`MAX_NESTING`], checked before the recursion goes a level deeper)
//! and the same leniency (`NaN` and `Infinity` read as null and counted,
//! invalid UTF-8 and lone surrogate escapes replaced by U+FFFD). Members are small and few; events
//! never go through here.

use crate::parse::{NumValue, Parser, Repairs, Result};
#[cfg(doc)]
use crate::MAX_NESTING;

/// A JSON value, owning its strings.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Json {
    Null,
    Bool(bool),
    /// An integer in i64 range.
    Int(i64),
    /// A positive integer above i64 range.
    UInt(u64),
    /// Any other number (a fraction, an exponent, out of 64-bit range).
    Float(f64),
    Str(String),
    Array(Vec<Json>),
    /// Members in file order; a repeated key is kept twice.
    Object(Vec<(String, Json)>),
}

impl Json {
    /// The value if it is an integer in i64 range.
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Json::Int(i) => Some(i),
            _ => None,
        }
    }

    /// The value if it is a non-negative integer in u64 range.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Json::Int(i) => u64::try_from(i).ok(),
            Json::UInt(u) => Some(u),
            _ => None,
        }
    }

    /// The value if it is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The elements if it is an array.
    pub fn as_array(&self) -> Option<&[Json]> {
        match self {
            Json::Array(a) => Some(a),
            _ => None,
        }
    }

    /// The first member called `key`, if it is an object.
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(m) => m.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
}

/// Parses `text`, which must hold one JSON value (surrounding whitespace
/// allowed), and says what had to be repaired.
pub(crate) fn parse(text: &[u8]) -> Result<(Json, Repairs)> {
    match std::str::from_utf8(text) {
        Ok(s) => parse_str(s),
        Err(_) => {
            let fixed = String::from_utf8_lossy(text);
            match parse_str(&fixed) {
                Ok((json, repairs)) => Ok((
                    json,
                    Repairs {
                        invalid_utf8: true,
                        ..repairs
                    },
                )),
                Err(mut e) => {
                    e.offset = crate::repair::original_offset(text, e.offset);
                    Err(e)
                }
            }
        }
    }
}

fn parse_str(s: &str) -> Result<(Json, Repairs)> {
    let mut p = Parser::new(s);
    p.ws();
    let json = value(&mut p)?;
    p.end()?;
    Ok((json, p.repairs()))
}

/// The value at `p.i`.
fn value(p: &mut Parser<'_>) -> Result<Json> {
    match p.bytes().get(p.i) {
        Some(b'"') => Ok(Json::Str(p.string()?.into_owned())),
        Some(b'0'..=b'9') => number(p),
        Some(b'-') if p.bytes().get(p.i + 1) != Some(&b'I') => number(p),
        Some(b'N' | b'I' | b'-') => p.non_finite().map(|()| Json::Null),
        Some(b'n') => p.literal("null").map(|()| Json::Null),
        Some(b't') => p.literal("true").map(|()| Json::Bool(true)),
        Some(b'f') => p.literal("false").map(|()| Json::Bool(false)),
        Some(b'{') => {
            p.enter()?;
            let mut members = Vec::new();
            p.object(|p, key| {
                let v = value(p)?;
                members.push((key.into_owned(), v));
                Ok(())
            })?;
            p.leave();
            Ok(Json::Object(members))
        }
        Some(b'[') => {
            p.enter()?;
            p.i += 1;
            p.ws();
            let mut items = Vec::new();
            if p.bytes().get(p.i) == Some(&b']') {
                p.i += 1;
            } else {
                loop {
                    p.ws();
                    items.push(value(p)?);
                    if !p.next_member(b']', "after an array element")? {
                        break;
                    }
                }
            }
            p.leave();
            Ok(Json::Array(items))
        }
        _ => Err(p.expected("a value")),
    }
}

fn number(p: &mut Parser<'_>) -> Result<Json> {
    let n = p.number()?;
    Ok(match n.value() {
        NumValue::U(u) => i64::try_from(u).map_or(Json::UInt(u), Json::Int),
        NumValue::I(i) => Json::Int(i),
        NumValue::F(f) => Json::Float(f),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(text: &str) -> Json {
        parse(text.as_bytes()).unwrap().0
    }

    #[test]
    fn values_and_accessors() {
        let v = json(r#" {"a": [1, -2, 18446744073709551615, 1.5, 2e3], "b": "x", "a": null} "#);
        let a = v.get("a").and_then(Json::as_array).unwrap();
        assert_eq!(a[0].as_i64(), Some(1));
        assert_eq!(a[0].as_u64(), Some(1));
        assert_eq!((a[1].as_i64(), a[1].as_u64()), (Some(-2), None));
        assert_eq!((a[2].as_i64(), a[2].as_u64()), (None, Some(u64::MAX)));
        assert_eq!((a[3].as_i64(), a[4].as_u64()), (None, None));
        assert_eq!(v.get("b").and_then(Json::as_str), Some("x"));
        assert_eq!(v.get("c"), None);
        assert_eq!(json("true"), Json::Bool(true));
    }

    #[test]
    fn non_finite_numbers_read_as_null() {
        let (v, repairs) = parse(b"[NaN, Infinity, -Infinity, -1]").unwrap();
        assert_eq!(
            v,
            Json::Array(vec![Json::Null, Json::Null, Json::Null, Json::Int(-1)])
        );
        assert_eq!(repairs.non_finite, 3);
        assert!(parse(b"[Nan]").is_err());
        assert!(parse(b"-Inf").is_err());
    }

    #[test]
    fn nesting_is_limited() {
        let ok = format!("{}{}", "[".repeat(MAX), "]".repeat(MAX));
        assert!(parse(ok.as_bytes()).is_ok());
        let deep = format!("{}{}", "[".repeat(MAX + 1), "]".repeat(MAX + 1));
        let e = parse(deep.as_bytes()).unwrap_err();
        assert_eq!(e.offset, MAX);
        assert!(
            e.message.contains("nesting deeper than 128 levels"),
            "{e:?}"
        );
        // Far deeper than the stack would take, were it not checked.
        let abyss = "{\"a\":".repeat(100_000);
        assert!(parse(abyss.as_bytes()).is_err());
    }
    const MAX: usize = crate::MAX_NESTING;

    #[test]
    fn invalid_utf8_is_replaced_and_error_offsets_are_the_files() {
        let (v, repairs) = parse(b"{\"n\": \"a\xffb\"}").unwrap();
        assert_eq!(v.get("n").and_then(Json::as_str), Some("a\u{fffd}b"));
        assert!(repairs.invalid_utf8);
        // The error is at byte 11 of the input, 15 of the longer repaired copy.
        let e = parse(b"{\"n\": \"\xff\xff\" x}").unwrap_err();
        assert_eq!(e.offset, 11, "{e:?}");
    }

    #[test]
    fn lone_surrogate_escapes_are_replaced_and_noted() {
        let (v, repairs) = parse(br#"{"n": "a\ud800b", "p": "\ud83d\ude00"}"#).unwrap();
        assert_eq!(v.get("n").and_then(Json::as_str), Some("a\u{fffd}b"));
        assert_eq!(v.get("p").and_then(Json::as_str), Some("\u{1f600}"));
        assert!(repairs.lone_surrogate && !repairs.invalid_utf8);
        let (_, repairs) = parse(br#"{"p": "\ud83d\ude00"}"#).unwrap();
        assert!(repairs.is_empty());
    }
}
