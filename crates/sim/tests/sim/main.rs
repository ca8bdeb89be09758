//! Tests of the lumos-sim scheduler and metrics on hand-built graphs, in one
//! test binary.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a program or test: printing is its job

mod builder;
mod critical;
mod launch_queue;
mod metrics;
mod props;
mod rendezvous;
mod scheduler;
