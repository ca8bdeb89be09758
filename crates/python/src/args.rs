//! Numbers given as Python arguments, checked against the ranges the
//! CLI's flags take (`lumos_report::range`, the same constants and
//! checks), with the CLI's words after the Python argument's name:
//! `dp: must be a whole number from 1 to 65536, got 65537` for the CLI's
//! `invalid value '65537' for '--dp <DP>': must be ...`. Any Python
//! integer is taken, `int` or another type `operator.index` takes (numpy's
//! `int64`, as a DataFrame's column holds it; a negative or huge one is
//! out of range, not an `OverflowError`), and anything else is a
//! `ConfigError` too.

use lumos_report::range;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt};

use crate::errors::{Error, Result};

/// How `v` is written in Python (its `repr`).
pub fn shown(v: &Bound<'_, PyAny>) -> String {
    v.repr().map_or_else(|_| "?".into(), |r| r.to_string())
}

/// `v` as a Python `int` when it is an integer: an `int`, or any type
/// `operator.index` takes (numpy's integers: a rank or a degree read from
/// a DataFrame is an `np.int64`, not an `int`). A bool, a float or a
/// string is none, as `--dp 4.0` or `--dp true` is none.
fn integer<'py>(v: &Bound<'py, PyAny>) -> Option<Bound<'py, PyAny>> {
    if v.is_instance_of::<PyBool>() {
        return None;
    }
    if v.is_instance_of::<PyInt>() {
        return Some(v.clone());
    }
    let i = v
        .py()
        .import("operator")
        .ok()?
        .call_method1("index", (v,))
        .ok()?;
    (i.is_instance_of::<PyInt>() && !i.is_instance_of::<PyBool>()).then_some(i)
}

/// `v` as a whole number from `min` to `max`, for argument `what`.
pub fn whole(what: &str, v: &Bound<'_, PyAny>, min: u64, max: u64) -> Result<u64> {
    let given = shown(v);
    // Anything but an integer is no whole number (-1 is below every
    // range); an int past i128 is past any range.
    let n = integer(v).map_or(-1, |i| i.extract::<i128>().unwrap_or(i128::MAX));
    range::whole_value(n, min, max, &given).map_err(|e| Error::config(format!("{what}: {e}")))
}

/// `v`, if given, as a degree or count (1 to [`range::COUNT_MAX`]).
pub fn count(what: &str, v: Option<&Bound<'_, PyAny>>) -> Result<Option<u32>> {
    v.map(|v| whole(what, v, 1, u64::from(range::COUNT_MAX)).map(|n| n as u32))
        .transpose()
}

/// `v`, if given, as a hidden or FFN size (1 to [`range::SIZE_MAX`]).
pub fn size(what: &str, v: Option<&Bound<'_, PyAny>>) -> Result<Option<u64>> {
    v.map(|v| whole(what, v, 1, range::SIZE_MAX)).transpose()
}

/// `v` as a scale factor ([`range::FACTOR_MIN`] to
/// [`range::FACTOR_MAX`]); NaN, infinities and non-numbers are refused
/// as the CLI refuses them, with its words (the caller names the
/// argument).
pub fn factor(v: &Bound<'_, PyAny>) -> std::result::Result<f64, String> {
    let given = shown(v);
    if v.is_instance_of::<PyBool>() {
        return Err(format!("`{given}` is not a number"));
    }
    match v.extract::<f64>() {
        Ok(f) => range::factor_value(f, &given),
        // An int too big for a float is out of range.
        Err(_) if v.is_instance_of::<PyInt>() => range::factor_value(f64::INFINITY, &given),
        Err(_) => Err(format!("`{given}` is not a number")),
    }
}

/// `v` as a rank number (an int from 0 to `u32::MAX`), as `--scale-rank
/// RANK=FACTOR` takes it.
pub fn rank(v: &Bound<'_, PyAny>) -> std::result::Result<u32, String> {
    integer(v)
        .and_then(|i| i.extract::<u32>().ok())
        .ok_or_else(|| format!("`{}` is not a rank number", shown(v)))
}
