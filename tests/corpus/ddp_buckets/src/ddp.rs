//! DDP-style gradient reducer: parameter tensors grouped into buckets in reverse order
//! (the order backward produces them), each bucket's all_reduce launched as soon as its
//! last tensor is ready, all of them waited before the optimizer runs.

use dist_runtime::prelude::*;

use crate::model::{Mlp, Tape};

pub struct Ddp {
    comm: Comm<World>,
    op: ReduceOp,
    /// Tensor indices of each bucket, in launch order.
    plan: Vec<Vec<usize>>,
    /// One flat staging buffer per bucket.
    flats: Vec<Vec<f64>>,
}

/// Groups tensors (last first) into buckets of at most `cap` elements; a tensor larger
/// than the cap gets a bucket of its own.
pub fn plan_buckets(shapes: &[usize], cap: usize) -> Vec<Vec<usize>> {
    let mut plan: Vec<Vec<usize>> = Vec::new();
    let mut used = 0;
    for t in (0..shapes.len()).rev() {
        match plan.last_mut() {
            Some(bucket) if used + shapes[t] <= cap => bucket.push(t),
            _ => {
                plan.push(vec![t]);
                used = 0;
            }
        }
        used += shapes[t];
    }
    plan
}

fn pack(tensors: &[usize], grads: &[Vec<f64>], flat: &mut Vec<f64>) {
    flat.clear();
    for &t in tensors {
        flat.extend_from_slice(&grads[t]);
    }
}

fn unpack(tensors: &[usize], flat: &[f64], grads: &mut [Vec<f64>]) {
    let mut off = 0;
    for &t in tensors {
        let len = grads[t].len();
        grads[t].copy_from_slice(&flat[off..off + len]);
        off += len;
    }
}

impl Ddp {
    pub fn new(comm: Comm<World>, shapes: &[usize], bucket_kb: usize, op: ReduceOp) -> Ddp {
        let cap = (bucket_kb * 1024 / std::mem::size_of::<f64>()).max(1);
        let plan = plan_buckets(shapes, cap);
        let flats = plan.iter().map(|b| Vec::with_capacity(b.iter().map(|&t| shapes[t]).sum())).collect();
        Ddp { comm, op, plan, flats }
    }

    pub fn num_buckets(&self) -> usize {
        self.plan.len()
    }

    /// The last micro-step's backward pass: back-propagates layer by layer and starts
    /// each bucket's sum as soon as backward has produced all of its tensors; on return
    /// `grads` holds the sums over every rank.
    pub fn backward_sync(&mut self, model: &Mlp, tape: &Tape, dy: Vec<f64>, grads: &mut [Vec<f64>]) -> dist_runtime::Result<()> {
        let Ddp { comm, op, plan, flats } = self;
        let mut ready = vec![false; grads.len()];
        let mut free: &mut [Vec<f64>] = &mut flats[..];
        let mut pending: Vec<Request> = Vec::with_capacity(plan.len());
        let mut next = 0;
        let mut delta = dy;
        for l in (0..model.num_layers()).rev() {
            delta = model.backward_layer(l, tape, &delta, grads);
            ready[2 * l] = true;
            ready[2 * l + 1] = true;
            while next < plan.len() && plan[next].iter().all(|&t| ready[t]) {
                let (flat, rest) = std::mem::take(&mut free).split_first_mut().expect("a buffer per bucket");
                pack(&plan[next], grads, flat);
                pending.push(comm.all_reduce_async(flat, *op)?);
                free = rest;
                next += 1;
            }
        }
        dist_runtime::wait_all(pending)?;
        for (tensors, flat) in plan.iter().zip(flats.iter()) {
            unpack(tensors, flat, grads);
        }
        Ok(())
    }
}
