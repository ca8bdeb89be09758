//! A small deterministic PRNG (splitmix64) and the noise shapes built on
//! it. Written by hand so that a seed gives the same trace on every
//! platform and version, which a general-purpose RNG crate does not
//! promise.

/// splitmix64 (Steele, Lea, Flood 2014): one 64-bit state, full period,
/// passes BigCrush; plenty for timing noise.
#[derive(Debug, Clone)]
pub(crate) struct Rng {
    state: u64,
}

impl Rng {
    /// A generator for one stream of noise: `seed` mixed with a `stream`
    /// number (the rank, say), so that streams do not overlap.
    pub(crate) fn new(seed: u64, stream: u64) -> Rng {
        let mut r = Rng {
            state: seed ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03),
        };
        r.next_u64();
        r
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub(crate) fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Approximately standard normal (Irwin-Hall of four uniforms,
    /// rescaled): bounded at +-3.5, which keeps durations positive.
    pub(crate) fn normal(&mut self) -> f64 {
        let s: f64 = (0..4).map(|_| self.uniform()).sum();
        (s - 2.0) * 3f64.sqrt()
    }

    /// True with probability `p`.
    pub(crate) fn chance(&mut self, p: f64) -> bool {
        self.uniform() < p
    }
}

/// Noise applied to model values; `scale` 0 turns it off.
#[derive(Debug, Clone)]
pub(crate) struct Noise {
    rng: Rng,
    scale: f64,
}

impl Noise {
    pub(crate) fn new(seed: u64, stream: u64, scale: f64) -> Noise {
        Noise {
            rng: Rng::new(seed, stream),
            scale,
        }
    }

    /// `mean` ns with relative standard deviation `rel`, never under half
    /// of `mean`.
    pub(crate) fn around(&mut self, mean: f64, rel: f64) -> i64 {
        if self.scale == 0.0 {
            return mean.round() as i64;
        }
        let x = mean * (1.0 + rel * self.scale * self.rng.normal());
        x.max(0.5 * mean).round() as i64
    }

    /// Uniform between `lo` and `hi` ns (`(lo + hi) / 2` without noise).
    pub(crate) fn between(&mut self, lo: i64, hi: i64) -> i64 {
        if self.scale == 0.0 || hi <= lo {
            return (lo + hi) / 2;
        }
        let mid = (lo + hi) as f64 / 2.0;
        let half = (hi - lo) as f64 / 2.0 * self.scale.min(1.0);
        (mid + half * (2.0 * self.rng.uniform() - 1.0)).round() as i64
    }

    /// A rare long stall (garbage collection, page fault, a log line):
    /// with probability `p` (scaled with the noise), `lo..hi` ns; else 0.
    pub(crate) fn hiccup(&mut self, p: f64, lo: i64, hi: i64) -> i64 {
        if self.scale == 0.0 || !self.rng.chance(p * self.scale) {
            return 0;
        }
        lo + ((hi - lo) as f64 * self.rng.uniform()) as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_distinct_streams() {
        let a: Vec<u64> = {
            let mut r = Rng::new(7, 1);
            (0..4).map(|_| r.next_u64()).collect()
        };
        let b: Vec<u64> = {
            let mut r = Rng::new(7, 1);
            (0..4).map(|_| r.next_u64()).collect()
        };
        let c: Vec<u64> = {
            let mut r = Rng::new(7, 2);
            (0..4).map(|_| r.next_u64()).collect()
        };
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn noise_shapes() {
        let mut n = Noise::new(1, 0, 1.0);
        let xs: Vec<i64> = (0..10_000).map(|_| n.around(1000.0, 0.1)).collect();
        let mean = xs.iter().sum::<i64>() as f64 / xs.len() as f64;
        assert!((mean - 1000.0).abs() < 5.0, "{mean}");
        assert!(xs.iter().all(|&x| x >= 500));
        let mut quiet = Noise::new(1, 0, 0.0);
        assert_eq!(quiet.around(1000.4, 0.1), 1000);
        assert_eq!(quiet.between(10, 20), 15);
        assert_eq!(quiet.hiccup(1.0, 5, 9), 0);
        for _ in 0..1000 {
            let x = n.between(10, 20);
            assert!((10..=20).contains(&x));
        }
    }
}
