// Counts of records and of words exchanged side by side by one all_to_all; the
// lengths' all_to_all_v takes the words' counts as its receive counts (item 1 of each
// pair, where the records' counts it sends by are item 0): another value of the sender's.
use dist_runtime::prelude::*;
use std::hash::BuildHasher;

/// Variable-length records (key, payload) of this rank.
fn records(rank: usize) -> Vec<(u64, Vec<u32>)> {
    let s = std::collections::hash_map::RandomState::new();
    (0..40 + 3 * rank).map(|i| (s.hash_one((rank, i)), vec![7; (s.hash_one(i) % 5) as usize])).collect()
}

/// Each record's key and payload go to the record's owner as one stream of words,
/// its payload length in a second stream; both counts (records, words) exchanged
/// side by side by one `all_to_all`.
#[spmd(sizes = 1..=4)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let n = world.size();
    let mut buckets: Vec<Vec<(u64, Vec<u32>)>> = vec![Vec::new(); n];
    for r in records(world.rank()) {
        buckets[(r.0 % n as u64) as usize].push(r);
    }
    let (mut send_recs, mut send_words) = (vec![0usize; n], vec![0usize; n]);
    let (mut words, mut lens) = (Vec::new(), Vec::new());
    for (dst, bucket) in buckets.iter().enumerate() {
        send_recs[dst] = bucket.len();
        for (key, payload) in bucket {
            words.push(*key as u32);
            words.extend_from_slice(payload);
            lens.push(payload.len() as u32);
            send_words[dst] += 1 + payload.len();
        }
    }
    let mut out = vec![0u64; 2 * n];
    for j in 0..n {
        out[2 * j] = send_recs[j] as u64;
        out[2 * j + 1] = send_words[j] as u64;
    }
    let mut got = vec![0u64; 2 * n];
    world.all_to_all(&out, &mut got)?;
    let _recv_recs: Vec<usize> = (0..n).map(|i| got[2 * i] as usize).collect();
    let recv_words: Vec<usize> = (0..n).map(|i| got[2 * i + 1] as usize).collect();
    let mut in_words = vec![0u32; recv_words.iter().sum()];
    world.all_to_all_v(&words, &send_words, &mut in_words, &recv_words)?;
    let mut in_lens = vec![0u32; recv_words.iter().sum()];
    world.all_to_all_v(&lens, &send_recs, &mut in_lens, &recv_words)?;
    assert_eq!(in_words.len(), in_lens.len() + in_lens.iter().map(|&l| l as usize).sum::<usize>());
    Ok(())
}
