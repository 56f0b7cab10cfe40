//! Sizes shared by the stages (for check/module_const_length.rs).
pub const BATCH: usize = 4;
pub const MODEL: usize = 8;
pub const HIDDEN: usize = 32;
