//! The end-of-run checkpoint: the whole grid gathered on rank 0, optionally written out.

use crate::decomp::Block;
use dist_runtime::prelude::*;
use std::io::Write;

pub const ROOT: usize = 0;

/// Gathers every rank's owned rows to `ROOT`, in rank order (= global row order).
/// Returns the full grid on the root and `None` elsewhere.
pub fn gather_grid(comm: &Comm<World>, owned: &[f64], rows: usize, cols: usize) -> dist_runtime::Result<Option<Vec<f64>>> {
    let counts = Block::counts(rows, comm.size(), cols);
    if comm.rank() == ROOT {
        let mut grid = vec![0.0; rows * cols];
        comm.gather_v(owned, Some(&mut grid[..]), &counts, ROOT)?;
        Ok(Some(grid))
    } else {
        comm.gather_v(owned, None, &counts, ROOT)?;
        Ok(None)
    }
}

/// Writes the grid as text: a header line, then one line per row.
pub fn write(path: &str, grid: &[f64], cols: usize) -> std::io::Result<()> {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    writeln!(f, "# {} x {}", grid.len() / cols, cols)?;
    for row in grid.chunks(cols) {
        let line: Vec<String> = row.iter().map(|v| format!("{v:.6}")).collect();
        writeln!(f, "{}", line.join(" "))?;
    }
    f.flush()
}
