//! What travels between the server and the workers.

use dist_runtime::prelude::*;

/// The rank that owns the parameters.
pub const SERVER: usize = 0;

/// Worker → server: the shard's summed gradient, then its summed loss and row count.
pub const GRAD: Tag<f64> = Tag::new(1);
/// Server → worker: the parameters after the round's update.
pub const PARAMS: Tag<f64> = Tag::new(2);

/// Length of a gradient message for `n_params` parameters.
pub fn grad_msg_len(n_params: usize) -> usize {
    n_params + 2
}

pub fn pack_grad(grad: &[f64], loss: f64, rows: usize) -> Vec<f64> {
    let mut msg = grad.to_vec();
    msg.push(loss);
    msg.push(rows as f64);
    msg
}

/// (gradient, loss, rows) from a gradient message.
pub fn unpack_grad(msg: &[f64]) -> (&[f64], f64, usize) {
    let n = msg.len() - 2;
    (&msg[..n], msg[n], msg[n + 1] as usize)
}
