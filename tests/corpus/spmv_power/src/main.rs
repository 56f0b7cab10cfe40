//! Power iteration on a seeded sparse matrix distributed by block rows, with
//! non-blocking ghost exchange among the ranks the structure makes neighbours.

mod args;
mod halo;
mod matrix;
mod solver;

use dist_runtime::prelude::*;
use matrix::Generator;

fn wrong(msg: String) -> dist_runtime::Error {
    dist_runtime::Error::Mismatch { comm: "World".into(), msg }
}

#[spmd]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let opts = args::parse(std::env::args().skip(1)).map_err(dist_runtime::Error::Env)?;
    let gen = Generator { n: opts.rows(), nx: opts.nx, seed: opts.seed };
    let mut a = solver::DistMatrix::new(&world, &gen);
    if opts.check_plan {
        a.plan().verify(&world).map_err(wrong)?;
    }
    if opts.verbose {
        let nbs: Vec<usize> = a.plan().neighbours.iter().map(|nb| nb.rank).collect();
        println!("rank {}: rows {:?}, neighbours {:?}, {} ghosts", world.rank(), a.local_rows(), nbs, a.plan().ghost_count());
    }
    let x0 = solver::start_vector(opts.seed, a.local_rows());
    let got = solver::power_iteration(&mut a, &world, x0, opts.tol, opts.max_iter)?;
    let want = solver::serial_power_iteration(&gen, opts.tol, opts.max_iter);

    let rel = (got.lambda - want.lambda).abs() / want.lambda.abs();
    let mine = &want.vector[a.local_rows()];
    let mut vec_err = [got.vector.iter().zip(mine).map(|(g, w)| (g - w).abs()).fold(0.0f64, f64::max)];
    world.all_reduce(&mut vec_err, ReduceOp::Max)?;
    if rel > 1e-9 || got.iters.abs_diff(want.iters) > 1 || vec_err[0] > 1e-6 {
        return Err(wrong(format!(
            "rank {}: lambda {} after {} iterations, serial {} after {} (vector error {:e})",
            world.rank(),
            got.lambda,
            got.iters,
            want.lambda,
            want.iters,
            vec_err[0]
        )));
    }
    if world.rank() == 0 {
        println!(
            "OK: lambda = {:.12} after {} iterations on {} rows ({} ranks), vector error {:.1e}",
            got.lambda,
            got.iters,
            gen.n,
            world.size(),
            vec_err[0]
        );
    }
    Ok(())
}
