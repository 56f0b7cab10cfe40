//! NCCL and CUDA errors as dist's, keeping NCCL's own error string and the underlying
//! error as the source (cudarc's `NcclError` has no `Display`).

use crate::error::{Error, Result};
use cudarc::nccl::{result, sys};

/// An NCCL call that failed: its result code and NCCL's description of it.
#[derive(Debug)]
pub struct NcclCallError {
    /// The code NCCL returned.
    pub code: sys::ncclResult_t,
    /// `ncclGetErrorString` of it.
    pub text: String,
}

impl std::fmt::Display for NcclCallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({:?})", self.text, self.code)
    }
}

impl std::error::Error for NcclCallError {}

/// What a failed call of cudarc's layers says about itself.
pub(crate) trait CallError {
    /// The error as the source of ours, and its text for the message.
    fn into_source(self) -> (Box<dyn std::error::Error + Send + Sync>, String);
}

impl CallError for result::NcclError {
    fn into_source(self) -> (Box<dyn std::error::Error + Send + Sync>, String) {
        // SAFETY: NCCL returned this code, so the library is loaded; the string is static.
        let text = unsafe {
            let p = sys::ncclGetErrorString(self.0);
            if p.is_null() {
                format!("{:?}", self.0)
            } else {
                std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        };
        let e = NcclCallError { code: self.0, text };
        let msg = e.to_string();
        (Box::new(e), msg)
    }
}

impl CallError for cudarc::driver::DriverError {
    fn into_source(self) -> (Box<dyn std::error::Error + Send + Sync>, String) {
        let msg = self.to_string();
        (Box::new(self), msg)
    }
}

/// `Error::Backend` for the failed call `op`, with the call's own error as the source.
pub(crate) fn fail(op: &str, e: impl CallError) -> Error {
    let (source, text) = e.into_source();
    Error::Backend { backend: "nccl", msg: format!("{op} failed: {text}"), source: Some(source) }
}

/// An NCCL call's result as ours.
pub(crate) fn ok(r: std::result::Result<result::NcclStatus, result::NcclError>, op: &str) -> Result<()> {
    r.map(|_| ()).map_err(|e| fail(op, e))
}
