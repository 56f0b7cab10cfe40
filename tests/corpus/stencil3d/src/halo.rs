//! Face exchange with the four neighbours of the (x, y) process grid.

use crate::grid::{Axis, Decomp, Field};
use dist_runtime::prelude::*;

dist_runtime::group!(pub XDir);
dist_runtime::group!(pub YDir);
/// Tags name the direction a face travels in.
const TO_LOW: Tag<f64> = Tag::new(11);
const TO_HIGH: Tag<f64> = Tag::new(12);

/// Send and receive buffers of the faces, in the order x-low, x-high, y-low, y-high.
pub struct HaloBuffers {
    send: [Vec<f64>; 4],
    recv: [Vec<f64>; 4],
}

impl HaloBuffers {
    pub fn new(d: &Decomp) -> HaloBuffers {
        let (fx, fy) = (d.ly * d.nz, d.lx * d.nz);
        let sized = || [vec![0.0; fx], vec![0.0; fx], vec![0.0; fy], vec![0.0; fy]];
        HaloBuffers { send: sized(), recv: sized() }
    }

    pub fn pack(&mut self, u: &Field) {
        let [lo_x, hi_x, lo_y, hi_y] = &mut self.send;
        for (axis, at, buf) in [(Axis::X, 1, lo_x), (Axis::X, u.lx, hi_x), (Axis::Y, 1, lo_y), (Axis::Y, u.ly, hi_y)] {
            u.pack(axis, at, buf);
        }
    }

    /// Copies the received faces into the halo of `u` (only where there is a neighbour).
    pub fn unpack(&self, u: &mut Field, d: &Decomp) {
        let [lo_x, hi_x, lo_y, hi_y] = &self.recv;
        let faces = [(d.left(), Axis::X, 0, lo_x), (d.right(), Axis::X, u.lx + 1, hi_x), (d.down(), Axis::Y, 0, lo_y), (d.up(), Axis::Y, u.ly + 1, hi_y)];
        for (_, axis, at, buf) in faces.into_iter().filter(|f| f.0.is_some()) {
            u.unpack(axis, at, buf);
        }
    }
}

/// Posts every face's receive and send; the buffers stay borrowed until the wait.
pub fn post<'a>(xc: &'a Comm<XDir>, yc: &'a Comm<YDir>, d: &Decomp, b: &'a mut HaloBuffers) -> dist_runtime::Result<Vec<Request<'a>>> {
    let [send_lo_x, send_hi_x, send_lo_y, send_hi_y] = &b.send;
    let [recv_lo_x, recv_hi_x, recv_lo_y, recv_hi_y] = &mut b.recv;
    let mut reqs = Vec::with_capacity(8);
    if let Some(lo) = d.left() {
        reqs.push(xc.irecv(lo, TO_HIGH, recv_lo_x)?);
        reqs.push(xc.isend(lo, TO_LOW, send_lo_x)?);
    }
    if let Some(hi) = d.right() {
        reqs.push(xc.irecv(hi, TO_LOW, recv_hi_x)?);
        reqs.push(xc.isend(hi, TO_HIGH, send_hi_x)?);
    }
    if let Some(lo) = d.down() {
        reqs.push(yc.irecv(lo, TO_HIGH, recv_lo_y)?);
        reqs.push(yc.isend(lo, TO_LOW, send_lo_y)?);
    }
    if let Some(hi) = d.up() {
        reqs.push(yc.irecv(hi, TO_LOW, recv_hi_y)?);
        reqs.push(yc.isend(hi, TO_HIGH, send_hi_y)?);
    }
    Ok(reqs)
}
