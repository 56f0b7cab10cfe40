//! Above every backend: the cross-rank agreement of each [`Op`], the watchdog's
//! wait-for graph, and the failure notices. Backends supply the transport (the shm
//! backend piggybacks op records on its epoch barrier; another would all-gather them);
//! the verdicts and their messages are made here, once, for all of them.
//!
//! - `mod.rs`: the agreement of op records (kind, dtype, count, root, op, call site).
//! - `deadlock.rs`: cycles in the wait-for graph, by each rank's state.
//! - `watchdog.rs`: wait records, and the wait-for graph in words.
//! - `failure.rs`: panic capture and the failure notices every backend registers.
//! - `recorder.rs`: the flight recorder (each rank's last ops, printed on a failure).

pub(crate) mod deadlock;
pub(crate) mod failure;
pub(crate) mod recorder;
pub(crate) mod watchdog;

use crate::error::{Error, Result};
use crate::op::{Op, KEY_LEN, RECORD_LEN};

/// Checks that every peer's op record agrees with this rank's `mine`; otherwise an
/// `Error::Mismatch` on communicator `comm` naming both calls and their sites. The
/// fast path compares each peer's 32-byte key with ours; records are decoded only to
/// describe a disagreement.
pub(crate) fn agreement(
    comm: &str,
    rank: usize,
    mine: &Op,
    peers: impl Iterator<Item = (usize, [u8; RECORD_LEN])>,
) -> Result<()> {
    let key = mine.key();
    let mut bad = Vec::new();
    for (r, rec) in peers {
        if rec[..KEY_LEN] == key {
            continue;
        }
        match Op::from_record(&rec) {
            (Some(op), file, line) => bad.push(format!("rank {r} called {}", op.describe(&file, line))),
            (None, file, line) => bad.push(format!("rank {r} called an unknown op at {file}:{line}")),
        }
    }
    if bad.is_empty() {
        return Ok(());
    }
    // This rank's call, with the user's calls above it (its frames are on the stack here).
    let called_from = mine.site.with_callers().callers().map(|c| format!(", called from {c}")).unwrap_or_default();
    Err(Error::Mismatch {
        comm: comm.to_string(),
        msg: format!(
            "rank {rank} called {}{called_from}, but {}",
            mine.describe(mine.site.0.file(), mine.site.0.line()),
            bad.join("; ")
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::op::OpKind;

    #[test]
    fn a_disagreeing_peer_is_named_with_its_call() {
        let mine = Op::new(OpKind::AllReduce).dtype(DType::F32).count(8);
        let same = mine.record();
        let other = Op::new(OpKind::AllReduce).dtype(DType::F32).count(9).record();
        assert!(agreement("World", 0, &mine, [(1, same)].into_iter()).is_ok());
        let e = agreement("World", 0, &mine, [(1, same), (2, other)].into_iter()).unwrap_err().to_string();
        assert!(e.contains("rank 0 called all_reduce(f32 × 8)"), "{e}");
        assert!(e.contains("rank 2 called all_reduce(f32 × 9)"), "{e}");
        assert!(!e.contains("rank 1 called"), "{e}");
    }
}
