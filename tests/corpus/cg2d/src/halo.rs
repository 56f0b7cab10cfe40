//! Ghost-layer exchange in both directions of the process grid.

use crate::config::HaloMode;
use crate::decomp::Decomp;
use dist_runtime::prelude::*;

const EAST_WEST: Tag<f64> = Tag::new(11);
const NORTH_SOUTH: Tag<f64> = Tag::new(12);

/// Edge strips of a padded array.
struct Edges {
    left: Vec<f64>,
    right: Vec<f64>,
    down: Vec<f64>,
    up: Vec<f64>,
}

fn edges(d: &Decomp, u: &[f64]) -> Edges {
    Edges {
        left: (0..d.lny).map(|j| u[d.idx(0, j)]).collect(),
        right: (0..d.lny).map(|j| u[d.idx(d.lnx - 1, j)]).collect(),
        down: (0..d.lnx).map(|i| u[d.idx(i, 0)]).collect(),
        up: (0..d.lnx).map(|i| u[d.idx(i, d.lny - 1)]).collect(),
    }
}

/// Ghost strips received from the neighbours (zero where there is none: Dirichlet).
struct Ghosts {
    left: Vec<f64>,
    right: Vec<f64>,
    down: Vec<f64>,
    up: Vec<f64>,
}

impl Ghosts {
    fn zeros(d: &Decomp) -> Ghosts {
        Ghosts { left: vec![0.0; d.lny], right: vec![0.0; d.lny], down: vec![0.0; d.lnx], up: vec![0.0; d.lnx] }
    }

    fn store(&self, d: &Decomp, u: &mut [f64]) {
        let w = d.lnx + 2;
        for j in 0..d.lny {
            u[(j + 1) * w] = self.left[j];
            u[(j + 1) * w + d.lnx + 1] = self.right[j];
        }
        for i in 0..d.lnx {
            u[i + 1] = self.down[i];
            u[(d.lny + 1) * w + i + 1] = self.up[i];
        }
    }
}

/// Fills the ghost layer of `u` from the four neighbours.
pub fn exchange(d: &Decomp, mode: HaloMode, u: &mut [f64]) -> dist_runtime::Result<()> {
    let e = edges(d, u);
    let mut g = Ghosts::zeros(d);
    match mode {
        HaloMode::Batch => batch_exchange(d, &e, &mut g)?,
        HaloMode::Ordered => {
            ordered_axis(&d.row, d.ix, d.px, EAST_WEST, (&e.left, &e.right), (&mut g.left, &mut g.right))?;
            ordered_axis(&d.col, d.iy, d.py, NORTH_SOUTH, (&e.down, &e.up), (&mut g.down, &mut g.up))?;
        }
    }
    g.store(d, u);
    Ok(())
}

fn batch_exchange(d: &Decomp, e: &Edges, g: &mut Ghosts) -> dist_runtime::Result<()> {
    let (ix, iy) = (d.ix, d.iy);
    d.row.batch(|b| {
        if d.has_left() {
            b.send(ix - 1, EAST_WEST, &e.left);
            b.recv(ix - 1, EAST_WEST, &mut g.left);
        }
        if d.has_right() {
            b.send(ix + 1, EAST_WEST, &e.right);
            b.recv(ix + 1, EAST_WEST, &mut g.right);
        }
    })?;
    d.col.batch(|b| {
        if d.has_down() {
            b.send(iy - 1, NORTH_SOUTH, &e.down);
            b.recv(iy - 1, NORTH_SOUTH, &mut g.down);
        }
        if d.has_up() {
            b.send(iy + 1, NORTH_SOUTH, &e.up);
            b.recv(iy + 1, NORTH_SOUTH, &mut g.up);
        }
    })?;
    Ok(())
}

/// Blocking exchange along one axis of the grid: even coordinates send first, odd ones
/// receive first, so every send meets a posted receive.
fn ordered_axis<G: Group>(
    comm: &Comm<G>,
    me: usize,
    len: usize,
    tag: Tag<f64>,
    (low, high): (&Vec<f64>, &Vec<f64>),
    (ghost_low, ghost_high): (&mut Vec<f64>, &mut Vec<f64>),
) -> dist_runtime::Result<()> {
    let has_low = me > 0;
    let has_high = me + 1 < len;
    if me % 2 == 0 {
        if has_high {
            comm.send(me + 1, tag, high)?;
            comm.recv(me + 1, tag, ghost_high)?;
        }
        if has_low {
            comm.send(me - 1, tag, low)?;
            comm.recv(me - 1, tag, ghost_low)?;
        }
    } else {
        if has_low {
            comm.recv(me - 1, tag, ghost_low)?;
            comm.send(me - 1, tag, low)?;
        }
        if has_high {
            comm.recv(me + 1, tag, ghost_high)?;
            comm.send(me + 1, tag, high)?;
        }
    }
    Ok(())
}
