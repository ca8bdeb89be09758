//! The JSON shape of one event, borrowed from the input. Only the fields the
//! model uses are named; the parser skips the rest. Numeric fields are
//! lenient: a value of an unexpected type reads as absent rather than failing
//! the whole event, because exporters disagree on types.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

#[derive(Deserialize)]
pub(crate) struct RawEvent<'a> {
    #[serde(borrow, default)]
    pub ph: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub cat: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub pid: Option<RawIdent<'a>>,
    #[serde(borrow, default)]
    pub tid: Option<RawIdent<'a>>,
    #[serde(default)]
    pub ts: Option<Micros>,
    #[serde(default)]
    pub dur: Option<Micros>,
    #[serde(default)]
    pub id: Lenient<u64>,
    #[serde(borrow, default)]
    pub args: Option<RawArgs<'a>>,
}

#[derive(Deserialize, Default)]
pub(crate) struct RawArgs<'a> {
    #[serde(default)]
    pub correlation: Lenient<u64>,
    #[serde(rename = "External id", alias = "external id", default)]
    pub external_id: Lenient<u64>,
    #[serde(default)]
    pub stream: Lenient<i64>,
    #[serde(default)]
    pub device: Lenient<i64>,
    #[serde(rename = "Sequence number", default)]
    pub sequence_number: Lenient<i64>,
    #[serde(rename = "Fwd thread id", default)]
    pub fwd_thread_id: Lenient<i64>,
    #[serde(default)]
    pub wait_on_stream: Lenient<i64>,
    #[serde(default)]
    pub wait_on_cuda_event_record_corr_id: Lenient<i64>,
    #[serde(default)]
    pub wait_on_cuda_event_id: Lenient<i64>,
    #[serde(default)]
    pub event_id: Lenient<i64>,
    #[serde(rename = "graph id", default)]
    pub graph_id: Lenient<i64>,
    #[serde(rename = "graph node id", default)]
    pub graph_node_id: Lenient<i64>,
    #[serde(default)]
    pub bytes: Lenient<u64>,
    /// `name` of `thread_name` / `process_name` metadata events.
    #[serde(borrow, default)]
    pub name: LenientStr<'a>,
    #[serde(rename = "Collective name", borrow, default)]
    pub collective_name: LenientStr<'a>,
    #[serde(rename = "In msg nelems", default)]
    pub in_nelems: Lenient<u64>,
    #[serde(rename = "Out msg nelems", default)]
    pub out_nelems: Lenient<u64>,
    #[serde(rename = "Group size", default)]
    pub group_size: Lenient<u64>,
    #[serde(borrow, default)]
    pub dtype: LenientStr<'a>,
    #[serde(rename = "Process Group Name", borrow, default)]
    pub pg_name: LenientStr<'a>,
    #[serde(rename = "Process Group Description", borrow, default)]
    pub pg_desc: LenientStr<'a>,
    #[serde(rename = "Process Group Ranks", borrow, default)]
    pub pg_ranks: LenientStr<'a>,
    #[serde(rename = "Seq", default)]
    pub seq: Lenient<i64>,
    #[serde(rename = "Src Rank", default)]
    pub src_rank: Lenient<i64>,
    #[serde(rename = "Dst Rank", default)]
    pub dst_rank: Lenient<i64>,
    #[serde(rename = "Input Dims", alias = "Input dims", borrow, default)]
    pub input_dims: Option<sonic_rs::LazyValue<'a>>,
    #[serde(rename = "Input type", borrow, default)]
    pub input_type: Option<sonic_rs::LazyValue<'a>>,
}

/// A `pid` / `tid`: number or string.
pub(crate) enum RawIdent<'a> {
    Num(i64),
    Str(Cow<'a, str>),
}

impl<'de: 'a, 'a> Deserialize<'de> for RawIdent<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawIdent<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number or a string")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(RawIdent::Num(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                i64::try_from(v)
                    .map(RawIdent::Num)
                    .map_err(|_| E::custom("pid/tid out of range"))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                if v.fract() == 0.0 && v.abs() < 9.0e18 {
                    Ok(RawIdent::Num(v as i64))
                } else {
                    Err(E::custom("pid/tid is not an integer"))
                }
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(RawIdent::Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(RawIdent::Str(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_any(V)
    }
}

/// A time in microseconds as written, converted to integer nanoseconds.
pub(crate) enum Micros {
    Ns(i64),
    OutOfRange,
    Invalid,
}

impl<'de> Deserialize<'de> for Micros {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Micros;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a time in microseconds")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Micros, E> {
                Ok(v.checked_mul(1000).map_or(Micros::OutOfRange, Micros::Ns))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Micros, E> {
                Ok(i64::try_from(v)
                    .ok()
                    .and_then(|v| v.checked_mul(1000))
                    .map_or(Micros::OutOfRange, Micros::Ns))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Micros, E> {
                let ns = (v * 1000.0).round();
                Ok(if !ns.is_finite() {
                    Micros::Invalid
                } else if ns.abs() >= 9.2e18 {
                    Micros::OutOfRange
                } else {
                    Micros::Ns(ns as i64)
                })
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Micros, E> {
                Ok(parse_decimal_micros(v))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Micros, E> {
                Ok(Micros::Invalid)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Micros, E> {
                Ok(Micros::Invalid)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Micros, A::Error> {
                while a.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Micros::Invalid)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Micros, A::Error> {
                while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Micros::Invalid)
            }
        }
        d.deserialize_any(V)
    }
}

/// Exact decimal microseconds (`"1234.567"`) to ns, for times written as
/// strings.
pub(crate) fn parse_decimal_micros(s: &str) -> Micros {
    let s = s.trim();
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    if int.is_empty() && frac.is_empty()
        || !int.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
    {
        return Micros::Invalid;
    }
    let mut ns: i64 = 0;
    for b in int.bytes() {
        ns = match ns.checked_mul(10).and_then(|n| n.checked_add((b - b'0') as i64)) {
            Some(n) => n,
            None => return Micros::OutOfRange,
        };
    }
    let Some(mut ns) = ns.checked_mul(1000) else {
        return Micros::OutOfRange;
    };
    let mut scale = 100;
    for b in frac.bytes().take(3) {
        ns += (b - b'0') as i64 * scale;
        scale /= 10;
    }
    Micros::Ns(if neg { -ns } else { ns })
}

/// A number that reads as `None` when absent or of another JSON type.
pub(crate) struct Lenient<T>(pub Option<T>);

impl<T> Default for Lenient<T> {
    fn default() -> Self {
        Lenient(None)
    }
}

pub(crate) trait FromJsonNumber: Sized {
    fn from_i64(v: i64) -> Option<Self>;
    fn from_u64(v: u64) -> Option<Self>;
}

impl FromJsonNumber for i64 {
    fn from_i64(v: i64) -> Option<Self> {
        Some(v)
    }
    fn from_u64(v: u64) -> Option<Self> {
        i64::try_from(v).ok()
    }
}

impl FromJsonNumber for u64 {
    fn from_i64(v: i64) -> Option<Self> {
        u64::try_from(v).ok()
    }
    fn from_u64(v: u64) -> Option<Self> {
        Some(v)
    }
}

impl<'de, T: FromJsonNumber> Deserialize<'de> for Lenient<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: FromJsonNumber> Visitor<'de> for V<T> {
            type Value = Lenient<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(Lenient(T::from_i64(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(Lenient(T::from_u64(v)))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                Ok(Lenient(if v.fract() == 0.0 && v.abs() < 9.0e18 {
                    T::from_i64(v as i64)
                } else {
                    None
                }))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                let v = v.trim();
                let parsed = match v.strip_prefix("0x") {
                    Some(hex) => u64::from_str_radix(hex, 16).ok().and_then(T::from_u64),
                    None => v
                        .parse::<i64>()
                        .ok()
                        .and_then(T::from_i64)
                        .or_else(|| v.parse::<u64>().ok().and_then(T::from_u64)),
                };
                Ok(Lenient(parsed))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Lenient(None))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Lenient(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                while a.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Lenient(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Lenient(None))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// A string (numbers are written out) that reads as `None` for other types.
#[derive(Default)]
pub(crate) struct LenientStr<'a>(pub Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for LenientStr<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LenientStr<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(LenientStr(Some(Cow::Borrowed(v))))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(LenientStr(Some(Cow::Owned(v.to_owned()))))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(LenientStr(Some(Cow::Owned(v.to_string()))))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(LenientStr(Some(Cow::Owned(v.to_string()))))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                Ok(LenientStr(Some(Cow::Owned(v.to_string()))))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(LenientStr(None))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(LenientStr(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                while a.next_element::<IgnoredAny>()?.is_some() {}
                Ok(LenientStr(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(LenientStr(None))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_micros_are_exact() {
        assert!(matches!(
            parse_decimal_micros("1712867402348256.123"),
            Micros::Ns(1_712_867_402_348_256_123)
        ));
        assert!(matches!(parse_decimal_micros("0.5"), Micros::Ns(500)));
        assert!(matches!(parse_decimal_micros("-2"), Micros::Ns(-2000)));
        assert!(matches!(parse_decimal_micros("x"), Micros::Invalid));
        assert!(matches!(
            parse_decimal_micros("99999999999999999999"),
            Micros::OutOfRange
        ));
    }
}
