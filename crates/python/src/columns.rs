//! Tables as Arrow columns for pyarrow.
//!
//! A numeric or boolean column crosses into Python as one `bytes` object
//! in Arrow's own memory layout (little-endian values; booleans and the
//! validity of nullable columns as LSB-first bitmaps), which
//! `pyarrow.Array.from_buffers` wraps without copying or looking at each
//! value; strings cross as a list, which pyarrow converts in C. So no
//! Python object is made per number, and the package needs no Arrow crate
//! (arrow-rs would add a dozen crates to build, and a second PyO3 version
//! to keep in step, for the same few buffers).

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};

/// The values of one column.
#[derive(Debug, Clone)]
pub enum Values {
    /// 64-bit floats, nulls as `None`.
    F64(Vec<Option<f64>>),
    /// 64-bit integers, nulls as `None`.
    I64(Vec<Option<i64>>),
    /// Booleans.
    Bool(Vec<bool>),
    /// UTF-8 strings, nulls as `None`.
    Str(Vec<Option<String>>),
}

/// A table: named columns of one length.
#[derive(Debug, Clone, Default)]
pub struct Table {
    rows: usize,
    columns: Vec<(&'static str, Values)>,
}

/// Builds a [`Table`] with one row per element of `rows`, a column at a
/// time, each from a function of the row.
pub struct Builder<'r, R> {
    rows: &'r [R],
    table: Table,
}

impl<'r, R> Builder<'r, R> {
    /// A table with one row per element of `rows`.
    pub fn new(rows: &'r [R]) -> Self {
        Builder {
            rows,
            table: Table {
                rows: rows.len(),
                columns: Vec::new(),
            },
        }
    }

    fn push(mut self, name: &'static str, v: Values) -> Self {
        self.table.columns.push((name, v));
        self
    }

    /// A float column.
    pub fn f64(self, name: &'static str, f: impl Fn(&R) -> f64) -> Self {
        let v = self.rows.iter().map(|r| Some(f(r))).collect();
        self.push(name, Values::F64(v))
    }

    /// A nullable float column.
    pub fn opt_f64(self, name: &'static str, f: impl Fn(&R) -> Option<f64>) -> Self {
        let v = self.rows.iter().map(f).collect();
        self.push(name, Values::F64(v))
    }

    /// An integer column (counts, ranks, indices).
    pub fn int(self, name: &'static str, f: impl Fn(&R) -> i64) -> Self {
        let v = self.rows.iter().map(|r| Some(f(r))).collect();
        self.push(name, Values::I64(v))
    }

    /// A nullable integer column.
    pub fn opt_int(self, name: &'static str, f: impl Fn(&R) -> Option<i64>) -> Self {
        let v = self.rows.iter().map(f).collect();
        self.push(name, Values::I64(v))
    }

    /// A boolean column.
    pub fn bool(self, name: &'static str, f: impl Fn(&R) -> bool) -> Self {
        let v = self.rows.iter().map(f).collect();
        self.push(name, Values::Bool(v))
    }

    /// A string column.
    pub fn str(self, name: &'static str, f: impl Fn(&R) -> &str) -> Self {
        let v = self.rows.iter().map(|r| Some(f(r).to_owned())).collect();
        self.push(name, Values::Str(v))
    }

    /// A nullable string column.
    pub fn opt_str(self, name: &'static str, f: impl Fn(&R) -> Option<String>) -> Self {
        let v = self.rows.iter().map(f).collect();
        self.push(name, Values::Str(v))
    }

    /// The table.
    pub fn build(self) -> Table {
        self.table
    }
}

/// Booleans as an LSB-first bitmap.
fn bitmap(bits: impl ExactSizeIterator<Item = bool>) -> Vec<u8> {
    let mut out = vec![0u8; bits.len().div_ceil(8)];
    for (i, b) in bits.enumerate() {
        if b {
            out[i / 8] |= 1 << (i % 8);
        }
    }
    out
}

/// The validity bitmap of a column with nulls; `None` when it has none.
fn validity<T>(v: &[Option<T>]) -> Option<Vec<u8>> {
    v.iter()
        .any(Option::is_none)
        .then(|| bitmap(v.iter().map(Option::is_some)))
}

fn le_bytes<T: Copy + Default, const N: usize>(
    v: &[Option<T>],
    to: impl Fn(T) -> [u8; N],
) -> Vec<u8> {
    let mut out = Vec::with_capacity(v.len() * N);
    for x in v {
        out.extend_from_slice(&to(x.unwrap_or_default()));
    }
    out
}

impl Table {
    /// As Python: `(rows, [(name, type, data, validity), ...])`, type being
    /// `f64`, `i64`, `bool` or `str`; data `bytes` (a list for `str`);
    /// validity `bytes` or `None`.
    pub fn to_python<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let mut cols = Vec::with_capacity(self.columns.len());
        for (name, v) in &self.columns {
            let bytes = |b: &[u8]| PyBytes::new(py, b).into_any();
            let none = || py.None().into_bound(py);
            let valid = |b: Option<Vec<u8>>| b.map_or_else(none, |b| bytes(&b));
            let (tag, data, valid) = match v {
                Values::F64(v) => (
                    "f64",
                    bytes(&le_bytes(v, f64::to_le_bytes)),
                    valid(validity(v)),
                ),
                Values::I64(v) => (
                    "i64",
                    bytes(&le_bytes(v, i64::to_le_bytes)),
                    valid(validity(v)),
                ),
                Values::Bool(v) => ("bool", bytes(&bitmap(v.iter().copied())), none()),
                Values::Str(v) => ("str", PyList::new(py, v)?.into_any(), none()),
            };
            cols.push((*name, tag, data, valid).into_pyobject(py)?);
        }
        (self.rows, PyList::new(py, cols)?).into_pyobject(py)
    }
}
