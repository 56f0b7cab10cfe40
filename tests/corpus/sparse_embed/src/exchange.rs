//! Moving ids, rows and gradients between requesters and owners.

use crate::cli::Mode;
use dist_runtime::prelude::*;
use std::collections::BTreeMap;

pub const IDS: Tag<u32> = Tag::new(1);
pub const ROWS: Tag<f32> = Tag::new(2);
pub const GRADS: Tag<f32> = Tag::new(3);

/// Who asked whom for what in one step.
pub struct Routing {
    /// Ids this rank asked of each owner, owners in rank order.
    pub asked: Vec<u32>,
    pub send_counts: Vec<usize>,
    /// Ids the other ranks asked of this one, grouped by requester in rank order.
    pub incoming: Vec<u32>,
    pub recv_counts: Vec<usize>,
}

pub struct Exchanger {
    comm: Comm<World>,
    mode: Mode,
}

fn split_counts<'a, T>(mut buf: &'a [T], counts: &[usize]) -> Vec<&'a [T]> {
    counts
        .iter()
        .map(|&c| {
            let (head, tail) = buf.split_at(c);
            buf = tail;
            head
        })
        .collect()
}

fn split_counts_mut<'a, T>(mut buf: &'a mut [T], counts: &[usize]) -> Vec<&'a mut [T]> {
    let mut parts = Vec::with_capacity(counts.len());
    for &c in counts {
        let (head, tail) = std::mem::take(&mut buf).split_at_mut(c);
        parts.push(head);
        buf = tail;
    }
    parts
}

fn scaled(counts: &[usize], k: usize) -> Vec<usize> {
    counts.iter().map(|c| c * k).collect()
}

impl Exchanger {
    pub fn new(comm: &Comm<World>, mode: Mode) -> Exchanger {
        Exchanger { comm: comm.clone(), mode }
    }

    /// Sends `send` (grouped by destination, `send_counts[j]` for rank j) and returns
    /// what arrives (grouped by source, `recv_counts[i]` from rank i).
    fn exchange<T: Element + Copy + Default>(
        &self,
        send: &[T],
        send_counts: &[usize],
        recv_counts: &[usize],
        tag: Tag<T>,
    ) -> dist_runtime::Result<Vec<T>> {
        let mut recv = vec![T::default(); recv_counts.iter().sum()];
        match self.mode {
            Mode::AllToAll => self.comm.all_to_all_v(send, send_counts, &mut recv, recv_counts)?,
            Mode::PointToPoint => {
                let me = self.comm.rank();
                let outgoing = split_counts(send, send_counts);
                let mut reqs = Vec::new();
                for (src, part) in split_counts_mut(&mut recv, recv_counts).into_iter().enumerate() {
                    if src == me {
                        part.copy_from_slice(outgoing[me]);
                    } else if !part.is_empty() {
                        reqs.push(self.comm.irecv(src, tag, part)?);
                    }
                }
                for (dst, part) in outgoing.iter().enumerate() {
                    if dst != me && !part.is_empty() {
                        reqs.push(self.comm.isend(dst, tag, *part)?);
                    }
                }
                dist_runtime::wait_all(reqs)?;
            }
        }
        Ok(recv)
    }

    /// Tells every owner how many ids this rank wants from it, then sends the ids.
    pub fn route(&self, outbox: &BTreeMap<usize, Vec<u32>>) -> dist_runtime::Result<Routing> {
        let n = self.comm.size();
        let send_counts: Vec<usize> = (0..n).map(|p| outbox.get(&p).map_or(0, Vec::len)).collect();
        let asked: Vec<u32> = outbox.values().flatten().copied().collect();
        let mine: Vec<u64> = send_counts.iter().map(|&c| c as u64).collect();
        let mut theirs = vec![0u64; n];
        self.comm.all_to_all(&mine, &mut theirs)?;
        let recv_counts: Vec<usize> = theirs.iter().map(|&c| c as usize).collect();
        let incoming = self.exchange(&asked, &send_counts, &recv_counts, IDS)?;
        Ok(Routing { asked, send_counts, incoming, recv_counts })
    }

    /// Owners answer with the rows asked of them; returns the rows this rank asked for,
    /// in the order of `routing.asked`.
    pub fn fetch_rows(&self, routing: &Routing, answer: &[f32], dim: usize) -> dist_runtime::Result<Vec<f32>> {
        self.exchange(answer, &scaled(&routing.recv_counts, dim), &scaled(&routing.send_counts, dim), ROWS)
    }

    /// Requesters send each row's gradient back to its owner; returns the gradients of
    /// `routing.incoming`, in that order.
    pub fn push_grads(&self, routing: &Routing, grads: &[f32], dim: usize) -> dist_runtime::Result<Vec<f32>> {
        self.exchange(grads, &scaled(&routing.send_counts, dim), &scaled(&routing.recv_counts, dim), GRADS)
    }

    /// The loss summed over every rank.
    pub fn total_loss(&self, local: f64) -> dist_runtime::Result<f64> {
        let mut x = [local];
        self.comm.all_reduce(&mut x, ReduceOp::Sum)?;
        Ok(x[0])
    }
}
