//! The program's error type: communication failures and failed self-checks.

use std::fmt;

#[derive(Debug)]
pub enum SortError {
    Comm(dist_runtime::Error),
    Placement(String),
    Verify(String),
}

impl fmt::Display for SortError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SortError::Comm(e) => write!(f, "communication failed: {e}"),
            SortError::Placement(m) => write!(f, "bad key placement: {m}"),
            SortError::Verify(m) => write!(f, "verification failed: {m}"),
        }
    }
}

impl std::error::Error for SortError {}

impl From<dist_runtime::Error> for SortError {
    fn from(e: dist_runtime::Error) -> Self {
        SortError::Comm(e)
    }
}

pub type Result<T> = std::result::Result<T, SortError>;
