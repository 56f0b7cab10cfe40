//! Point-to-point helpers between neighbouring stages.

use dist_runtime::prelude::*;

pub const ACT: Tag<f64> = Tag::new(21);
pub const GRAD: Tag<f64> = Tag::new(22);
pub const LOSS_LOG: Tag<f64> = Tag::new(23);
pub const CKPT: Tag<f64> = Tag::new(24);

pub fn send_forward(world: &Comm<World>, stage: usize, act: &[f64]) -> dist_runtime::Result<()> {
    world.send(stage + 1, ACT, act)
}

pub fn recv_forward(world: &Comm<World>, stage: usize, buf: &mut [f64]) -> dist_runtime::Result<()> {
    world.recv(stage - 1, ACT, buf)
}

pub fn send_backward(world: &Comm<World>, stage: usize, grad: &[f64]) -> dist_runtime::Result<()> {
    world.send(stage - 1, GRAD, grad)
}

pub fn recv_backward(world: &Comm<World>, stage: usize, buf: &mut [f64]) -> dist_runtime::Result<()> {
    world.recv(stage + 1, GRAD, buf)
}

/// Post a send and a receive with one peer together and wait for both: the two
/// neighbours in a 1F1B slot each send before they can receive.
pub fn exchange(
    world: &Comm<World>,
    peer: usize,
    (send_tag, out): (Tag<f64>, &[f64]),
    (recv_tag, inp): (Tag<f64>, &mut [f64]),
) -> dist_runtime::Result<()> {
    let reqs = vec![world.isend(peer, send_tag, out)?, world.irecv(peer, recv_tag, inp)?];
    dist_runtime::wait_all(reqs)?;
    Ok(())
}
