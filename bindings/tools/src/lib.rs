//! The tools a user of oxshmem's C and Fortran interfaces runs: the compiler wrappers `oshcc`,
//! `oshc++` (also `oshcxx`, `oshCC`), `oshfort` and `oshnvcc` (NVSHMEM programs for the CPU, CUDA or HIP), `oxshmem-info`, `oxshmem-install` and `oxshmem-api-coverage`.
//!
//! Everything here finds the headers, the library and the Fortran module source from where the
//! running tool lies ([`layout`]): `<prefix>/bin/` beside `<prefix>/include/` and
//! `<prefix>/lib/` once installed, `target/<profile>/` inside the source tree before. Nothing here
//! is linked into a PE: the runtime itself never depends on this crate.

pub mod coverage;
pub mod cudarewrite;
pub mod fortran;
pub mod info;
pub mod install;
pub mod layout;
pub mod nvcc;
pub mod nvlib;
pub mod pkgconfig;
pub mod wrapper;

pub use layout::Layout;
