//! The errors of the CUDA driver layer: one enum, each message a sentence a user can act on.

use cudarc::driver::sys::CUresult;

/// What went wrong in the CUDA driver layer.
///
/// ```
/// use oxshmem_device::cuda::CudaError;
/// let e = CudaError::NoDriver { detail: "libcuda.so.1 not found".into() };
/// assert_eq!(e.to_string(), "no CUDA driver: libcuda.so.1 not found");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CudaError {
    /// The driver library could not be loaded or is not a real driver (the toolkit's stub).
    #[error("no CUDA driver: {detail}")]
    NoDriver {
        /// What was looked for and what was found (`libcuda.so.1 not found`).
        detail: String,
    },
    /// The driver lacks a routine that an operation needs (a driver of an older CUDA).
    #[error("CUDA driver too old: {detail}")]
    OldDriver {
        /// The routine, the CUDA release that brought it, and the driver's own version.
        detail: String,
    },
    /// The driver loaded but sees no device.
    #[error("no CUDA device: {detail}")]
    NoDevice {
        /// Which call said so (`cuDeviceGetCount returned 0`).
        detail: String,
    },
    /// A device ordinal beyond the devices present.
    #[error("CUDA device {requested} requested but only {present} present")]
    BadOrdinal {
        /// The ordinal asked for.
        requested: i64,
        /// How many devices the driver reports.
        present: i32,
    },
    /// A driver call returned an error.
    #[error("{call} failed: {name} ({code})")]
    Driver {
        /// The driver routine, with the arguments that matter (`cuMemCreate of 2097152 bytes`).
        call: String,
        /// The driver's name of the error (`CUDA_ERROR_OUT_OF_MEMORY`).
        name: String,
        /// Its number.
        code: i32,
    },
    /// The device lacks a capability the caller needs.
    #[error("CUDA device {ordinal} ({device}) does not support {what}")]
    Unsupported {
        /// The device ordinal.
        ordinal: i32,
        /// The device's name.
        device: String,
        /// The missing capability and the attribute that says so.
        what: String,
    },
    /// A configuration variable with a value that cannot be used.
    #[error("{var}={value:?}: {why}")]
    BadSetting {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
        /// What is expected.
        why: String,
    },
    /// An argument that cannot be used.
    #[error("{routine}: {why}")]
    InvalidArgument {
        /// The routine called.
        routine: &'static str,
        /// What is wrong with the argument, naming its value.
        why: String,
    },
}

impl CudaError {
    /// The error of driver call `call` that returned `r`: its name as the driver's header
    /// spells it, and its number.
    ///
    /// ```
    /// use oxshmem_device::cuda::{CUresult, CudaError};
    /// let e = CudaError::driver("cuMemCreate", CUresult::CUDA_ERROR_OUT_OF_MEMORY);
    /// assert_eq!(e.to_string(), "cuMemCreate failed: CUDA_ERROR_OUT_OF_MEMORY (2)");
    /// ```
    pub fn driver(call: impl Into<String>, r: CUresult) -> CudaError {
        // The bindings' enum variants carry the header's names, so Debug prints them without
        // asking the driver (which may be the thing that failed).
        CudaError::Driver { call: call.into(), name: format!("{r:?}"), code: r as i32 }
    }

    /// Whether this is [`CudaError::NoDriver`] (callers that can run without a GPU test this).
    pub fn is_no_driver(&self) -> bool {
        matches!(self, CudaError::NoDriver { .. })
    }
}

/// `Ok` for `CUDA_SUCCESS`, else the error of `call`.
pub(crate) fn check(call: impl FnOnce() -> String, r: CUresult) -> Result<(), CudaError> {
    if r == CUresult::CUDA_SUCCESS { Ok(()) } else { Err(CudaError::driver(call(), r)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_call_the_error_and_its_number() {
        let e = CudaError::driver("cuMemCreate", CUresult::CUDA_ERROR_OUT_OF_MEMORY);
        assert_eq!(e.to_string(), "cuMemCreate failed: CUDA_ERROR_OUT_OF_MEMORY (2)");
        let e = CudaError::driver("cuInit", CUresult::CUDA_ERROR_NO_DEVICE);
        assert_eq!(e.to_string(), "cuInit failed: CUDA_ERROR_NO_DEVICE (100)");
        let e = CudaError::driver("cuMemMap", CUresult::CUDA_ERROR_INVALID_VALUE);
        assert_eq!(e.to_string(), "cuMemMap failed: CUDA_ERROR_INVALID_VALUE (1)");
    }

    #[test]
    fn device_messages() {
        let e = CudaError::NoDriver { detail: "libcuda.so.1 not found".into() };
        assert_eq!(e.to_string(), "no CUDA driver: libcuda.so.1 not found");
        assert!(e.is_no_driver());
        let e = CudaError::NoDevice { detail: "cuDeviceGetCount returned 0".into() };
        assert_eq!(e.to_string(), "no CUDA device: cuDeviceGetCount returned 0");
        assert!(!e.is_no_driver());
        let e = CudaError::BadOrdinal { requested: 3, present: 1 };
        assert_eq!(e.to_string(), "CUDA device 3 requested but only 1 present");
        let e = CudaError::Unsupported {
            ordinal: 0,
            device: "NVIDIA H200".into(),
            what: "virtual memory management (CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED is 0)".into(),
        };
        assert_eq!(
            e.to_string(),
            "CUDA device 0 (NVIDIA H200) does not support virtual memory management \
             (CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED is 0)"
        );
    }

    #[test]
    fn check_passes_success_and_names_failures() {
        assert_eq!(check(|| unreachable!(), CUresult::CUDA_SUCCESS), Ok(()));
        let e = check(|| "cuMemcpy of 8 bytes".into(), CUresult::CUDA_ERROR_ILLEGAL_ADDRESS).unwrap_err();
        assert_eq!(e.to_string(), "cuMemcpy of 8 bytes failed: CUDA_ERROR_ILLEGAL_ADDRESS (700)");
    }
}
