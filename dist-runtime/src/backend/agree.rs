//! The generic agreement path of `verify` (docs/design.md, "Checks"): before an op, every
//! rank all-gathers its op record (fixed size, so the exchange completes even when the
//! ops differ) and compares the others' with its own. A backend that compares every op
//! inside its own protocol (shm's barriers carry the record) says so with
//! [`Backend::piggybacks_agreement`] and skips this; one that can fold the exchange into
//! the op overrides [`Backend::run_agreed`] (MPI for small collectives).

use super::{Backend, Bufs};
use crate::error::Result;
use crate::op::{Op, OpKind, RECORD_LEN};

/// Compares `op` across the ranks of `backend` under `check`, where the backend does not
/// compare every op itself.
pub(crate) fn agree_on(backend: &dyn Backend, check: bool, name: &str, op: &Op) -> Result<()> {
    if !check || backend.piggybacks_agreement() {
        return Ok(());
    }
    exchange_records(backend, name, op)
}

/// Runs `op` on `backend`, compared across ranks first under `check` where the backend
/// does not compare every op itself ([`Backend::run_agreed`]).
pub(crate) fn run_on(backend: &dyn Backend, check: bool, name: &str, op: &Op, bufs: Bufs<'_>) -> Result<()> {
    if !check || backend.piggybacks_agreement() {
        return backend.run(op, bufs);
    }
    backend.run_agreed(name, op, bufs)
}

/// The record all-gather and comparison, for any backend (what [`Backend::run_agreed`]
/// does by default).
pub(crate) fn exchange_records<B: Backend + ?Sized>(backend: &B, name: &str, op: &Op) -> Result<()> {
    let n = backend.size();
    let record = op.record();
    let mut all = vec![0u8; n * RECORD_LEN];
    let counts = vec![RECORD_LEN; n];
    let mut exchange = Op::new(OpKind::AllGather).dtype(crate::dtype::DType::U8).count(RECORD_LEN);
    // Named and placed as the op it checks, so a rank stuck here is reported as waiting
    // in the user's call ("waits in barrier at src/x.rs:12").
    exchange.name = op.name;
    exchange.site = op.site;
    exchange.agreement = true;
    backend.run(&exchange, Bufs::Gather { send: &record, recv: Some(&mut all), counts: &counts })?;
    let me = backend.rank();
    let peers = (0..n).filter(|&r| r != me).map(|r| {
        let rec: [u8; RECORD_LEN] = all[r * RECORD_LEN..(r + 1) * RECORD_LEN].try_into().expect("one record");
        (r, rec)
    });
    crate::verify::agreement(name, me, op, peers)
}
