//! 1-D advection-diffusion on a block partition that follows the work: every few steps
//! the ranks share their loads, agree on a new partition and move cells with
//! `all_to_all_v`. Checked against the serial solver.
//!
//! cargo spmd run -n 4 -- --cells 240 --steps 300 --every 10

mod migrate;
mod partition;
mod physics;
mod serial;
mod settings;

use dist_runtime::prelude::*;
use dist_runtime::Result;

use partition::Partition;
use physics::{advance, cell_cost, initial};
use settings::Settings;

const TO_LEFT: Tag<f64> = Tag::new(10);
const TO_RIGHT: Tag<f64> = Tag::new(11);

type BoxResult<T> = std::result::Result<T, Box<dyn std::error::Error>>;

#[spmd]
fn main(world: Comm<World>) -> BoxResult<()> {
    let s = Settings::from_args()?;
    let (rank, n) = (world.rank(), world.size());
    if s.cells < n {
        return Err(format!("{} cells cannot be shared by {n} ranks", s.cells).into());
    }
    let left: Option<usize> = rank.checked_sub(1);
    let right: Option<usize> = (rank + 1 < n).then_some(rank + 1);

    let mut part = Partition::even(s.cells, n);
    let (lo, hi) = part.range(rank);
    let mut u = vec![0.0];
    u.extend_from_slice(&initial(s.cells)[lo..hi]);
    u.push(0.0);

    // Fills the ghost cells from the neighbours; the domain's ends stay at zero.
    let exchange = |u: &mut Vec<f64>| -> Result<()> {
        let m = u.len() - 2;
        let (first, last) = ([u[1]], [u[m]]);
        let (mut from_left, mut from_right) = ([0.0], [0.0]);
        world.batch(|b| {
            if let Some(l) = left {
                b.send(l, TO_LEFT, &first);
                b.recv(l, TO_RIGHT, &mut from_left);
            }
            if let Some(r) = right {
                b.send(r, TO_RIGHT, &last);
                b.recv(r, TO_LEFT, &mut from_right);
            }
        })?;
        u[0] = from_left[0];
        u[m + 1] = from_right[0];
        Ok(())
    };

    let mut taken = 0;
    let mut moves = 0;
    for step in 0..s.steps {
        exchange(&mut u)?;
        let next = advance(&u, s.nu, s.speed);
        let m = next.len();
        let mut residual = [next.iter().zip(&u[1..=m]).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max)];
        u[1..=m].copy_from_slice(&next);
        world.all_reduce(&mut residual, ReduceOp::Max)?;
        taken += 1;
        if residual[0] < s.tol {
            break;
        }

        if (step + 1) % s.rebalance_every == 0 {
            let load = [u[1..=m].iter().map(|&v| cell_cost(v)).sum::<f64>()];
            let mut loads = vec![0.0; n];
            world.all_gather(&load, &mut loads)?;
            let balanced = part.rebalance(&loads);
            if balanced != part {
                if rank == 0 && moves < 3 {
                    println!("step {}: imbalance {:.2}, new sizes {:?}", step + 1, Partition::imbalance(&loads), balanced.sizes());
                }
                u = migrate::migrate(&world, &u[1..=m], &part, &balanced)?;
                part = balanced;
                moves += 1;
            }
        }
    }

    // Collect the solution on rank 0 and compare with the serial solver.
    let m = u.len() - 2;
    let counts = part.sizes();
    if rank == 0 {
        let mut all = vec![0.0; s.cells];
        world.gather_v(&u[1..=m], Some(&mut all), &counts, 0)?;
        let (want, serial_steps) = serial::solve(&s);
        let diff = all.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        if serial_steps != taken || diff > 1e-12 {
            return Err(format!("{taken} steps (serial {serial_steps}), max difference {diff:.3e}").into());
        }
        println!("{taken} steps, {moves} rebalances, max difference from serial {diff:.1e}");
        println!("OK");
    } else {
        world.gather_v(&u[1..=m], None, &counts, 0)?;
    }
    Ok(())
}
