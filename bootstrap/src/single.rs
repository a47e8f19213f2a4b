//! The singleton bootstrap: a program started without a launcher is PE 0 of 1.

use crate::{Bootstrap, Result};

/// PE 0 of a job of one. Every collective returns at once.
#[derive(Debug, Default)]
pub struct Singleton;

impl Singleton {
    /// A new singleton bootstrap.
    pub fn new() -> Self {
        Singleton
    }
}

impl Bootstrap for Singleton {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn name(&self) -> &'static str {
        "singleton"
    }
    fn node_mapping(&self) -> Option<Vec<usize>> {
        Some(vec![0])
    }
    fn allgather(&self, data: &[u8]) -> Result<Vec<Vec<u8>>> {
        Ok(vec![data.to_vec()])
    }
    fn barrier(&self) -> Result<()> {
        Ok(())
    }
    fn abort(&self, code: i32, msg: &str) -> ! {
        eprintln!("{msg}");
        std::process::exit(code)
    }
    fn finalize(&self) -> Result<()> {
        Ok(())
    }
}
