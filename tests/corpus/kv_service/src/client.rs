//! The client side: requests grouped by owner, in messages of at most `MAX_BATCH` keys.

use std::collections::BTreeMap;

use dist_runtime::prelude::*;
use dist_runtime::Result;

use crate::protocol::{done_message, get_message, put_message, MAX_BATCH, REPLY, REQUEST};
use crate::workload::owner;

/// One outgoing message and where it goes.
pub struct Outgoing {
    pub dest: usize,
    pub words: Vec<u64>,
}

/// A Get message sent, whose reply is awaited.
pub struct PendingGet {
    pub owner: usize,
    pub keys: Vec<u64>,
}

fn by_owner<T: Copy>(items: &[T], key: impl Fn(&T) -> u64, ranks: usize) -> BTreeMap<usize, Vec<T>> {
    let mut groups: BTreeMap<usize, Vec<T>> = BTreeMap::new();
    for item in items {
        groups.entry(owner(key(item), ranks)).or_default().push(*item);
    }
    groups
}

/// Put messages for every owner, then a Done to every rank.
pub fn put_plan(pairs: &[(u64, u64)], ranks: usize) -> Vec<Outgoing> {
    let mut out: Vec<Outgoing> = by_owner(pairs, |p| p.0, ranks)
        .into_iter()
        .flat_map(|(dest, group)| {
            group.chunks(MAX_BATCH).map(|c| Outgoing { dest, words: put_message(c) }).collect::<Vec<_>>()
        })
        .collect();
    out.extend((0..ranks).map(|dest| Outgoing { dest, words: done_message() }));
    out
}

/// Get messages for every owner (and what to expect back), then a Done to every rank.
pub fn get_plan(keys: &[u64], ranks: usize) -> (Vec<Outgoing>, Vec<PendingGet>) {
    let mut out = Vec::new();
    let mut pending = Vec::new();
    for (dest, group) in by_owner(keys, |k| *k, ranks) {
        for chunk in group.chunks(MAX_BATCH) {
            out.push(Outgoing { dest, words: get_message(chunk) });
            pending.push(PendingGet { owner: dest, keys: chunk.to_vec() });
        }
    }
    out.extend((0..ranks).map(|dest| Outgoing { dest, words: done_message() }));
    (out, pending)
}

/// Starts every send of the plan; the caller serves requests before waiting on them.
pub fn post_all<'a>(comm: &'a Comm<World>, plan: &'a [Outgoing]) -> Result<Vec<Request<'a>>> {
    plan.iter().map(|m| comm.isend(m.dest, REQUEST, &m.words)).collect()
}

/// Posts the receive of every reply before any Get leaves, so a server's reply never
/// waits for its client.
pub fn post_replies<'a>(
    comm: &'a Comm<World>,
    pending: &[PendingGet],
    replies: &'a mut [Vec<u64>],
) -> Result<Vec<Request<'a>>> {
    replies.iter_mut().zip(pending).map(|(buf, p)| comm.irecv(p.owner, REPLY, buf)).collect()
}
