//! Pretty JSON with every object's keys sorted, written while it is
//! serialized.
//!
//! `inspect`, `replay` and `demo` have always printed their reports
//! through `serde_json::Value`, whose maps sort their keys. Building that
//! tree first cost several times the output's size (a 1,024-rank job
//! writes 1.19 GB of JSON), so the same text is now written straight from
//! the report structs: a value is asked first for its shape (a struct's
//! field names, without serializing the fields), and a struct whose fields
//! do not come in sorted order is serialized once per field, in sorted
//! order, each pass writing only that field. Little is buffered: the
//! field names of each struct being written, and a map's last key. A map whose keys do not come
//! sorted (none in the reports: their maps are `BTreeMap`s) or a struct
//! variant with unsorted fields still goes through a `Value` of its own,
//! which gives the same text.

use std::fmt::Display;
use std::io;

use serde::ser::{
    self, Impossible, Serialize, SerializeMap, SerializeSeq, SerializeStruct,
    SerializeStructVariant, SerializeTuple, SerializeTupleStruct, SerializeTupleVariant,
    Serializer,
};

/// Writes `value` to `w` as pretty JSON (no trailing newline), every
/// object's keys sorted: the text `serde_json::to_writer_pretty` writes of
/// `serde_json::to_value(value)`, the characters
/// [`SafeJson`](crate::output::SafeJson) escapes escaped.
pub fn to_writer_pretty_sorted<W: io::Write, T: Serialize + ?Sized>(
    w: W,
    value: &T,
) -> serde_json::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(w, crate::output::SafeJson::default());
    Sorted(value).serialize(&mut ser)
}

/// `T`, serialized with its objects' keys sorted.
struct Sorted<'a, T: ?Sized>(&'a T);

impl<T: Serialize + ?Sized> Serialize for Sorted<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0.serialize(ShapeOf).map_err(ser::Error::custom)? {
            Shape::InOrder => self.0.serialize(Forward(s)),
            Shape::Struct(keys) => {
                let mut map = s.serialize_map(Some(keys.len()))?;
                for key in keys {
                    self.0.serialize(Pick { key, map: &mut map })?;
                }
                map.end()
            }
            Shape::Unsorted => serde_json::to_value(self.0)
                .map_err(ser::Error::custom)?
                .serialize(s),
        }
    }
}

/// How a value's keys come when it is serialized.
#[derive(Debug, PartialEq)]
enum Shape {
    /// Sorted already, or it has none: written as it comes.
    InOrder,
    /// A struct whose fields come out of order: their names, sorted.
    Struct(Vec<&'static str>),
    /// A map or struct variant whose keys come out of order (or repeat).
    Unsorted,
}

/// Whether `keys`, in the order they came, are strictly increasing.
fn strictly_sorted<K: Ord>(keys: &[K]) -> bool {
    keys.windows(2).all(|w| w[0] < w[1])
}

/// The error of a shape pass: only a `Serialize` impl's own.
#[derive(Debug)]
struct ShapeError(String);

impl Display for ShapeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ShapeError {}

impl ser::Error for ShapeError {
    fn custom<T: Display>(msg: T) -> Self {
        ShapeError(msg.to_string())
    }
}

/// Tells a value's [`Shape`] without serializing anything inside it.
struct ShapeOf;

/// Collects the keys of a struct, a struct variant or a map.
#[derive(Default)]
struct Keys {
    fields: Vec<&'static str>,
    /// A map's last key as JSON writes it, and whether they came sorted.
    last_map_key: Option<String>,
    map_sorted: bool,
}

impl Keys {
    fn map() -> Keys {
        Keys {
            map_sorted: true,
            ..Keys::default()
        }
    }
}

/// Serializes nothing; for sequences and the like, whose order stays.
struct NoKeys;

macro_rules! in_order {
    ($($f:ident: $t:ty),*) => {
        $(fn $f(self, _: $t) -> Result<Shape, ShapeError> { Ok(Shape::InOrder) })*
    };
}

impl Serializer for ShapeOf {
    type Ok = Shape;
    type Error = ShapeError;
    type SerializeSeq = NoKeys;
    type SerializeTuple = NoKeys;
    type SerializeTupleStruct = NoKeys;
    type SerializeTupleVariant = NoKeys;
    type SerializeMap = Keys;
    type SerializeStruct = Keys;
    type SerializeStructVariant = Keys;

    in_order!(serialize_bool: bool, serialize_i8: i8, serialize_i16: i16, serialize_i32: i32,
        serialize_i64: i64, serialize_i128: i128, serialize_u8: u8, serialize_u16: u16,
        serialize_u32: u32, serialize_u64: u64, serialize_u128: u128, serialize_f32: f32,
        serialize_f64: f64, serialize_char: char, serialize_str: &str, serialize_bytes: &[u8],
        serialize_unit_struct: &'static str);

    fn serialize_none(self) -> Result<Shape, ShapeError> {
        Ok(Shape::InOrder)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<Shape, ShapeError> {
        Ok(Shape::InOrder)
    }
    fn serialize_unit(self) -> Result<Shape, ShapeError> {
        Ok(Shape::InOrder)
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
    ) -> Result<Shape, ShapeError> {
        Ok(Shape::InOrder)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: &T,
    ) -> Result<Shape, ShapeError> {
        Ok(Shape::InOrder)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<Shape, ShapeError> {
        Ok(Shape::InOrder)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<NoKeys, ShapeError> {
        Ok(NoKeys)
    }
    fn serialize_tuple(self, _: usize) -> Result<NoKeys, ShapeError> {
        Ok(NoKeys)
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<NoKeys, ShapeError> {
        Ok(NoKeys)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<NoKeys, ShapeError> {
        Ok(NoKeys)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Keys, ShapeError> {
        Ok(Keys::map())
    }
    fn serialize_struct(self, _: &'static str, len: usize) -> Result<Keys, ShapeError> {
        Ok(Keys {
            fields: Vec::with_capacity(len),
            ..Keys::default()
        })
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        len: usize,
    ) -> Result<Keys, ShapeError> {
        self.serialize_struct("", len)
    }
}

macro_rules! no_keys {
    ($($tr:ident: $f:ident),*) => {
        $(impl $tr for NoKeys {
            type Ok = Shape;
            type Error = ShapeError;
            fn $f<T: Serialize + ?Sized>(&mut self, _: &T) -> Result<(), ShapeError> {
                Ok(())
            }
            fn end(self) -> Result<Shape, ShapeError> {
                Ok(Shape::InOrder)
            }
        })*
    };
}

no_keys!(SerializeSeq: serialize_element, SerializeTuple: serialize_element,
    SerializeTupleStruct: serialize_field, SerializeTupleVariant: serialize_field);

impl SerializeMap for Keys {
    type Ok = Shape;
    type Error = ShapeError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), ShapeError> {
        // A key that is no string or number leaves the map to `Value`,
        // which says what JSON makes of it.
        let key = match serde_json::to_value(key) {
            Ok(serde_json::Value::String(s)) => Some(s),
            Ok(serde_json::Value::Number(n)) => Some(n.to_string()),
            _ => None,
        };
        let sorted = match (&self.last_map_key, &key) {
            (_, None) => false,
            (None, Some(_)) => true,
            (Some(last), Some(key)) => last < key,
        };
        self.map_sorted &= sorted;
        self.last_map_key = key;
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, _: &T) -> Result<(), ShapeError> {
        Ok(())
    }
    fn end(self) -> Result<Shape, ShapeError> {
        Ok(if self.map_sorted {
            Shape::InOrder
        } else {
            Shape::Unsorted
        })
    }
}

impl SerializeStruct for Keys {
    type Ok = Shape;
    type Error = ShapeError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        _: &T,
    ) -> Result<(), ShapeError> {
        self.fields.push(key);
        Ok(())
    }
    fn end(mut self) -> Result<Shape, ShapeError> {
        if strictly_sorted(&self.fields) {
            return Ok(Shape::InOrder);
        }
        self.fields.sort_unstable();
        if !strictly_sorted(&self.fields) {
            // A name twice: `Value` keeps the last.
            return Ok(Shape::Unsorted);
        }
        Ok(Shape::Struct(self.fields))
    }
}

impl SerializeStructVariant for Keys {
    type Ok = Shape;
    type Error = ShapeError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        _: &T,
    ) -> Result<(), ShapeError> {
        self.fields.push(key);
        Ok(())
    }
    fn end(self) -> Result<Shape, ShapeError> {
        // Its fields are written inside the variant's object, where no
        // second pass can reach them one by one.
        Ok(if strictly_sorted(&self.fields) {
            Shape::InOrder
        } else {
            Shape::Unsorted
        })
    }
}

/// Serializes a struct's field `key` alone into `map`: one pass of a
/// struct written field by field in sorted order.
struct Pick<'m, M> {
    key: &'static str,
    map: &'m mut M,
}

/// The error of a value that changed shape between two passes.
fn changed<E: ser::Error>() -> E {
    E::custom("a value serialized differently on a second pass")
}

macro_rules! not_a_struct {
    ($($f:ident: $t:ty),*) => {
        $(fn $f(self, _: $t) -> Result<(), M::Error> { Err(changed()) })*
    };
}

impl<'m, M: SerializeMap> Serializer for Pick<'m, M> {
    type Ok = ();
    type Error = M::Error;
    type SerializeSeq = Impossible<(), M::Error>;
    type SerializeTuple = Impossible<(), M::Error>;
    type SerializeTupleStruct = Impossible<(), M::Error>;
    type SerializeTupleVariant = Impossible<(), M::Error>;
    type SerializeMap = Impossible<(), M::Error>;
    type SerializeStruct = Self;
    type SerializeStructVariant = Impossible<(), M::Error>;

    not_a_struct!(serialize_bool: bool, serialize_i8: i8, serialize_i16: i16, serialize_i32: i32,
        serialize_i64: i64, serialize_i128: i128, serialize_u8: u8, serialize_u16: u16,
        serialize_u32: u32, serialize_u64: u64, serialize_u128: u128, serialize_f32: f32,
        serialize_f64: f64, serialize_char: char, serialize_str: &str, serialize_bytes: &[u8],
        serialize_unit_struct: &'static str);

    fn serialize_none(self) -> Result<(), M::Error> {
        Err(changed())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<(), M::Error> {
        Err(changed())
    }
    fn serialize_unit(self) -> Result<(), M::Error> {
        Err(changed())
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
    ) -> Result<(), M::Error> {
        Err(changed())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: &T,
    ) -> Result<(), M::Error> {
        Err(changed())
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), M::Error> {
        Err(changed())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, M::Error> {
        Err(changed())
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, M::Error> {
        Err(changed())
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, M::Error> {
        Err(changed())
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, M::Error> {
        Err(changed())
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, M::Error> {
        Err(changed())
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self, M::Error> {
        Ok(self)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, M::Error> {
        Err(changed())
    }
}

impl<M: SerializeMap> SerializeStruct for Pick<'_, M> {
    type Ok = ();
    type Error = M::Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), M::Error> {
        if key == self.key {
            self.map.serialize_entry(key, &Sorted(value))?;
        }
        Ok(())
    }
    fn end(self) -> Result<(), M::Error> {
        Ok(())
    }
}

/// Passes everything on to `S`, each value inside sorted in turn.
struct Forward<S>(S);

macro_rules! forward {
    ($($f:ident: $t:ty),*) => {
        $(fn $f(self, v: $t) -> Result<S::Ok, S::Error> { self.0.$f(v) })*
    };
}

impl<S: Serializer> Serializer for Forward<S> {
    type Ok = S::Ok;
    type Error = S::Error;
    type SerializeSeq = Inside<S::SerializeSeq>;
    type SerializeTuple = Inside<S::SerializeTuple>;
    type SerializeTupleStruct = Inside<S::SerializeTupleStruct>;
    type SerializeTupleVariant = Inside<S::SerializeTupleVariant>;
    type SerializeMap = Inside<S::SerializeMap>;
    type SerializeStruct = Inside<S::SerializeStruct>;
    type SerializeStructVariant = Inside<S::SerializeStructVariant>;

    forward!(serialize_bool: bool, serialize_i8: i8, serialize_i16: i16, serialize_i32: i32,
        serialize_i64: i64, serialize_i128: i128, serialize_u8: u8, serialize_u16: u16,
        serialize_u32: u32, serialize_u64: u64, serialize_u128: u128, serialize_f64: f64,
        serialize_char: char, serialize_str: &str, serialize_bytes: &[u8],
        serialize_unit_struct: &'static str);

    /// As `Value` stores it: widened to f64, whose shortest text is longer
    /// than the f32's (0.1f32 is 0.10000000149011612).
    fn serialize_f32(self, v: f32) -> Result<S::Ok, S::Error> {
        self.0.serialize_f64(f64::from(v))
    }
    fn serialize_none(self) -> Result<S::Ok, S::Error> {
        self.0.serialize_none()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<S::Ok, S::Error> {
        self.0.serialize_some(&Sorted(v))
    }
    fn serialize_unit(self) -> Result<S::Ok, S::Error> {
        self.0.serialize_unit()
    }
    fn serialize_unit_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
    ) -> Result<S::Ok, S::Error> {
        self.0.serialize_unit_variant(name, index, variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        v: &T,
    ) -> Result<S::Ok, S::Error> {
        self.0.serialize_newtype_struct(name, &Sorted(v))
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        v: &T,
    ) -> Result<S::Ok, S::Error> {
        self.0
            .serialize_newtype_variant(name, index, variant, &Sorted(v))
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Self::SerializeSeq, S::Error> {
        self.0.serialize_seq(len).map(Inside)
    }
    fn serialize_tuple(self, len: usize) -> Result<Self::SerializeTuple, S::Error> {
        self.0.serialize_tuple(len).map(Inside)
    }
    fn serialize_tuple_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleStruct, S::Error> {
        self.0.serialize_tuple_struct(name, len).map(Inside)
    }
    fn serialize_tuple_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleVariant, S::Error> {
        self.0
            .serialize_tuple_variant(name, index, variant, len)
            .map(Inside)
    }
    fn serialize_map(self, len: Option<usize>) -> Result<Self::SerializeMap, S::Error> {
        self.0.serialize_map(len).map(Inside)
    }
    fn serialize_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStruct, S::Error> {
        self.0.serialize_struct(name, len).map(Inside)
    }
    fn serialize_struct_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStructVariant, S::Error> {
        self.0
            .serialize_struct_variant(name, index, variant, len)
            .map(Inside)
    }
}

/// A sequence, map or struct of `S`, its values sorted in turn.
struct Inside<C>(C);

macro_rules! inside {
    ($($tr:ident: $f:ident),*) => {
        $(impl<C: $tr> $tr for Inside<C> {
            type Ok = C::Ok;
            type Error = C::Error;
            fn $f<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), C::Error> {
                self.0.$f(&Sorted(v))
            }
            fn end(self) -> Result<C::Ok, C::Error> {
                self.0.end()
            }
        })*
    };
}

inside!(SerializeSeq: serialize_element, SerializeTuple: serialize_element,
    SerializeTupleStruct: serialize_field, SerializeTupleVariant: serialize_field);

impl<C: SerializeMap> SerializeMap for Inside<C> {
    type Ok = C::Ok;
    type Error = C::Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), C::Error> {
        self.0.serialize_key(key)
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), C::Error> {
        self.0.serialize_value(&Sorted(v))
    }
    fn end(self) -> Result<C::Ok, C::Error> {
        self.0.end()
    }
}

/// `inside!` for the named-field kinds, which can also skip a field.
macro_rules! inside_fields {
    ($($tr:ident),*) => {
        $(impl<C: $tr> $tr for Inside<C> {
            type Ok = C::Ok;
            type Error = C::Error;
            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                key: &'static str,
                v: &T,
            ) -> Result<(), C::Error> {
                self.0.serialize_field(key, &Sorted(v))
            }
            fn skip_field(&mut self, key: &'static str) -> Result<(), C::Error> {
                self.0.skip_field(key)
            }
            fn end(self) -> Result<C::Ok, C::Error> {
                self.0.end()
            }
        })*
    };
}

inside_fields!(SerializeStruct, SerializeStructVariant);

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;
    use std::collections::{BTreeMap, HashMap};

    /// What `json_sorted` wrote before: the text of the value's `Value`.
    fn through_value<T: Serialize>(v: &T) -> String {
        serde_json::to_string_pretty(&serde_json::to_value(v).unwrap()).unwrap()
    }

    fn streamed<T: Serialize>(v: &T) -> String {
        let mut out = Vec::new();
        to_writer_pretty_sorted(&mut out, v).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[derive(Serialize)]
    enum Kind {
        Unit,
        New(f32),
        Tuple(u8, String),
        Fields { z: u32, a: Option<Box<Inner>> },
        SortedFields { a: u32, b: Vec<Inner> },
    }

    #[derive(Serialize)]
    struct Inner {
        zeta: f64,
        alpha: Vec<Kind>,
        #[serde(skip_serializing_if = "Option::is_none")]
        maybe: Option<u64>,
        empty: Vec<u8>,
        none: (),
    }

    #[derive(Serialize)]
    struct Id(u32);

    #[derive(Serialize)]
    struct Outer {
        traces: Vec<Inner>,
        summary: BTreeMap<String, Id>,
        hashed: HashMap<u32, &'static str>,
        job: Option<Inner>,
        bytes: serde_bytes_like::Bytes,
        text: &'static str,
        #[serde(rename = "a-b")]
        dashed: (i64, f64, char),
        #[serde(flatten)]
        rest: BTreeMap<&'static str, i8>,
    }

    /// `serialize_bytes`, which `Vec<u8>` does not call.
    mod serde_bytes_like {
        pub struct Bytes(pub Vec<u8>);
        impl serde::Serialize for Bytes {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_bytes(&self.0)
            }
        }
    }

    fn inner(k: u32) -> Inner {
        Inner {
            zeta: f64::from(k) / 3.0,
            alpha: vec![
                Kind::Unit,
                Kind::New(0.1),
                Kind::Tuple(7, "t\"\n".into()),
                Kind::Fields { z: k, a: None },
                Kind::SortedFields { a: 1, b: vec![] },
            ],
            maybe: k.is_multiple_of(2).then_some(u64::MAX),
            empty: vec![],
            none: (),
        }
    }

    #[test]
    fn streamed_text_is_what_the_value_tree_gave() {
        let mut job = inner(1);
        job.alpha.push(Kind::Fields {
            z: 3,
            a: Some(Box::new(inner(2))),
        });
        job.zeta = f64::NAN;
        let outer = Outer {
            traces: (0..4).map(inner).collect(),
            summary: [("b".into(), Id(2)), ("a".into(), Id(1))].into(),
            hashed: (0..20).map(|k| (k * 7, "x")).collect(),
            job: Some(job),
            bytes: serde_bytes_like::Bytes(vec![1, 2, 255]),
            text: "é\u{1}",
            dashed: (-5, 1e300, 'q'),
            rest: [("zz", 1), ("aa", -1)].into(),
        };
        assert_eq!(streamed(&outer), through_value(&outer));
        let in_a_list = vec![Outer { job: None, ..outer }];
        assert_eq!(streamed(&in_a_list), through_value(&in_a_list));
        assert_eq!(streamed(&Kind::Unit), through_value(&Kind::Unit));
        assert_eq!(streamed(&0.1f32), through_value(&0.1f32));
        assert_eq!(streamed(&Vec::<Inner>::new()), "[]");
    }

    #[test]
    fn a_struct_out_of_order_is_written_field_by_field_and_one_in_order_as_it_comes() {
        #[derive(Serialize)]
        struct Ab {
            a: u8,
            b: u8,
        }
        #[derive(Serialize)]
        struct Ba {
            b: u8,
            a: u8,
        }
        assert_eq!(
            Ab { a: 1, b: 2 }.serialize(ShapeOf).unwrap(),
            Shape::InOrder
        );
        assert_eq!(
            Ba { b: 1, a: 2 }.serialize(ShapeOf).unwrap(),
            Shape::Struct(vec!["a", "b"])
        );
        let unsorted: HashMap<&str, u8> = [("b", 1), ("a", 2), ("c", 3)].into();
        let sorted: BTreeMap<&str, u8> = [("b", 1), ("a", 2)].into();
        assert_eq!(sorted.serialize(ShapeOf).unwrap(), Shape::InOrder);
        // A map's order is known only once iterated: one of the two
        // orders differs from the sorted one.
        let forward = unsorted.serialize(ShapeOf).unwrap();
        let keys: Vec<_> = unsorted.keys().collect();
        assert_eq!(forward == Shape::InOrder, strictly_sorted(&keys));
        assert_eq!(
            streamed(&Ba { b: 1, a: 2 }),
            "{\n  \"a\": 2,\n  \"b\": 1\n}"
        );
    }
}
