//! Process groups of a pp × dp × tp mesh and the communication helpers the trainer
//! calls: activations/gradients between pipeline stages, the tensor-parallel sum of
//! partial products, and the data-parallel gradient average.

use dist_runtime::prelude::*;

dist_runtime::group!(pub Pp);
dist_runtime::group!(pub Dp);
dist_runtime::group!(pub Tp);

pub const ACT: Tag<f32> = Tag::new(11);
pub const GRAD: Tag<f32> = Tag::new(12);

pub struct ParallelState {
    pub pp: Comm<Pp>,
    pub dp: Comm<Dp>,
    pub tp: Comm<Tp>,
}

impl ParallelState {
    /// torch's `init_device_mesh(("pp", "dp", "tp"))`: tp ranks are contiguous.
    pub fn new(world: &Comm<World>, tp: usize, pp: usize) -> dist_runtime::Result<Self> {
        let dp = world.size() / (tp * pp);
        let (pp, dp, tp) = world.mesh::<(Pp, Dp, Tp)>([pp, dp, tp])?;
        Ok(ParallelState { pp, dp, tp })
    }

    pub fn stage(&self) -> usize {
        self.pp.rank()
    }

    pub fn is_first_stage(&self) -> bool {
        self.pp.rank() == 0
    }

    pub fn is_last_stage(&self) -> bool {
        self.pp.rank() + 1 == self.pp.size()
    }

    /// This stage's input activations, from the previous stage.
    pub fn recv_activation(&self, buf: &mut [f32]) -> dist_runtime::Result<()> {
        self.pp.recv(self.stage() - 1, ACT, buf)
    }

    pub fn send_activation(&self, act: &[f32]) -> dist_runtime::Result<()> {
        if !self.is_last_stage() {
            self.pp.send(self.stage() + 1, ACT, act)?;
        }
        Ok(())
    }

    /// dL/d(output) of this stage, from the next stage.
    pub fn recv_grad(&self, buf: &mut [f32]) -> dist_runtime::Result<()> {
        self.pp.recv(self.stage() + 1, GRAD, buf)
    }

    pub fn send_grad(&self, grad: &[f32]) -> dist_runtime::Result<()> {
        if !self.is_first_stage() {
            self.pp.send(self.stage() - 1, GRAD, grad)?;
        }
        Ok(())
    }
}

/// Row-parallel linear: every tp rank holds a partial product; sum them.
pub fn tp_sum_partials(tp: &Comm<Tp>, y: &mut [f32]) -> dist_runtime::Result<()> {
    if tp.size() > 1 {
        tp.all_reduce(y, ReduceOp::Sum)?;
    }
    Ok(())
}

/// Average the gradients of this rank's shards over the data-parallel replicas, as one
/// flat bucket.
pub fn dp_average(dp: &Comm<Dp>, grads: &mut [Vec<f32>]) -> dist_runtime::Result<()> {
    let mut bucket: Vec<f32> = grads.iter().flatten().copied().collect();
    dp.all_reduce(&mut bucket, ReduceOp::Avg)?;
    let mut rest = &bucket[..];
    for g in grads.iter_mut() {
        let (head, tail) = rest.split_at(g.len());
        g.copy_from_slice(head);
        rest = tail;
    }
    Ok(())
}

/// ‖grad‖ over the whole model: shards are disjoint across tp and pp, equal across dp.
pub fn global_grad_norm(ps: &ParallelState, grads: &[Vec<f32>]) -> dist_runtime::Result<f32> {
    let mut sq = [grads.iter().flatten().map(|g| g * g).sum::<f32>()];
    ps.tp.all_reduce(&mut sq, ReduceOp::Sum)?;
    ps.pp.all_reduce(&mut sq, ReduceOp::Sum)?;
    Ok(sq[0].sqrt())
}

/// The step's loss is known on the last stage; every rank gets the dp-mean.
pub fn share_loss(ps: &ParallelState, local: f32) -> dist_runtime::Result<f32> {
    let mut buf = vec![local];
    if ps.is_last_stage() {
        ps.dp.all_reduce(&mut buf, ReduceOp::Avg)?;
    }
    ps.pp.broadcast(&mut buf, ps.pp.size() - 1)?;
    Ok(buf[0])
}
