//! The execution graph of one rank: CPU tasks per thread, GPU tasks per
//! stream, and every dependency between them, each with an explicit
//! [`DepKind`].
//!
//! Data flows in from [`lumos_trace::Trace`] through [`build`], which returns
//! the [`Graph`] (durations, gaps, latencies), the [`Measured`] ground truth
//! kept apart from it, and a [`BuildReport`] counting every edge found or
//! inferred, by rule. [`check`] verifies the graph's invariants.
#![deny(missing_docs)]

mod build;
mod check;
mod model;
mod report;

pub use build::build;
pub use check::{check, Violation};
pub use model::*;
pub use report::{BuildReport, Rule};
