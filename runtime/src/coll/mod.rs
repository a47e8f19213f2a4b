//! Collectives, built from the runtime's own one-sided operations on internal symmetric
//! objects — no second communication stack.

pub(crate) mod barrier;
