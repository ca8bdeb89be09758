//! Durations of memory-bound kernels (element-wise, normalization,
//! optimizer) and of host-to-device copies: a fixed cost plus bytes over
//! a bandwidth.
//!
//! A sum, not the larger of the two: in the corpus's traces that hold one
//! element-wise kernel at several sizes (A100, V100, MI300X) a kernel takes
//! a few microseconds plus time in proportion to its bytes (MI300X
//! `relu_`: 6.2 us at 4 MB, 17.0 us at 16 MB, where the whole time scaled
//! says 24.9 us); PREDICTION.md, "Memory-bound kernels' fixed cost".

/// Duration of a memory-bound kernel from the bytes it reads and writes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemoryModel {
    /// HBM bandwidth in bytes per ns (GB/s).
    pub bytes_per_ns: f64,
    /// Fraction of that bandwidth element-wise kernels reach.
    pub efficiency: f64,
    /// Each kernel's fixed cost (launch on the device, the first wave's
    /// ramp), ns, added to its bytes' time.
    pub fixed_ns: f64,
}

impl MemoryModel {
    /// Duration in ns of a kernel moving `bytes`.
    pub fn time_ns(&self, bytes: f64) -> f64 {
        self.fixed_ns + bytes.max(0.0) / (self.bytes_per_ns * self.efficiency)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_takes_its_fixed_cost_plus_its_bytes_time() {
        let m = MemoryModel {
            bytes_per_ns: 2000.0,
            efficiency: 0.5,
            fixed_ns: 2000.0,
        };
        assert_eq!(m.time_ns(0.0), 2000.0);
        // 1 MB at 1,000 bytes per ns: 1 us above the fixed cost.
        assert_eq!(m.time_ns(1e6), 3000.0);
        // Four times the bytes: four times the time above the fixed cost,
        // not four times the whole.
        assert_eq!(m.time_ns(4e6) - 2000.0, 4.0 * (m.time_ns(1e6) - 2000.0));
        assert_eq!(m.time_ns(-1.0), 2000.0);
    }
}
