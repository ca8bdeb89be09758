//! Numbers given as Python arguments, checked against the ranges the
//! CLI's flags take (`lumos_report::range`, the same constants and
//! checks), with the CLI's words after the Python argument's name:
//! `dp: must be a whole number from 1 to 65536, got 65537` for the CLI's
//! `invalid value '65537' for '--dp <DP>': must be ...`. Any Python int is
//! taken (a negative or huge one is out of range, not an `OverflowError`),
//! and anything else is a `ConfigError` too.

use lumos_report::range;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt};

use crate::errors::{Error, Result};

/// How `v` is written in Python (its `repr`).
pub fn shown(v: &Bound<'_, PyAny>) -> String {
    v.repr().map_or_else(|_| "?".into(), |r| r.to_string())
}

/// `v` as a whole number from `min` to `max`, for argument `what`.
pub fn whole(what: &str, v: &Bound<'_, PyAny>, min: u64, max: u64) -> Result<u64> {
    let given = shown(v);
    // A bool, a float or a string is no whole number, as `--dp 4.0` or
    // `--dp true` is none; an int past i128 is past any range.
    let n = if v.is_instance_of::<PyInt>() && !v.is_instance_of::<PyBool>() {
        v.extract::<i128>().unwrap_or(i128::MAX)
    } else {
        -1
    };
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
    let ok = v.is_instance_of::<PyInt>() && !v.is_instance_of::<PyBool>();
    ok.then(|| v.extract::<u32>().ok())
        .flatten()
        .ok_or_else(|| format!("`{}` is not a rank number", shown(v)))
}
