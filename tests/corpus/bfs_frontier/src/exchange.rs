//! The frontier exchange: vertex ids bucketed by owner go to their owners with
//! all_to_all_v, the per-pair counts agreed first with an all_to_all.

use dist_runtime::prelude::*;

pub struct FrontierExchange {
    comm: Comm<World>,
    /// Vertex ids this rank has sent and received so far.
    pub sent: usize,
    pub received: usize,
}

impl FrontierExchange {
    pub fn new(comm: Comm<World>) -> Self {
        FrontierExchange { comm, sent: 0, received: 0 }
    }

    /// Sends `outgoing[j]` to rank j; returns what every rank sent here, in rank order.
    pub fn exchange(&mut self, outgoing: &[Vec<u64>]) -> dist_runtime::Result<Vec<u64>> {
        let send_counts: Vec<u64> = outgoing.iter().map(|b| b.len() as u64).collect();
        let mut recv_counts = vec![0u64; self.comm.size()];
        self.comm.all_to_all(&send_counts, &mut recv_counts)?;

        let send: Vec<u64> = outgoing.concat();
        let sc: Vec<usize> = send_counts.iter().map(|&c| c as usize).collect();
        let rc: Vec<usize> = recv_counts.iter().map(|&c| c as usize).collect();
        let mut recv = vec![0u64; rc.iter().sum()];
        self.comm.all_to_all_v(&send, &sc, &mut recv, &rc)?;
        self.sent += send.len();
        self.received += recv.len();
        Ok(recv)
    }
}
