//! Point-to-point helpers: moving variable-length key vectors between two ranks.

use dist_runtime::prelude::*;

const COUNT: Tag<u64> = Tag::new(10);
const KEYS: Tag<u64> = Tag::new(11);

/// Swaps key vectors with `partner`: sends `give`, returns what the partner gave.
/// The length goes first so the receive buffer can be sized exactly.
pub fn swap_with<G: Group>(comm: &Comm<G>, partner: usize, give: &[u64]) -> dist_runtime::Result<Vec<u64>> {
    let mut len = [0u64];
    comm.sendrecv(partner, COUNT, &[give.len() as u64], partner, &mut len)?;
    let mut got = vec![0u64; len[0] as usize];
    comm.sendrecv(partner, KEYS, give, partner, &mut got)?;
    Ok(got)
}

/// One-way transfer of a key vector (length first).
pub fn push_keys<G: Group>(comm: &Comm<G>, dst: usize, keys: &[u64]) -> dist_runtime::Result<()> {
    comm.send(dst, COUNT, &[keys.len() as u64])?;
    comm.send(dst, KEYS, keys)
}

/// Receives a key vector sent with [`push_keys`].
pub fn pull_keys<G: Group>(comm: &Comm<G>, src: usize) -> dist_runtime::Result<Vec<u64>> {
    let mut len = [0u64];
    comm.recv(src, COUNT, &mut len)?;
    let mut keys = vec![0u64; len[0] as usize];
    comm.recv(src, KEYS, &mut keys)?;
    Ok(keys)
}
