//! Waiting on and testing local symmetric elements (`shmem_wait_until*`, `shmem_test*`), and
//! the [`SymBox`] shorthand. Every load here is an acquire load (the access rule's flags).
//! (The file's path matters: a wait that blocks and names no routine is reported in the hang
//! report by the file that made it (`crate::wait::Backoff`), and `sym/wait.rs` counts as
//! `shmem_wait_until`.)

use bytemuck::Pod;

use super::{SymBox, SymSlice};
use crate::error::Result;
use crate::wait::{Cmp, CmpValues, SyncType};
use crate::world::running;

impl<T: Pod + SyncType> SymSlice<T> {
    /// Blocks until local element `at` satisfies `cmp value` (`shmem_wait_until`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// use oxshmem::Cmp;
    /// let flag = shmem.alloc_slice(1, 0i32)?;
    /// flag.p(0, 1, shmem.my_pe())?;
    /// flag.wait_until(0, Cmp::Eq, 1)?;
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn wait_until(&self, at: usize, cmp: Cmp, value: T) -> Result<()> {
        let p = self.checked_elem(at, "shmem_wait_until")?;
        let mut b = running("shmem_wait_until")?.backoff();
        // SAFETY: p is an aligned element of this live object.
        while !cmp.holds(unsafe { T::load_acquire(p) }, value) {
            b.snooze();
        }
        Ok(())
    }

    /// Whether local element `at` satisfies `cmp value` now (`shmem_test`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// use oxshmem::Cmp;
    /// let flag = shmem.alloc_slice(1, 0u64)?;
    /// assert!(!flag.test(0, Cmp::Ne, 0)?);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn test(&self, at: usize, cmp: Cmp, value: T) -> Result<bool> {
        let p = self.checked_elem(at, "shmem_test")?;
        // SAFETY: p is an aligned element of this live object.
        Ok(cmp.holds(unsafe { T::load_acquire(p) }, value))
    }

    fn checked_elem(&self, at: usize, func: &'static str) -> Result<*const T> {
        let rt = running(func)?;
        self.range(rt, at, 1, func)?;
        // SAFETY: at < len.
        Ok(unsafe { self.as_ptr().add(at) })
    }

    /// Blocks until every element whose `status` entry is 0 (all, when `None`) satisfies
    /// `cmp` against `values` (`shmem_wait_until_all[_vector]`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// use oxshmem::{Cmp, CmpValues};
    /// let flags = shmem.alloc_slice(3, 1i32)?;
    /// flags.wait_until_all(None, Cmp::Eq, CmpValues::One(1))?;
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn wait_until_all(&self, status: Option<&[i32]>, cmp: Cmp, values: CmpValues<'_, T>) -> Result<()> {
        // SAFETY: the object holds len live elements and is symmetric.
        unsafe { crate::wait::wait_until_all(self.as_ptr(), self.len(), status, cmp, values) }
    }

    /// Blocks until some active element satisfies its comparison; returns its index, or
    /// `None` when `status` excludes every element (`shmem_wait_until_any[_vector]`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// use oxshmem::{Cmp, CmpValues};
    /// let flags = shmem.alloc_slice(3, 0i32)?;
    /// flags.write(2, 1);
    /// assert_eq!(flags.wait_until_any(None, Cmp::Eq, CmpValues::One(1))?, Some(2));
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn wait_until_any(&self, status: Option<&[i32]>, cmp: Cmp, values: CmpValues<'_, T>) -> Result<Option<usize>> {
        // SAFETY: as above.
        unsafe { crate::wait::wait_until_any(self.as_ptr(), self.len(), status, cmp, values) }
    }

    /// Blocks until at least one active element satisfies its comparison; returns the indices
    /// of all that do (`shmem_wait_until_some[_vector]`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// use oxshmem::{Cmp, CmpValues};
    /// let flags = shmem.alloc_slice(4, 0i32)?;
    /// flags.write(1, 1);
    /// flags.write(3, 1);
    /// assert_eq!(flags.wait_until_some(None, Cmp::Eq, CmpValues::One(1))?, vec![1, 3]);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn wait_until_some(&self, status: Option<&[i32]>, cmp: Cmp, values: CmpValues<'_, T>) -> Result<Vec<usize>> {
        let mut out = vec![0; self.len()];
        // SAFETY: as above.
        let k = unsafe { crate::wait::wait_until_some(self.as_ptr(), self.len(), &mut out, status, cmp, values) }?;
        out.truncate(k);
        Ok(out)
    }

    /// Whether every active element satisfies its comparison (`shmem_test_all[_vector]`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// use oxshmem::{Cmp, CmpValues};
    /// let flags = shmem.alloc_slice(2, 0i32)?;
    /// flags.write(0, 5);
    /// assert!(flags.test_all(Some(&[0, 1]), Cmp::Eq, CmpValues::One(5))?);
    /// assert!(!flags.test_all(None, Cmp::Eq, CmpValues::Each(&[5, 1]))?);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn test_all(&self, status: Option<&[i32]>, cmp: Cmp, values: CmpValues<'_, T>) -> Result<bool> {
        // SAFETY: as above.
        unsafe { crate::wait::test_all(self.as_ptr(), self.len(), status, cmp, values) }
    }

    /// The index of an active element that satisfies its comparison now, if any
    /// (`shmem_test_any[_vector]`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// use oxshmem::{Cmp, CmpValues};
    /// let flags = shmem.alloc_slice(2, 0i32)?;
    /// assert_eq!(flags.test_any(None, Cmp::Gt, CmpValues::One(0))?, None);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn test_any(&self, status: Option<&[i32]>, cmp: Cmp, values: CmpValues<'_, T>) -> Result<Option<usize>> {
        // SAFETY: as above.
        unsafe { crate::wait::test_any(self.as_ptr(), self.len(), status, cmp, values) }
    }

    /// The indices of every active element that satisfies its comparison now
    /// (`shmem_test_some[_vector]`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// use oxshmem::{Cmp, CmpValues};
    /// let flags = shmem.alloc_slice(3, 2i64)?;
    /// assert_eq!(flags.test_some(None, Cmp::Ge, CmpValues::Each(&[2, 3, 1]))?, vec![0, 2]);
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn test_some(&self, status: Option<&[i32]>, cmp: Cmp, values: CmpValues<'_, T>) -> Result<Vec<usize>> {
        let mut out = vec![0; self.len()];
        // SAFETY: as above.
        let k = unsafe { crate::wait::test_some(self.as_ptr(), self.len(), &mut out, status, cmp, values) }?;
        out.truncate(k);
        Ok(out)
    }
}

impl<T: Pod + SyncType> SymBox<T> {
    /// Blocks until the local value satisfies `cmp value` (`shmem_wait_until`).
    ///
    /// ```
    /// # let shmem = oxshmem::init()?;
    /// let x = shmem.alloc(1i32)?;
    /// x.wait(oxshmem::Cmp::Ge, 1)?;
    /// # Ok::<(), oxshmem::Error>(())
    /// ```
    pub fn wait(&self, cmp: Cmp, value: T) -> Result<()> {
        self.0.wait_until(0, cmp, value)
    }
}
