//! The ring: each rank passes the key/value block it holds to the next rank and takes
//! the previous rank's, so after `size` steps every block has visited every rank.

use std::ops::Range;

use dist_runtime::prelude::*;

use crate::tensor::{block_range, Mat};

const KEYS: Tag<f32> = Tag::new(11);
const VALUES: Tag<f32> = Tag::new(12);

/// A block of keys and values and the rank whose sequence positions they are.
pub struct KvBlock {
    pub owner: usize,
    pub k: Mat,
    pub v: Mat,
}

pub struct Ring {
    comm: Comm<World>,
    rank: usize,
    size: usize,
    next: usize,
    prev: usize,
    seq_len: usize,
    batched: bool,
}

impl Ring {
    pub fn new(comm: Comm<World>, seq_len: usize, batched: bool) -> Self {
        let (rank, size) = (comm.rank(), comm.size());
        let next = (rank + 1) % size;
        let prev = (rank + size - 1) % size;
        Ring { comm, rank, size, next, prev, seq_len, batched }
    }

    pub fn rank(&self) -> usize {
        self.rank
    }

    pub fn size(&self) -> usize {
        self.size
    }

    /// Sequence positions owned by rank `r`.
    pub fn rows_of(&self, r: usize) -> Range<usize> {
        block_range(self.seq_len, self.size, r)
    }

    fn max_rows(&self) -> usize {
        (0..self.size).map(|r| self.rows_of(r).len()).max().unwrap_or(0)
    }

    /// Everyone uses rank 0's seed, whatever their own command line said.
    pub fn agree_on_seed(&self, seed: u64) -> dist_runtime::Result<u64> {
        let mut buf = [seed];
        self.comm.broadcast(&mut buf, 0)?;
        Ok(buf[0])
    }

    /// Send `held` on to the next rank and return the block that comes from the
    /// previous one (which belongs to the rank before `held.owner`).
    pub fn rotate(&mut self, held: &KvBlock) -> dist_runtime::Result<KvBlock> {
        let owner = (held.owner + self.size - 1) % self.size;
        let rows = self.rows_of(owner).len();
        let mut k = Mat::zeros(rows, held.k.cols);
        let mut v = Mat::zeros(rows, held.v.cols);
        if self.batched {
            let (next, prev) = (self.next, self.prev);
            self.comm.batch(|b| {
                b.send(next, KEYS, &held.k.data);
                b.send(next, VALUES, &held.v.data);
                b.recv(prev, KEYS, &mut k.data);
                b.recv(prev, VALUES, &mut v.data);
            })?;
        } else {
            self.comm.sendrecv(self.next, KEYS, &held.k.data, self.prev, &mut k.data)?;
            self.comm.sendrecv(self.next, VALUES, &held.v.data, self.prev, &mut v.data)?;
        }
        Ok(KvBlock { owner, k, v })
    }

    /// Every rank's output rows, in sequence order, on every rank. Blocks are padded to
    /// the largest so that one fixed-size all_gather does it.
    pub fn gather_rows(&self, local: &Mat) -> dist_runtime::Result<Mat> {
        let cols = local.cols;
        let most = self.max_rows();
        let mut padded = local.data.clone();
        padded.resize(most * cols, 0.0);
        let mut all = vec![0.0f32; self.size * most * cols];
        self.comm.all_gather(&padded, &mut all)?;
        let data = (0..self.size)
            .flat_map(|r| {
                let n = self.rows_of(r).len() * cols;
                all[r * most * cols..r * most * cols + n].to_vec()
            })
            .collect();
        Ok(Mat { rows: self.seq_len, cols, data })
    }

    pub fn max_over_ranks(&self, x: f32) -> dist_runtime::Result<f32> {
        let mut buf = [x];
        self.comm.all_reduce(&mut buf, ReduceOp::Max)?;
        Ok(buf[0])
    }
}
