//! SUMMA (van de Geijn & Watts): C = A·B on a pr × pc grid. At each step the grid column
//! owning the next panel of A's columns broadcasts it along the rows, and the grid row
//! owning the matching rows of B broadcasts them along the columns.

use dist_runtime::prelude::*;

use crate::grid::Grid;
use crate::matrix::{a_entry, b_entry, block_range, gemm_acc, owner, Block};

const ROW_PART: Tag<f64> = Tag::new(21);
const STRIP: Tag<f64> = Tag::new(22);

#[derive(Clone, Copy, Debug)]
pub struct Dims {
    pub m: usize,
    pub n: usize,
    pub k: usize,
}

/// This rank's blocks: A (rows of block i, columns of block j of K), B (rows of block i
/// of K, columns of block j).
pub struct Local {
    pub a: Block,
    pub b: Block,
}

impl Local {
    pub fn new(grid: &Grid, d: Dims) -> Local {
        let rows = block_range(d.m, grid.pr, grid.i);
        let cols = block_range(d.n, grid.pc, grid.j);
        let a = Block::from_fn(rows, block_range(d.k, grid.pc, grid.j), a_entry);
        let b = Block::from_fn(block_range(d.k, grid.pr, grid.i), cols, b_entry);
        Local { a, b }
    }
}

/// This rank's block of C and the number of panel steps.
pub fn summa(grid: &Grid, d: Dims, local: &Local, panel: usize) -> dist_runtime::Result<(Block, usize)> {
    let (lm, ln) = (local.a.rows, local.b.cols);
    let mut c = Block::zeros(lm, ln);
    let (mut k, mut steps) = (0, 0);
    while k < d.k {
        // A[:, k] lives in grid column a_owner, B[k, :] in grid row b_owner; a panel
        // never crosses either owner's block.
        let a_owner = owner(d.k, grid.pc, k);
        let (a_lo, a_hi) = block_range(d.k, grid.pc, a_owner);
        let b_owner = owner(d.k, grid.pr, k);
        let (b_lo, b_hi) = block_range(d.k, grid.pr, b_owner);
        let w = panel.min(a_hi - k).min(b_hi - k);

        let mut a_panel = vec![0.0; lm * w];
        if grid.j == a_owner {
            a_panel = local.a.col_panel(k - a_lo, w);
        }
        grid.row.broadcast(&mut a_panel, a_owner)?;

        let mut b_panel = vec![0.0; w * ln];
        if grid.i == b_owner {
            b_panel = local.b.row_panel(k - b_lo, w);
        }
        grid.col.broadcast(&mut b_panel, b_owner)?;

        gemm_acc(&mut c.data, &a_panel, &b_panel, lm, w, ln);
        k += w;
        steps += 1;
    }
    Ok((c, steps))
}

/// Two-stage gather of C to world rank 0: every grid row collects its blocks at j = 0,
/// then grid column 0 collects those row strips at i = 0. `Some(C)` on rank 0 only.
pub fn collect_to_root(grid: &Grid, d: Dims, c: &Block) -> dist_runtime::Result<Option<Block>> {
    if grid.j != 0 {
        grid.row.send(0, ROW_PART, &c.data)?;
        return Ok(None);
    }
    let mut strip = Block::zeros(c.rows, d.n);
    strip.place(0, 0, &c.data, c.cols);
    for src in 1..grid.pc {
        let (c0, c1) = block_range(d.n, grid.pc, src);
        let mut part = vec![0.0; c.rows * (c1 - c0)];
        grid.row.recv(src, ROW_PART, &mut part)?;
        strip.place(0, c0, &part, c1 - c0);
    }
    if grid.i != 0 {
        grid.col.send(0, STRIP, &strip.data)?;
        return Ok(None);
    }
    let mut full = Block::zeros(d.m, d.n);
    full.place(0, 0, &strip.data, d.n);
    for src in 1..grid.pr {
        let (r0, r1) = block_range(d.m, grid.pr, src);
        let mut part = vec![0.0; (r1 - r0) * d.n];
        grid.col.recv(src, STRIP, &mut part)?;
        full.place(r0, 0, &part, d.n);
    }
    Ok(Some(full))
}

pub fn serial_reference(d: Dims) -> Block {
    let a = Block::from_fn((0, d.m), (0, d.k), a_entry);
    let b = Block::from_fn((0, d.k), (0, d.n), b_entry);
    let mut c = Block::zeros(d.m, d.n);
    gemm_acc(&mut c.data, &a.data, &b.data, d.m, d.k, d.n);
    c
}
