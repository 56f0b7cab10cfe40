//! A batch of distributed 2-D DCTs: the world is split into groups of ranks, each
//! group transforms its own `R x C` matrix held as row slabs (rows, then an
//! all-to-all transpose, then the other axis, then the transpose back), and the
//! results are gathered and checked against the serial transform.
//!
//! cargo spmd run -n 4 -- --rows 13 --cols 10 --groups 2 --chunk 3

mod dct;
mod exchange;
mod layout;

use dist_runtime::prelude::*;

use exchange::{find_peak, gather_to_root, Slab, Transposer};
use layout::BlockLayout;

dist_runtime::group!(Leaders);

#[derive(Debug)]
struct Config {
    rows: usize,
    cols: usize,
    groups: usize,
    chunk: usize,
    seed: u64,
}

impl Config {
    fn from_args() -> Result<Config, String> {
        let mut cfg = Config { rows: 12, cols: 9, groups: 1, chunk: 4, seed: 42 };
        let mut it = std::env::args().skip(1);
        while let Some(flag) = it.next() {
            let value = it.next().ok_or(format!("missing value after {flag}"))?;
            let v: u64 = value.parse().map_err(|e| format!("{flag} {value}: {e}"))?;
            match flag.as_str() {
                "--rows" => cfg.rows = v as usize,
                "--cols" => cfg.cols = v as usize,
                "--groups" => cfg.groups = v as usize,
                "--chunk" => cfg.chunk = v as usize,
                "--seed" => cfg.seed = v,
                _ => return Err(format!("unknown flag {flag}")),
            }
        }
        Ok(cfg)
    }
}

fn max_diff(a: &[f64], b: &[f64]) -> f64 {
    if a.len() != b.len() {
        return f64::INFINITY;
    }
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max)
}

#[spmd]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let cfg = Config::from_args().map_err(dist_runtime::Error::Env)?;
    let (rank, n) = (world.rank(), world.size());
    if cfg.groups == 0 || n % cfg.groups != 0 {
        return Err(dist_runtime::Error::Env(format!("--groups {} does not divide {n} ranks", cfg.groups)));
    }
    let (r, c) = (cfg.rows, cfg.cols);

    // Process grid: `groups` rows of q ranks; each grid row owns one matrix.
    let q = n / cfg.groups;
    let batch = rank / q;
    let slab = world.split::<Slab>(batch as u32, rank as i64)?;
    let leader_ranks: Vec<usize> = (0..cfg.groups).map(|g| g * q).collect();
    let leaders = world.subgroup::<Leaders>(&leader_ranks)?;

    // Rows of my slab, transformed along the rows.
    let row_layout = BlockLayout::new(r, q);
    let mut a = dct::rows_of(cfg.seed, batch, row_layout.range(slab.rank()), c);
    dct::dct_rows(&mut a, c);

    // Transpose, keep a copy of the intermediate for checking, transform the columns.
    let fwd = Transposer::new(&slab, r, c, cfg.chunk);
    let half = fwd.forward(&a)?;
    let half_all = gather_to_root(&slab, &half, &fwd.out_layout().scaled(r))?;
    let mut full_t = half;
    dct::dct_rows(&mut full_t, r);
    let (peak_col, peak_row, peak_mag) = find_peak(&slab, &full_t, fwd.out_layout(), r)?;

    // And back to row slabs of the R x C result.
    let back = Transposer::new(&slab, c, r, cfg.chunk);
    let full = back.forward(&full_t)?;
    let full_all = gather_to_root(&slab, &full, &row_layout.scaled(c))?;

    // The group's root checks its matrix against the serial transform.
    let mut report = [0.0f64; 2]; // [max difference, wrong peak]
    if let (Some(h), Some(f)) = (&half_all, &full_all) {
        let want = dct::serial(cfg.seed, batch, r, c);
        report[0] = max_diff(h, &want.half).max(max_diff(f, &want.full));
        let (idx, mag) = dct::peak(&want.full_t).unwrap_or((0, 0.0));
        if (idx / r.max(1), idx % r.max(1)) != (peak_col, peak_row) || mag != peak_mag {
            report[1] = 1.0;
        }
        println!(
            "matrix {batch}: {r}x{c} on ranks {:?}, peak |{peak_mag:.4}| at ({peak_row}, {peak_col}), max diff {:.1e}",
            slab.members(),
            report[0]
        );
    }

    // Rank 0 collects the groups' reports and tells everybody the verdict.
    let mut verdict = [0.0f64; 2];
    if let Some(leaders) = &leaders {
        if leaders.rank() == 0 {
            let mut all = vec![0.0; 2 * leaders.size()];
            leaders.gather(&report, Some(&mut all[..]), 0)?;
            for pair in all.chunks(2) {
                verdict[0] = verdict[0].max(pair[0]);
                verdict[1] += pair[1];
            }
        } else {
            leaders.gather(&report, None, 0)?;
        }
    }
    world.broadcast(&mut verdict, 0)?;
    if verdict[0] > 1e-12 || verdict[1] != 0.0 {
        return Err(dist_runtime::Error::Backend {
            backend: "transpose2d",
            msg: format!("distributed 2-D DCT differs from serial: max diff {:e}, {} wrong peaks", verdict[0], verdict[1]),
            source: None,
        });
    }
    if rank == 0 {
        println!("OK transpose2d: {} matrices of {r}x{c} on {n} ranks ({q} per matrix)", cfg.groups);
    }
    Ok(())
}
