//! Moves per-owner byte batches between ranks with `all_to_all_v`.

use dist_runtime::prelude::*;

pub struct Router { world: Comm<World>, pub bytes_sent: u64, pub exchanges: usize }

fn split_by(flat: Vec<u8>, counts: &[usize]) -> Vec<Vec<u8>> {
    let mut rest = &flat[..];
    counts
        .iter()
        .map(|&c| {
            let (head, tail) = rest.split_at(c);
            rest = tail;
            head.to_vec()
        })
        .collect()
}

impl Router {
    pub fn new(world: &Comm<World>) -> Router {
        Router { world: world.clone(), bytes_sent: 0, exchanges: 0 }
    }

    /// Sends `outgoing[j]` to rank j when the receivers do not know the sizes yet:
    /// the counts go first.
    pub fn exchange(&mut self, outgoing: &[Vec<u8>]) -> dist_runtime::Result<Vec<Vec<u8>>> {
        let counts_out: Vec<u64> = outgoing.iter().map(|b| b.len() as u64).collect();
        let mut counts_in = vec![0u64; self.world.size()];
        self.world.all_to_all(&counts_out, &mut counts_in)?;
        let recv_counts: Vec<usize> = counts_in.iter().map(|&c| c as usize).collect();
        self.exchange_sized(outgoing, &recv_counts)
    }

    /// As `exchange` when this rank already knows how much each rank sends it.
    pub fn exchange_sized(&mut self, outgoing: &[Vec<u8>], recv_counts: &[usize]) -> dist_runtime::Result<Vec<Vec<u8>>> {
        let send_counts: Vec<usize> = outgoing.iter().map(Vec::len).collect();
        let flat = outgoing.concat();
        let mut incoming = vec![0u8; recv_counts.iter().sum()];
        self.world.all_to_all_v(&flat, &send_counts, &mut incoming, recv_counts)?;
        self.bytes_sent += flat.len() as u64;
        self.exchanges += 1;
        Ok(split_by(incoming, recv_counts))
    }
}
