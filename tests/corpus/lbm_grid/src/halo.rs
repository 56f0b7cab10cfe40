//! Halo exchange in two phases: east/west along the row communicator (interior rows),
//! then north/south along the column communicator with whole rows, ghost columns
//! included, which fills the corner ghosts.

use crate::field::Field;
use crate::topology::Topology;
use dist_runtime::prelude::*;

const MOVING_EAST: Tag<f64> = Tag::new(1);
const MOVING_WEST: Tag<f64> = Tag::new(2);
const MOVING_NORTH: Tag<f64> = Tag::new(3);
const MOVING_SOUTH: Tag<f64> = Tag::new(4);

pub fn exchange(topo: &Topology, f: &mut Field) -> dist_runtime::Result<()> {
    let (lx, ly) = (f.lx, f.ly);

    // Phase 1: columns.
    let mut from_west = vec![0.0; ly];
    topo.row.sendrecv(topo.east(), MOVING_EAST, &f.column(lx), topo.west(), &mut from_west)?;
    let mut from_east = vec![0.0; ly];
    topo.row.sendrecv(topo.west(), MOVING_WEST, &f.column(1), topo.east(), &mut from_east)?;
    f.set_column(0, &from_west);
    f.set_column(lx + 1, &from_east);

    // Phase 2: rows with their ghost columns, so the corners come along.
    let mut from_south = vec![0.0; lx + 2];
    topo.col.sendrecv(topo.north(), MOVING_NORTH, &f.row(ly), topo.south(), &mut from_south)?;
    let mut from_north = vec![0.0; lx + 2];
    topo.col.sendrecv(topo.south(), MOVING_SOUTH, &f.row(1), topo.north(), &mut from_north)?;
    f.set_row(0, &from_south);
    f.set_row(ly + 1, &from_north);
    Ok(())
}
