//! Moves every record to its owner rank (`key % size`).

use crate::records::Record;
use dist_runtime::prelude::*;

#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub records_sent: usize,
    pub records_received: usize,
    pub words_sent: usize,
    pub words_received: usize,
}

pub struct Rebalancer {
    comm: Comm<World>,
    pub stats: Stats,
}

impl Rebalancer {
    pub fn new(comm: Comm<World>) -> Rebalancer {
        Rebalancer { comm, stats: Stats::default() }
    }

    /// Sends each record to its owner and returns the records this rank owns.
    /// On the wire a record is its key followed by its payload; the payload
    /// lengths travel in a second, per-record array.
    pub fn exchange(&mut self, records: &[Record]) -> dist_runtime::Result<Vec<Record>> {
        let n = self.comm.size();

        // Bucket by owner.
        let mut buckets: Vec<Vec<&Record>> = vec![Vec::new(); n];
        for r in records {
            buckets[r.owner(n)].push(r);
        }
        let mut send_recs = vec![0usize; n];
        let mut send_words = vec![0usize; n];
        let mut words = Vec::new();
        let mut lens = Vec::new();
        for (dst, bucket) in buckets.iter().enumerate() {
            send_recs[dst] = bucket.len();
            for r in bucket {
                words.push(r.key);
                words.extend_from_slice(&r.payload);
                lens.push(r.payload.len() as u32);
                send_words[dst] += 1 + r.payload.len();
            }
        }

        // Tell every rank how many records and words to expect from us.
        let (recv_recs, recv_words) = self.exchange_counts(&send_recs, &send_words)?;

        let mut in_words = vec![0u32; recv_words.iter().sum()];
        self.comm.all_to_all_v(&words, &send_words, &mut in_words, &recv_words)?;
        let mut in_lens = vec![0u32; recv_recs.iter().sum()];
        self.comm.all_to_all_v(&lens, &send_recs, &mut in_lens, &recv_recs)?;

        self.stats.records_sent += records.len();
        self.stats.words_sent += words.len();
        self.stats.records_received += in_lens.len();
        self.stats.words_received += in_words.len();
        Ok(unpack(&in_words, &in_lens))
    }

    /// One all_to_all of [records, words] pairs.
    fn exchange_counts(
        &self,
        send_recs: &[usize],
        send_words: &[usize],
    ) -> dist_runtime::Result<(Vec<usize>, Vec<usize>)> {
        let n = self.comm.size();
        let mut out = vec![0u64; 2 * n];
        for j in 0..n {
            out[2 * j] = send_recs[j] as u64;
            out[2 * j + 1] = send_words[j] as u64;
        }
        let mut got = vec![0u64; 2 * n];
        self.comm.all_to_all(&out, &mut got)?;
        let recs = (0..n).map(|i| got[2 * i] as usize).collect();
        let words = (0..n).map(|i| got[2 * i + 1] as usize).collect();
        Ok((recs, words))
    }
}

/// Splits the flat word stream back into records.
fn unpack(words: &[u32], lens: &[u32]) -> Vec<Record> {
    let mut out = Vec::with_capacity(lens.len());
    let mut at = 0;
    for &len in lens {
        let len = len as usize;
        let key = words[at];
        out.push(Record { key, payload: words[at + 1..at + 1 + len].to_vec() });
        at += 1 + len;
    }
    assert_eq!(at, words.len(), "length array does not cover the payload stream");
    out
}
