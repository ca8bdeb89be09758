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

/// How far `replayed` is from `measured`, in % of `measured`; `None` when
/// the measured span has no length: no relative error exists then, and a
/// 0% would read as agreement whatever was replayed.
pub(crate) fn err_pct(measured: i64, replayed: i64) -> Option<f64> {
    pct_of(replayed as f64, measured as f64)
}

/// How far `x` is from `of`, in % of `of`; `None` when `of` has no length
/// (the rule of [`err_pct`], for lengths already in floating point).
pub(crate) fn pct_of(x: f64, of: f64) -> Option<f64> {
    (of > 0.0).then(|| (x - of) / of * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A span measured at zero length has no error, whatever was
    /// replayed (it gave 0%, an agreement nothing measured).
    #[test]
    fn a_span_of_zero_length_has_no_error() {
        assert_eq!(err_pct(0, 0), None);
        assert_eq!(err_pct(0, 5_000), None);
        assert_eq!(pct_of(5.0, 0.0), None);
        assert_eq!(pct_of(0.0, 0.0), None);
    }

    #[test]
    fn an_error_is_in_percent_of_the_measured_span() {
        assert_eq!(err_pct(1_000, 1_100), Some(10.0));
        assert_eq!(err_pct(1_000, 900), Some(-10.0));
        assert_eq!(err_pct(1_000, 1_000), Some(0.0));
        assert_eq!(pct_of(110.0, 100.0), Some(10.0));
    }
}
