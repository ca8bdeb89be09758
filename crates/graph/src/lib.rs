//! The execution graph of one rank: CPU tasks per thread, GPU tasks per
//! stream, and every dependency between them, each with an explicit
//! [`DepKind`].
//!
//! Data flows in from [`lumos_trace::Trace`] through [`build`], which returns
//! the [`Graph`] (durations, gaps, latencies) and the [`Measured`] ground
//! truth kept apart from it.
#![deny(missing_docs)]

mod model;

pub use model::*;
