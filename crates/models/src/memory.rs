//! Durations of memory-bound kernels (element-wise, normalization,
//! optimizer) and of host-to-device copies: bytes over a bandwidth.

/// Duration of a memory-bound kernel from the bytes it reads and writes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemoryModel {
    /// HBM bandwidth in bytes per ns (GB/s).
    pub bytes_per_ns: f64,
    /// Fraction of that bandwidth element-wise kernels reach.
    pub efficiency: f64,
    /// No kernel is shorter than this.
    pub min_ns: f64,
}

impl MemoryModel {
    /// Duration in ns of a kernel moving `bytes`.
    pub fn time_ns(&self, bytes: f64) -> f64 {
        (bytes / (self.bytes_per_ns * self.efficiency)).max(self.min_ns)
    }
}
