//! Whether NCCL can run here: driver, library, version and devices, probed without
//! anything that could panic in the dynamic loader.

use super::fail;
use crate::error::{Error, Result};
use cudarc::driver::CudaContext;
use cudarc::nccl::result;

/// Oldest NCCL dist runs on (`NCCL_VERSION_CODE` of 2.18.0).
const MIN_NCCL: i32 = 21800;

/// Checks, without panicking, that the CUDA driver and NCCL can be loaded and a GPU is
/// visible; returns the number of visible devices.
pub fn probe() -> Result<usize> {
    // SAFETY: both only try to dlopen the library's candidate names.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(Error::backend(
            "nccl",
            "the NCCL backend needs the CUDA driver library (libcuda.so.1), which could not be loaded: install \
             the NVIDIA driver (or run where one is), or use DIST_BACKEND=shm",
        ));
    }
    if !unsafe { cudarc::nccl::sys::is_culib_present() } {
        return Err(Error::backend(
            "nccl",
            "the NCCL backend needs libnccl.so.2, which could not be loaded: install NCCL (Debian/Ubuntu: \
             libnccl2; or the nvidia-nccl-cu12 wheel) and put its directory on LD_LIBRARY_PATH, or use \
             DIST_BACKEND=shm",
        ));
    }
    // The bindings are NCCL 2.30's; dist calls ncclCommSplit (2.18) and ncclCommFinalize
    // (2.14), which an older library lacks (the loader would panic on the missing symbol).
    let v = result::get_nccl_version().map_err(|e| fail("ncclGetVersion", e))?;
    if v < MIN_NCCL {
        return Err(Error::backend(
            "nccl",
            format!(
                "the loaded libnccl is version {}.{}.{}, but dist needs NCCL 2.18 or newer (ncclCommSplit, \
                 ncclCommFinalize): install a newer NCCL, or use DIST_BACKEND=shm",
                v / 10000,
                v / 100 % 100,
                v % 100
            ),
        ));
    }
    let n = CudaContext::device_count().map_err(|e| {
        Error::backend(
            "nccl",
            format!("the CUDA driver loaded but found no usable device ({e:?}); use DIST_BACKEND=shm"),
        )
    })?;
    if n <= 0 {
        let vis = std::env::var("CUDA_VISIBLE_DEVICES").unwrap_or_else(|_| "unset".into());
        return Err(Error::backend(
            "nccl",
            format!("no GPU is visible (CUDA_VISIBLE_DEVICES={vis}); use DIST_BACKEND=shm"),
        ));
    }
    Ok(n as usize)
}
