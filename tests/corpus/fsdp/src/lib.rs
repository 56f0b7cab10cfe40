//! A small FSDP (ZeRO-3) implementation: every layer's parameters live as one flat,
//! zero-padded vector split evenly over the ranks; full parameters exist only while a
//! layer runs.

pub mod dense;
pub mod flat;
pub mod layer;
pub mod model;

pub use model::{FsdpModel, FsdpModelBuilder};
