//! Hash repartitioning: every row goes to the rank that owns its key. Counts first
//! (all_to_all), then each column (all_to_all_v).

use crate::table::{owner, Rows};
use dist_runtime::prelude::*;

pub struct Shuffler {
    comm: Comm<World>,
    /// Rows sent and received over the run, for the report.
    pub sent: usize,
    pub received: usize,
}

impl Shuffler {
    pub fn new(comm: &Comm<World>) -> Shuffler {
        Shuffler { comm: comm.clone(), sent: 0, received: 0 }
    }

    /// Orders `rows` by destination rank; returns the reordered rows and the count per rank.
    fn bucket(&self, rows: &Rows) -> (Rows, Vec<usize>) {
        let n = self.comm.size();
        let dest: Vec<usize> = rows.keys.iter().map(|&k| owner(k, n)).collect();
        let mut counts = vec![0usize; n];
        dest.iter().for_each(|&d| counts[d] += 1);
        let mut order: Vec<usize> = (0..rows.len()).collect();
        order.sort_by_key(|&i| dest[i]); // stable: keeps each bucket in input order
        let mut out = Rows::with_columns(rows.cols.len());
        for i in order {
            let (k, vals) = rows.row(i);
            out.push(k, &vals);
        }
        (out, counts)
    }

    /// Exchanges the counts: how many rows each rank will send me.
    fn exchange_counts(&self, send_counts: &[usize]) -> dist_runtime::Result<Vec<usize>> {
        let send: Vec<u64> = send_counts.iter().map(|&c| c as u64).collect();
        let mut recv = vec![0u64; self.comm.size()];
        self.comm.all_to_all(&send, &mut recv)?;
        Ok(recv.into_iter().map(|c| c as usize).collect())
    }

    /// Moves one column given the counts.
    fn exchange_column(&self, col: &[u64], send_counts: &[usize], recv_counts: &[usize]) -> dist_runtime::Result<Vec<u64>> {
        let mut out = vec![0u64; recv_counts.iter().sum()];
        self.comm.all_to_all_v(col, send_counts, &mut out, recv_counts)?;
        Ok(out)
    }

    /// Repartitions `rows` by key hash. Collective.
    pub fn shuffle(&mut self, rows: &Rows) -> dist_runtime::Result<Rows> {
        let (bucketed, send_counts) = self.bucket(rows);
        let recv_counts = self.exchange_counts(&send_counts)?;
        let keys = self.exchange_column(&bucketed.keys, &send_counts, &recv_counts)?;
        let cols = bucketed
            .cols
            .iter()
            .map(|c| self.exchange_column(c, &send_counts, &recv_counts))
            .collect::<dist_runtime::Result<Vec<_>>>()?;
        self.sent += bucketed.len();
        self.received += keys.len();
        Ok(Rows { keys, cols })
    }
}
