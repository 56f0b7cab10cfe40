//! A distributed key-value store: each rank is a client issuing a seeded stream of
//! put/get/delete operations and the owner of the keys that hash to it. Requests are
//! batched per owner and exchanged with `all_to_all_v`, owners apply them in source-rank
//! order and reply the same way. The report rank checks against a serial replay.
//!
//! `cargo spmd run -n 3 -- --ops 40 --rounds 5 --keys 64 --mix read-heavy`

mod config;
mod router;
mod store;
mod wire;
mod workload;

use config::Config;
use dist_runtime::prelude::*;
use router::Router;
use std::collections::VecDeque;
use std::error::Error;
use store::{ClientStats, Shard, FIELDS};
use wire::{decode_ops, decode_replies, encode_ops, encode_replies, REPLY_BYTES};
use workload::{generate, owner, Op};

struct Node { rank: usize, size: usize, shard: Shard, stats: ClientStats, router: Router }

impl Node {
    fn new(world: &Comm<World>) -> Node {
        Node { rank: world.rank(), size: world.size(), shard: Shard::default(), stats: ClientStats::default(), router: Router::new(world) }
    }

    /// One round: send this client's operations to their owners, serve the requests
    /// this rank owns, and take the replies.
    fn round(&mut self, cfg: &Config, round: usize) -> Result<(), Box<dyn Error>> {
        let ops = generate(cfg, self.rank, round);
        let mut by_owner: Vec<VecDeque<Op>> = vec![VecDeque::new(); self.size];
        for op in ops {
            by_owner[owner(op.key(), self.size)].push_back(op);
        }
        let encoded: Vec<Vec<u8>> = by_owner.iter_mut().map(|q| encode_ops(q.make_contiguous())).collect();
        let requests = self.router.exchange(&encoded)?;

        // Serve: sources in rank order, each source's operations in issue order.
        let mut replies = Vec::with_capacity(self.size);
        for bytes in &requests {
            let ops = decode_ops(bytes)?;
            replies.push(encode_replies(&ops.iter().map(|op| self.shard.apply(op)).collect::<Vec<_>>()));
        }
        let reply_counts: Vec<usize> = by_owner.iter().map(|q| q.len() * REPLY_BYTES).collect();
        let answers = self.router.exchange_sized(&replies, &reply_counts)?;

        for (pending, bytes) in by_owner.iter_mut().zip(&answers) {
            for reply in decode_replies(bytes)? {
                let op = pending.pop_front().ok_or("more replies than requests")?;
                self.stats.record(&op, reply)?;
            }
            if let Some(op) = pending.front() {
                return Err(format!("no reply to {op:?}").into());
            }
        }
        Ok(())
    }
}

/// Every client's stats, the number of keys and the digest, replayed in one process.
fn serial_replay(cfg: &Config, size: usize) -> Result<(Vec<ClientStats>, usize, u64), String> {
    let mut shard = Shard::default();
    let mut stats = vec![ClientStats::default(); size];
    for round in 0..cfg.rounds {
        for (src, client) in stats.iter_mut().enumerate() {
            for op in generate(cfg, src, round) {
                let reply = shard.apply(&op);
                client.record(&op, reply)?;
            }
        }
    }
    Ok((stats, shard.len(), shard.digest()))
}

#[spmd]
fn main(world: Comm<World>) -> Result<(), Box<dyn Error>> {
    let cfg = Config::parse()?;
    let mut node = Node::new(&world);
    for round in 0..cfg.rounds {
        node.round(&cfg, round)?;
    }

    let root = cfg.report_rank % world.size();
    let words = node.stats.to_words();
    if world.rank() == root {
        let mut all = vec![0u64; FIELDS.len() * world.size()];
        world.gather(&words, Some(&mut all[..]), root)?;
        let mut total_keys = [node.shard.len() as u64];
        world.reduce(&mut total_keys, ReduceOp::Sum, root)?;
        let mut total_digest = [node.shard.digest()];
        world.reduce(&mut total_digest, ReduceOp::BXor, root)?;

        let (want_stats, want_keys, want_digest) = serial_replay(&cfg, world.size())?;
        for (r, (got, want)) in all.chunks(FIELDS.len()).map(ClientStats::from_words).zip(&want_stats).enumerate() {
            if &got != want {
                return Err(format!("client {r}: {got:?}, serial replay {want:?}").into());
            }
        }
        if total_keys[0] != want_keys as u64 || total_digest[0] != want_digest {
            return Err(format!("store: {} keys digest {:x}, serial {want_keys} keys digest {want_digest:x}", total_keys[0], total_digest[0]).into());
        }
        let issued: u64 = all.chunks(FIELDS.len()).flat_map(|c| c[..4].iter().chain(&c[5..])).sum();
        println!(
            "kv_store OK: {} ranks, {} rounds, {issued} operations, {want_keys} keys live, digest {want_digest:016x}, {} exchanges",
            world.size(), cfg.rounds, node.router.exchanges
        );
    } else {
        world.gather(&words, None, root)?;
        let mut keys = [node.shard.len() as u64];
        world.reduce(&mut keys, ReduceOp::Sum, root)?;
        let mut digest = [node.shard.digest()];
        world.reduce(&mut digest, ReduceOp::BXor, root)?;
    }
    Ok(())
}
