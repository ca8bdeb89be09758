//! The documented ranges of numeric options, shared by the front ends
//! (the CLI's flags, the Python package's arguments) so that both accept
//! and refuse the same values with the same words. Scale factors are
//! multipliers of durations: a million times faster or slower is beyond
//! any what-if, and keeps scaled durations far from the `i64`
//! nanoseconds they are held in.

use lumos_predict::KernelScale;

/// Smallest scale factor.
pub const FACTOR_MIN: f64 = 1e-6;
/// Largest scale factor.
pub const FACTOR_MAX: f64 = 1e6;
/// Largest parallel degree, micro-batch count, layer, head or step
/// count, as a flag, a Python argument or a model file gives it;
/// configurations are further bounded by what they would hold
/// (checked before anything is built).
pub const COUNT_MAX: u32 = 65_536;
/// Least step count of a synthesized trace.
pub const STEPS_MIN: u32 = 2;
/// Largest hidden or FFN size (GPT-3 175B's hidden size is 12,288), and
/// sequence length or vocabulary of a model file: every product of them
/// fits the synthesizer's arithmetic.
pub const SIZE_MAX: u64 = 1 << 20;
/// Largest global batch, in sequences (published runs use at most a
/// few thousand).
pub const BATCH_MAX: u64 = 1 << 24;

/// A degree or count: a whole number from 1 to [`COUNT_MAX`].
pub fn count(s: &str) -> Result<u32, String> {
    whole(s, 1, u64::from(COUNT_MAX)).map(|v| v as u32)
}

/// A step count: a whole number from [`STEPS_MIN`] (the synthesizer's
/// least) to [`COUNT_MAX`].
pub fn steps(s: &str) -> Result<u32, String> {
    whole(s, u64::from(STEPS_MIN), u64::from(COUNT_MAX)).map(|v| v as u32)
}

/// A global batch: a whole number from 1 to [`BATCH_MAX`].
pub fn batch(s: &str) -> Result<u64, String> {
    whole(s, 1, BATCH_MAX)
}

/// A hidden or FFN size: a whole number from 1 to [`SIZE_MAX`].
pub fn size(s: &str) -> Result<u64, String> {
    whole(s, 1, SIZE_MAX)
}

/// `s` as a whole number from `min` to `max`.
pub fn whole(s: &str, min: u64, max: u64) -> Result<u64, String> {
    match s.trim().parse::<i128>() {
        Ok(v) => whole_value(v, min, max, s),
        Err(_) => Err(whole_message(min, max, s)),
    }
}

/// `v` (written `given` in the message) as a whole number from `min` to
/// `max`: the check of [`whole`] on a number already parsed (a Python
/// int, say).
pub fn whole_value(v: i128, min: u64, max: u64, given: &str) -> Result<u64, String> {
    u64::try_from(v)
        .ok()
        .filter(|v| (min..=max).contains(v))
        .ok_or_else(|| whole_message(min, max, given))
}

fn whole_message(min: u64, max: u64, given: &str) -> String {
    format!("must be a whole number from {min} to {max}, got {given}")
}

/// A scale factor: a finite number in [`FACTOR_MIN`]..=[`FACTOR_MAX`]
/// (the caller names the option).
pub fn factor(s: &str) -> Result<f64, String> {
    let f: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number"))?;
    factor_value(f, s)
}

/// `f` (written `given` in the message) as a scale factor: the check of
/// [`factor`] on a number already parsed. NaN is refused as any number
/// outside the range is.
pub fn factor_value(f: f64, given: &str) -> Result<f64, String> {
    if !(FACTOR_MIN..=FACTOR_MAX).contains(&f) {
        return Err(format!(
            "must be a number from {FACTOR_MIN:e} to {FACTOR_MAX:e}, got {given}"
        ));
    }
    Ok(f)
}

/// A kernel speed-up, `PATTERN=FACTOR` (`--scale-kernels`, the Python
/// package's `scale_kernels` patterns): its factor in the range of every
/// scale factor ([`factor`], so both front ends word a factor out of range
/// alike), then the predictor's syntax ([`KernelScale`]'s `FromStr`).
pub fn kernel_scale(s: &str) -> Result<KernelScale, String> {
    if let Some((_, raw)) = s.rsplit_once('=') {
        factor(raw).map_err(|e| format!("factor {e}"))?;
    }
    s.parse()
        .map_err(|e: lumos_predict::PredictError| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factors_are_finite_and_in_range() {
        assert_eq!(factor("0.5"), Ok(0.5));
        assert_eq!(factor("1e6"), Ok(1e6));
        for bad in ["0", "-1", "inf", "NaN", "1e18", "1e-7"] {
            let e = factor(bad).unwrap_err();
            assert_eq!(e, format!("must be a number from 1e-6 to 1e6, got {bad}"));
        }
        assert_eq!(factor("x").unwrap_err(), "`x` is not a number");
        assert!(factor_value(f64::NAN, "nan").is_err());
        assert_eq!(factor_value(1e-6, "1e-06"), Ok(1e-6));
    }

    #[test]
    fn counts_are_whole_and_in_range() {
        assert_eq!(count("65536"), Ok(65536));
        assert_eq!(steps("2"), Ok(2));
        assert_eq!(size("12288"), Ok(12288));
        for bad in ["0", "-1", "1.5", "65537", "18446744073709551615", "x"] {
            assert_eq!(
                count(bad).unwrap_err(),
                format!("must be a whole number from 1 to 65536, got {bad}")
            );
        }
        assert!(steps("1").unwrap_err().contains("from 2 to 65536"));
        assert!(size("1048577").is_err());
        assert_eq!(batch("16777216"), Ok(1 << 24));
        assert!(batch("16777217").is_err());
        assert_eq!(
            whole_value(-1, 0, u64::MAX, "-1").unwrap_err(),
            format!("must be a whole number from 0 to {}, got -1", u64::MAX)
        );
        assert_eq!(
            whole_value(1 << 40, 1, 65_536, "2**40").unwrap_err(),
            "must be a whole number from 1 to 65536, got 2**40"
        );
    }

    #[test]
    fn kernel_scales_check_the_factor_range_then_the_syntax() {
        let k = kernel_scale("class:gemm=0.5").unwrap();
        assert_eq!(k.factor, 0.5);
        assert_eq!(
            kernel_scale("sgemm=0").unwrap_err(),
            "factor must be a number from 1e-6 to 1e6, got 0"
        );
        assert_eq!(
            kernel_scale("sgemm=x").unwrap_err(),
            "factor `x` is not a number"
        );
        assert!(kernel_scale("0.5")
            .unwrap_err()
            .contains("expected PATTERN=FACTOR"));
        assert!(kernel_scale("class:gpu=2")
            .unwrap_err()
            .contains("unknown kernel class"));
    }
}
