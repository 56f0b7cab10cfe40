//! The pr × pc process grid: rank = i·pc + j, a row communicator (the pc ranks of grid
//! row i, numbered by j) and a column communicator (the pr ranks of column j, by i).

use crate::config::GridBuild;
use dist_runtime::prelude::*;

dist_runtime::group!(pub Row);
dist_runtime::group!(pub Col);

pub struct ProcGrid {
    pub world: Comm<World>,
    pub row: Comm<Row>,
    pub col: Comm<Col>,
    pub pc: usize,
}

impl ProcGrid {
    pub fn new(world: &Comm<World>, pr: usize, pc: usize, build: GridBuild) -> dist_runtime::Result<ProcGrid> {
        let (i, j) = (world.rank() / pc, world.rank() % pc);
        let (col, row) = match build {
            GridBuild::Split => {
                let row = world.split::<Row>(i as u32, j as i64)?;
                let col = world.split::<Col>(j as u32, i as i64)?;
                (col, row)
            }
            GridBuild::Mesh => world.mesh2::<Col, Row>(pr, pc)?,
        };
        Ok(ProcGrid { world: world.clone(), row, col, pc })
    }

    /// (grid row, grid column) of this rank.
    pub fn coords(&self) -> (usize, usize) {
        (self.col.rank(), self.row.rank())
    }
}
