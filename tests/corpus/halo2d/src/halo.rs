//! Halo exchange with the four grid neighbours. A tag names the direction a message
//! travels, so a rank receiving from its north neighbour waits for `SOUTHWARD`.

use dist_runtime::prelude::*;

use crate::field::Field;
use crate::grid::Neighbours;

const NORTHWARD: Tag<f64> = Tag::new(21);
const SOUTHWARD: Tag<f64> = Tag::new(22);
const WESTWARD: Tag<f64> = Tag::new(23);
const EASTWARD: Tag<f64> = Tag::new(24);

pub struct Exchanger {
    comm: Comm<World>,
    north: Option<usize>,
    south: Option<usize>,
    west: Option<usize>,
    east: Option<usize>,
    /// Messages sent so far, for the report.
    pub messages: usize,
}

impl Exchanger {
    pub fn new(comm: Comm<World>, nbr: Neighbours) -> Self {
        Exchanger { comm, north: nbr.north, south: nbr.south, west: nbr.west, east: nbr.east, messages: 0 }
    }

    /// Fill `field`'s ghost cells from the neighbours' edges, sending ours to them.
    pub fn exchange(&mut self, field: &mut Field) -> dist_runtime::Result<()> {
        let (w, h) = (field.w, field.h);
        let top = field.row(0);
        let bottom = field.row(h - 1);
        let left = field.col(0);
        let right = field.col(w - 1);
        let (mut from_n, mut from_s) = (vec![0.0; w], vec![0.0; w]);
        let (mut from_w, mut from_e) = (vec![0.0; h], vec![0.0; h]);

        let mut reqs = Vec::with_capacity(8);
        if let Some(p) = self.north {
            reqs.push(self.comm.irecv(p, SOUTHWARD, &mut from_n)?);
            reqs.push(self.comm.isend(p, NORTHWARD, &top)?);
        }
        if let Some(p) = self.south {
            reqs.push(self.comm.irecv(p, NORTHWARD, &mut from_s)?);
            reqs.push(self.comm.isend(p, SOUTHWARD, &bottom)?);
        }
        if let Some(p) = self.west {
            reqs.push(self.comm.irecv(p, EASTWARD, &mut from_w)?);
            reqs.push(self.comm.isend(p, WESTWARD, &left)?);
        }
        if let Some(p) = self.east {
            reqs.push(self.comm.irecv(p, WESTWARD, &mut from_e)?);
            reqs.push(self.comm.isend(p, EASTWARD, &right)?);
        }
        self.messages += reqs.len() / 2;
        dist_runtime::wait_all(reqs)?;

        if self.north.is_some() {
            field.set_ghost_row(true, &from_n);
        }
        if self.south.is_some() {
            field.set_ghost_row(false, &from_s);
        }
        if self.west.is_some() {
            field.set_ghost_col(true, &from_w);
        }
        if self.east.is_some() {
            field.set_ghost_col(false, &from_e);
        }
        Ok(())
    }

    /// Global residual: the square root of the summed squared updates.
    pub fn residual(&self, local_sq: f64) -> dist_runtime::Result<f64> {
        let mut buf = [local_sq];
        self.comm.all_reduce(&mut buf, ReduceOp::Sum)?;
        Ok(buf[0].sqrt())
    }
}
