//! The reduction operations: a leaf, so that what names an operation (the collectives, a
//! registered segment's collectives in `segment.rs`) need not import the collectives.

/// A reduction operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum ReduceOp {
    /// Bitwise and.
    And = 1,
    /// Bitwise or.
    Or = 2,
    /// Bitwise xor.
    Xor = 3,
    /// Maximum.
    Max = 4,
    /// Minimum.
    Min = 5,
    /// Sum (wrapping for integers).
    Sum = 6,
    /// Product (wrapping for integers).
    Prod = 7,
}
