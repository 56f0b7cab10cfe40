//! A 2-D DFT of an N×M real grid split in row slabs: a DFT along each local row, a
//! global transpose (all_to_all_v with block-distribution counts), a DFT along each
//! local column. Checked against the transform from its definition, and by Parseval.

mod config;
mod dft;
mod layout;
mod transpose;

use config::Config;
use dft::{dft, dft2_reference, real_dft, sample, C};
use dist_runtime::prelude::*;
use layout::BlockDist;
use transpose::SlabTranspose;

/// Columns of the spectrum travel under a tag of their own: the base plus the
/// global column index.
const COLUMN_TAG_BASE: u32 = 100;

fn column_tag(col: usize) -> Tag<C> {
    Tag::new(COLUMN_TAG_BASE + col as u32)
}

fn err(e: dist_runtime::Error) -> String {
    e.to_string()
}

/// Global max of the error and global sums of the two energies, in one place so every
/// rank calls them in the same order.
fn global_checks(world: &Comm<World>, max_err: f64, energy_x: f64, energy_k: f64) -> Result<(f64, f64, f64), String> {
    let mut e = [max_err];
    world.all_reduce(&mut e, ReduceOp::Max).map_err(err)?;
    let mut s = [energy_x, energy_k];
    world.all_reduce(&mut s, ReduceOp::Sum).map_err(err)?;
    Ok((e[0], s[0], s[1]))
}

#[spmd]
fn main(world: Comm<World>) -> Result<(), String> {
    let cfg = Config::from_args()?;
    let (r, p) = (world.rank(), world.size());
    let (n, m) = (cfg.rows, cfg.cols);
    let mut tr = SlabTranspose::new(&world, n, m);
    let rows = tr.my_rows();
    let cols = tr.my_cols();

    // Stage 1: this rank's rows, transformed along the row.
    let local: Vec<f64> = rows.clone().flat_map(|a| (0..m).map(move |b| sample(cfg.seed, a, b))).collect();
    let energy_x: f64 = local.iter().map(|v| v * v).sum();
    let slab: Vec<C> = local.chunks(m).flat_map(real_dft).collect();

    // Stage 2: transpose, then transform each local column.
    let colslab = tr.rows_to_cols(&slab).map_err(err)?;
    let spectrum: Vec<C> = colslab.chunks(n).flat_map(dft).collect();
    let energy_k: f64 = spectrum.iter().map(|z| z.norm_sqr()).sum();

    // The serial reference for the columns this rank holds.
    let grid: Vec<f64> = (0..n).flat_map(|a| (0..m).map(move |b| sample(cfg.seed, a, b))).collect();
    let want = dft2_reference(&grid, n, m);
    let max_err = cols
        .clone()
        .enumerate()
        .flat_map(|(cl, k2)| (0..n).map(move |k1| (cl, k1, k2)))
        .map(|(cl, k1, k2)| (spectrum[cl * n + k1] - want[k1 * m + k2]).norm_sqr().sqrt())
        .fold(0.0f64, f64::max);

    let (max_err, ex, ek) = global_checks(&world, max_err, energy_x, energy_k)?;
    let parseval = (ek / (n * m) as f64 - ex).abs() / ex.max(1e-300);

    // The owner of the Nyquist column hands it to rank 0, which reports it.
    let nyq = m / 2;
    let owner = BlockDist::new(m, p).owner(nyq);
    let col_tag = column_tag(nyq);
    let mut nyquist_col = vec![C::new(0.0, 0.0); n];
    if r == owner {
        let cl = nyq - cols.start;
        nyquist_col.copy_from_slice(&spectrum[cl * n..(cl + 1) * n]);
        if owner != 0 {
            world.send(0, col_tag, &nyquist_col).map_err(err)?;
        }
    } else if r == 0 {
        world.recv(owner, col_tag, &mut nyquist_col).map_err(err)?;
    }
    // Every rank learns how much data crossed the transpose: summed on the owner, then
    // shared from there.
    let mut moved = [tr.moved as u64];
    world.reduce(&mut moved, ReduceOp::Sum, owner).map_err(err)?;
    world.broadcast(&mut moved, owner).map_err(err)?;

    let ok = max_err <= cfg.tol * (n * m) as f64 && parseval <= 1e-10;
    if r == 0 {
        let peak = nyquist_col.iter().map(|z| z.norm_sqr().sqrt()).fold(0.0f64, f64::max);
        if cfg.verbose {
            println!("rows per rank: {:?}", (0..p).map(|j| BlockDist::new(n, p).len(j)).collect::<Vec<_>>());
        }
        println!(
            "fft_pencil {n}x{m} on {p} ranks: max |X - X_ref| = {max_err:.3e}, parseval rel {parseval:.2e}, \
             |X[:, {nyq}]| peak {peak:.4}, {} values moved: {}",
            moved[0],
            if ok { "OK" } else { "MISMATCH" }
        );
    }
    if !ok {
        return Err(format!("rank {r}: distributed 2-D DFT differs from the reference (max error {max_err:.3e})"));
    }
    Ok(())
}
