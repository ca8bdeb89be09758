//! Units of the reports: the graph and the simulator count integer
//! nanoseconds; reports show microseconds or milliseconds.

/// Nanoseconds as microseconds.
pub(crate) fn us(ns: i64) -> f64 {
    ns as f64 / 1e3
}

/// Nanoseconds as milliseconds.
pub(crate) fn ms(ns: i64) -> f64 {
    ns as f64 / 1e6
}

/// How far `replayed` is from `measured`, in % of `measured` (0 when
/// nothing was measured).
pub(crate) fn err_pct(measured: i64, replayed: i64) -> f64 {
    if measured == 0 {
        0.0
    } else {
        (replayed - measured) as f64 / measured as f64 * 100.0
    }
}
