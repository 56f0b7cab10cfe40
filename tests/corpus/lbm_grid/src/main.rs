//! Heat diffusion (9-point stencil) on a periodic px × py process grid with
//! two-phase halo exchange, checked against the same run in one process.

mod cli;
mod collect;
mod field;
mod halo;
mod topology;

use cli::Cli;
use dist_runtime::prelude::*;
use field::Field;
use topology::Topology;

fn bad(msg: String) -> dist_runtime::Error {
    dist_runtime::Error::Mismatch { comm: "World".into(), msg }
}

#[spmd]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let cli = Cli::parse(&argv).map_err(dist_runtime::Error::Env)?;
    let (px, py) = cli.process_grid(world.size()).map_err(dist_runtime::Error::Env)?;
    let topo = Topology::new(&world, px, py)?;
    let (x0, lx, y0, ly) = topo.my_block(cli.nx, cli.ny);
    if lx == 0 || ly == 0 {
        return Err(dist_runtime::Error::Env(format!("a {}x{} grid is too fine for {}x{} points", px, py, cli.nx, cli.ny)));
    }
    let mut f = Field::new(x0, lx, y0, ly, cli.nx, cli.ny);
    let mass0 = collect::total(&world, f.local_sum())?;
    if world.rank() == 0 {
        println!("{}x{} points on a {px}x{py} grid, {} steps, initial mass {mass0:.6}", cli.nx, cli.ny, cli.steps);
    }

    for step in 1..=cli.steps {
        halo::exchange(&topo, &mut f)?;
        f.step(cli.alpha);
        if cli.check_every > 0 && step % cli.check_every == 0 {
            let mass = collect::total(&world, f.local_sum())?;
            if (mass - mass0).abs() > 1e-9 * mass0.abs() {
                return Err(bad(format!("step {step}: mass {mass} drifted from {mass0}")));
            }
            if cli.verbose {
                let e = collect::energy(&world, &f)?;
                if world.rank() == 0 {
                    println!("step {step:>4}: mass {mass:.9} energy {e:.6}");
                }
            }
        }
    }

    let gathered = collect::gather_field(&world, &topo, &f, cli.nx, cli.ny)?;
    if let Some(global) = gathered {
        let want = field::serial(cli.nx, cli.ny, cli.steps, cli.alpha);
        let err = global.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0f64, |m, d| if d.is_nan() { f64::INFINITY } else { m.max(d) });
        if err > 1e-10 {
            return Err(bad(format!("gathered field differs from serial by {err:e}")));
        }
        println!("OK: {}x{} field after {} steps on {px}x{py} ranks matches serial (max diff {err:.1e})", cli.nx, cli.ny, cli.steps);
    }
    Ok(())
}
