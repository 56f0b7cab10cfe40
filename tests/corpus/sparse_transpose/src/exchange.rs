//! Moving nonzeros to their new owners: counts first (all_to_all), then the
//! variable-length payloads, either by all_to_all_v or by pairwise isend/irecv.

use crate::csr::Entry;
use dist_runtime::prelude::*;
use std::fmt;

/// Tag of the pairwise payload messages.
pub const PAYLOAD: Tag<u64> = Tag::new(7);
/// Words per encoded nonzero: row, column, value bits.
pub const WORDS: usize = 3;

#[derive(Debug)]
pub enum ExchangeError {
    Dist(dist_runtime::Error),
    Corrupt { from: usize, words: usize },
    Misrouted { row: usize, owner: usize },
}

impl fmt::Display for ExchangeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExchangeError::Dist(e) => write!(f, "{e}"),
            ExchangeError::Corrupt { from, words } => {
                write!(f, "{words} words from rank {from} are not a whole number of nonzeros")
            }
            ExchangeError::Misrouted { row, owner } => write!(f, "row {row} arrived at rank {owner}, which does not own it"),
        }
    }
}

impl std::error::Error for ExchangeError {}

impl From<dist_runtime::Error> for ExchangeError {
    fn from(e: dist_runtime::Error) -> Self {
        ExchangeError::Dist(e)
    }
}

pub fn encode(entries: &[Entry]) -> Vec<u64> {
    entries.iter().flat_map(|e| [e.row as u64, e.col as u64, e.val.to_bits()]).collect()
}

pub fn decode(words: &[u64], from: usize) -> Result<Vec<Entry>, ExchangeError> {
    if words.len() % WORDS != 0 {
        return Err(ExchangeError::Corrupt { from, words: words.len() });
    }
    Ok(words
        .chunks_exact(WORDS)
        .map(|w| Entry { row: w[0] as usize, col: w[1] as usize, val: f64::from_bits(w[2]) })
        .collect())
}

/// Outgoing nonzeros, one bucket per destination rank.
#[derive(Debug, Clone)]
pub struct Buckets {
    per_dest: Vec<Vec<Entry>>,
}

impl Buckets {
    pub fn new(ranks: usize) -> Self {
        Buckets { per_dest: vec![Vec::new(); ranks] }
    }

    pub fn push(&mut self, dest: usize, e: Entry) {
        self.per_dest[dest].push(e);
    }

    pub fn to(&self, dest: usize) -> &[Entry] {
        &self.per_dest[dest]
    }

    /// Words going to each rank.
    pub fn word_counts(&self) -> Vec<u64> {
        self.per_dest.iter().map(|b| (b.len() * WORDS) as u64).collect()
    }
}

/// Step one of every exchange: rank i learns how many words rank j will send it.
pub fn exchange_counts(comm: &Comm<World>, send_counts: &[u64]) -> Result<Vec<u64>, ExchangeError> {
    let mut recv_counts = vec![0u64; comm.size()];
    comm.all_to_all(send_counts, &mut recv_counts)?;
    Ok(recv_counts)
}

pub trait Exchanger {
    fn name(&self) -> &'static str;
    /// Delivers every bucket to its rank; returns what this rank received (its own
    /// bucket included).
    fn exchange(&self, comm: &Comm<World>, out: &Buckets) -> Result<Vec<Entry>, ExchangeError>;
}

pub struct AllToAllV;

impl Exchanger for AllToAllV {
    fn name(&self) -> &'static str {
        "all_to_all_v"
    }

    fn exchange(&self, comm: &Comm<World>, out: &Buckets) -> Result<Vec<Entry>, ExchangeError> {
        let send_counts = out.word_counts();
        let recv_counts = exchange_counts(comm, &send_counts)?;
        let send: Vec<u64> = (0..comm.size()).flat_map(|d| encode(out.to(d))).collect();
        let sc: Vec<usize> = send_counts.iter().map(|&c| c as usize).collect();
        let rc: Vec<usize> = recv_counts.iter().map(|&c| c as usize).collect();
        let mut recv = vec![0u64; rc.iter().sum()];
        comm.all_to_all_v(&send, &sc, &mut recv, &rc)?;
        let mut got = Vec::with_capacity(recv.len() / WORDS);
        let mut at = 0;
        for (src, &c) in rc.iter().enumerate() {
            got.extend(decode(&recv[at..at + c], src)?);
            at += c;
        }
        Ok(got)
    }
}

pub struct Pairwise;

impl Exchanger for Pairwise {
    fn name(&self) -> &'static str {
        "pairwise isend/irecv"
    }

    fn exchange(&self, comm: &Comm<World>, out: &Buckets) -> Result<Vec<Entry>, ExchangeError> {
        let (r, n) = (comm.rank(), comm.size());
        let recv_counts = exchange_counts(comm, &out.word_counts())?;
        let outbox: Vec<Vec<u64>> = (0..n).map(|d| encode(out.to(d))).collect();
        // Post every receive first, sized by the counts; nothing from a rank that
        // sends nothing, and nothing from ourselves.
        let mut inbox: Vec<Vec<u64>> = recv_counts.iter().map(|&c| vec![0u64; c as usize]).collect();
        let mut reqs = Vec::new();
        for (src, buf) in inbox.iter_mut().enumerate() {
            if src != r && !buf.is_empty() {
                reqs.push(comm.irecv(src, PAYLOAD, buf)?);
            }
        }
        for step in 1..n {
            let dst = (r + step) % n;
            if !outbox[dst].is_empty() {
                reqs.push(comm.isend(dst, PAYLOAD, &outbox[dst])?);
            }
        }
        dist_runtime::wait_all(reqs)?;
        let mut got = out.to(r).to_vec();
        for (src, words) in inbox.iter().enumerate().filter(|(s, _)| *s != r) {
            got.extend(decode(words, src)?);
        }
        Ok(got)
    }
}
