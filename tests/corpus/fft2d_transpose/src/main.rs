//! A distributed 2-D DFT by global transposes (`all_to_all_v`), on row slabs and, when
//! the world size factors, on a 2-D process mesh; both checked against a serial DFT.
//!
//! `cargo spmd run -n 4 -- --rows 13 --cols 10 --mode auto`

mod args;
mod dft;
mod layout;
mod pencil;
mod slab;
mod transpose;

use args::Mode;
use dist_runtime::prelude::*;
use layout::grid;
use pencil::Pencil;
use slab::Slab;

const TOL: f64 = 1e-9;

fn check(what: &str, err: f64, scale: f64) -> Result<(), String> {
    if err.is_nan() || err > TOL * scale {
        Err(format!("{what}: error {err:e} exceeds {:e}", TOL * scale))
    } else {
        Ok(())
    }
}

#[spmd]
fn main(world: Comm<World>) -> Result<(), String> {
    let a = args::parse()?;
    let (rank, n) = (world.rank(), world.size());
    let e = |e: dist_runtime::Error| e.to_string();
    let want = dft::serial_2d(a.rows, a.cols);
    let scale = (a.rows * a.cols) as f64;

    // 1-D: row slabs over the whole world.
    let slab = Slab::new(&world, a.rows, a.cols);
    let got = slab.forward(slab.local_input()).map_err(e)?;
    let (r0, r1) = slab.my_rows();
    let mut err1 = [dft::max_err(&got, &want[r0 * a.cols..r1 * a.cols])];
    world.all_reduce(&mut err1, ReduceOp::Max).map_err(e)?;
    check("slab transform", err1[0], scale)?;
    if let Some(all) = slab.gather(&got).map_err(e)? {
        check("gathered slab result", dft::max_err(&all, &want), scale)?;
    }

    // 2-D: a process mesh when the world size factors.
    let mesh = match a.mode {
        Mode::OneD => None,
        Mode::Auto | Mode::TwoD => grid(n),
    };
    let mut err2 = [0.0f64];
    if let Some((pr, pc)) = mesh {
        let pencil = Pencil::new(&world, pr, pc, a.rows, a.cols).map_err(e)?;
        let got2 = pencil.forward(pencil.local_input()).map_err(e)?;
        let ((r0, r1), (c0, c1)) = pencil.block();
        let want_block: Vec<_> = (r0..r1).flat_map(|i| want[i * a.cols + c0..i * a.cols + c1].iter().copied()).collect();
        err2[0] = dft::max_err(&got2, &want_block);
        world.all_reduce(&mut err2, ReduceOp::Max).map_err(e)?;
        check("pencil transform", err2[0], scale)?;
    } else if a.mode == Mode::TwoD && rank == 0 {
        println!("world size {n} does not factor: 2-D mesh skipped, 1-D only");
    }

    if rank == 0 {
        let how = mesh.map(|(pr, pc)| format!("and a {pr}x{pc} mesh")).unwrap_or_else(|| "only".to_string());
        println!("{}x{} DFT on {n} ranks: slabs {how}; max error {:.2e} / {:.2e}", a.rows, a.cols, err1[0], err2[0]);
        println!("OK");
    }
    Ok(())
}
