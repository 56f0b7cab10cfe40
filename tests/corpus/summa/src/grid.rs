//! The pr × pc process grid and its row and column communicators.

use dist_runtime::prelude::*;

dist_runtime::group!(pub Row);
dist_runtime::group!(pub Col);

pub struct Grid {
    pub pr: usize,
    pub pc: usize,
    /// This rank's grid row and column: world rank = i·pc + j.
    pub i: usize,
    pub j: usize,
    /// The pc ranks of grid row i, numbered by j.
    pub row: Comm<Row>,
    /// The pr ranks of grid column j, numbered by i.
    pub col: Comm<Col>,
}

/// "RxC" → (R, C).
pub fn parse_shape(s: &str) -> Option<(usize, usize)> {
    let (r, c) = s.split_once(['x', 'X'])?;
    Some((r.trim().parse().ok()?, c.trim().parse().ok()?))
}

/// The most square factorisation pr × pc = n with pr ≥ pc (tall, as the matrices).
pub fn near_square(n: usize) -> (usize, usize) {
    let mut pc = (n as f64).sqrt().floor() as usize;
    while pc > 1 && n % pc != 0 {
        pc -= 1;
    }
    (n / pc.max(1), pc.max(1))
}

impl Grid {
    pub fn new(world: &Comm<World>, shape: Option<(usize, usize)>) -> dist_runtime::Result<Grid> {
        let n = world.size();
        let (pr, pc) = shape.unwrap_or_else(|| near_square(n));
        if pr * pc != n {
            return Err(dist_runtime::Error::Env(format!("a {pr}x{pc} grid needs {} ranks, not {n}", pr * pc)));
        }
        let (i, j) = (world.rank() / pc, world.rank() % pc);
        // MPI_Comm_split twice: same i → one row, same j → one column.
        let row = world.split::<Row>(i as u32, j as i64)?;
        let col = world.split::<Col>(j as u32, i as i64)?;
        debug_assert_eq!((row.rank(), col.rank()), (j, i));
        Ok(Grid { pr, pc, i, j, row, col })
    }
}
