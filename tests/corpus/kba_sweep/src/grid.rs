//! The 2-D process grid: world rank = jy * px + ix.

use dist_runtime::prelude::*;

use crate::config::ConfigError;

dist_runtime::group!(pub(crate) Row); // ranks sharing jy, numbered by ix
dist_runtime::group!(pub(crate) Col); // ranks sharing ix, numbered by jy

pub struct ProcGrid {
    pub world: Comm<World>,
    /// Along x: this rank's row of the grid (size px, rank ix).
    pub row: Comm<Row>,
    /// Along y: this rank's column of the grid (size py, rank jy).
    pub col: Comm<Col>,
    pub px: usize,
    pub py: usize,
    pub ix: usize,
    pub jy: usize,
}

impl ProcGrid {
    pub fn new(world: &Comm<World>, px: usize) -> Result<ProcGrid, Box<dyn std::error::Error>> {
        let n = world.size();
        if px == 0 || n % px != 0 {
            return Err(Box::new(ConfigError(format!("--px {px} does not divide the {n} ranks"))));
        }
        let py = n / px;
        // mesh2(a, b): rank = i * b + j, first the column communicator (size a), then
        // the row communicator (size b).
        let (col, row) = world.mesh2::<Col, Row>(py, px)?;
        let grid = ProcGrid { world: world.clone(), ix: row.rank(), jy: col.rank(), row, col, px, py };
        debug_assert_eq!(grid.jy * px + grid.ix, world.rank());
        Ok(grid)
    }

    /// Row-communicator rank of the neighbour at smaller x.
    pub fn west(&self) -> Option<usize> {
        if self.ix > 0 { Some(self.ix - 1) } else { None }
    }

    /// Row-communicator rank of the neighbour at larger x.
    pub fn east(&self) -> Option<usize> {
        if self.ix + 1 < self.px { Some(self.ix + 1) } else { None }
    }

    /// Column-communicator rank of the neighbour at smaller y.
    pub fn south(&self) -> Option<usize> {
        if self.jy > 0 { Some(self.jy - 1) } else { None }
    }

    /// Column-communicator rank of the neighbour at larger y.
    pub fn north(&self) -> Option<usize> {
        if self.jy + 1 < self.py { Some(self.jy + 1) } else { None }
    }

}
