//! Megatron-style pipeline communication helpers over the stage communicator.

use crate::topology::Topology;
use dist_runtime::prelude::*;

const ACT: Tag<f64> = Tag::new(1);
const GRAD: Tag<f64> = Tag::new(2);

/// The activation from the previous stage.
pub fn recv_forward(t: &Topology, len: usize) -> dist_runtime::Result<Vec<f64>> {
    let mut x = vec![0.0; len];
    t.pp.recv(t.stage() - 1, ACT, &mut x)?;
    Ok(x)
}

pub fn send_forward(t: &Topology, y: &[f64]) -> dist_runtime::Result<()> {
    t.pp.send(t.stage() + 1, ACT, y)
}

/// The gradient from the next stage.
pub fn recv_backward(t: &Topology, len: usize) -> dist_runtime::Result<Vec<f64>> {
    let mut g = vec![0.0; len];
    t.pp.recv(t.stage() + 1, GRAD, &mut g)?;
    Ok(g)
}

pub fn send_backward(t: &Topology, dx: &[f64]) -> dist_runtime::Result<()> {
    t.pp.send(t.stage() - 1, GRAD, dx)
}

/// Sends this micro-batch's output forward and receives the gradient of an earlier
/// one, posted together so neighbouring stages cannot block each other.
pub fn send_forward_recv_backward(t: &Topology, y: &[f64]) -> dist_runtime::Result<Vec<f64>> {
    let mut g = vec![0.0; y.len()];
    let next = t.stage() + 1;
    t.pp.batch(|b| {
        b.send(next, ACT, y);
        b.recv(next, GRAD, &mut g);
    })?;
    Ok(g)
}

/// Sends a gradient back and receives the next micro-batch's input, together.
pub fn send_backward_recv_forward(t: &Topology, dx: &[f64]) -> dist_runtime::Result<Vec<f64>> {
    let mut x = vec![0.0; dx.len()];
    let prev = t.stage() - 1;
    t.pp.batch(|b| {
        b.send(prev, GRAD, dx);
        b.recv(prev, ACT, &mut x);
    })?;
    Ok(x)
}
