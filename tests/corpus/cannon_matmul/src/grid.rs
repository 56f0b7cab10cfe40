//! The q × q process grid, q = floor(sqrt(p)); the other ranks sit out.

use dist_runtime::prelude::*;

dist_runtime::group!(pub Active);
dist_runtime::group!(pub Row);
dist_runtime::group!(pub Col);

pub struct Grid {
    pub q: usize,
    pub i: usize,
    pub j: usize,
    pub all: Comm<Active>,
    /// Ranks of grid row i, numbered by column.
    pub row: Comm<Row>,
    /// Ranks of grid column j, numbered by row.
    pub col: Comm<Col>,
}

pub fn side(p: usize) -> usize {
    let mut q = (p as f64).sqrt() as usize;
    while (q + 1) * (q + 1) <= p {
        q += 1;
    }
    while q * q > p {
        q -= 1;
    }
    q
}

impl Grid {
    /// Collective over the world: every rank calls it; ranks past q² get `None`.
    pub fn build(world: &Comm<World>) -> dist_runtime::Result<Option<Grid>> {
        let q = side(world.size());
        let inside = world.rank() < q * q;
        let all = world.split::<Active>(u32::from(!inside), world.rank() as i64)?;
        if !inside {
            return Ok(None);
        }
        let (col, row) = all.mesh2::<Col, Row>(q, q)?;
        let (i, j) = (all.rank() / q, all.rank() % q);
        Ok(Some(Grid { q, i, j, all, row, col }))
    }
}
