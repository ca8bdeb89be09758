//! Tests of the lumos-sim scheduler and metrics on hand-built graphs, in one
//! test binary.

mod builder;
mod critical;
mod metrics;
mod props;
mod rendezvous;
mod scheduler;
