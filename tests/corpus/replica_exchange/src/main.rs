//! Parallel tempering of a periodic Ising chain: one replica per rank, neighbouring
//! temperatures exchange configurations every `--swap-every` sweeps (even and odd
//! pairs alternating). Rank 0 replays the whole ensemble serially and checks that the
//! distributed run produced exactly the same statistics and final configurations.

mod config;
mod ising;
mod reference;
mod replica;
mod rng;
mod stats;

use std::error::Error;

use dist_runtime::prelude::*;

use config::Config;
use replica::Replica;

#[derive(Debug)]
struct Mismatch(String);

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "replica_exchange differs from the serial reference: {}", self.0)
    }
}

impl Error for Mismatch {}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs()))
}

#[spmd]
fn main(world: Comm<World>) -> Result<(), Box<dyn Error>> {
    let cfg = Config::from_env()?;
    // Rank 0's seed is the job's seed (as if it came from a run database).
    let mut seed = [cfg.seed];
    world.broadcast(&mut seed, 0)?;

    let mut replica = Replica::new(world.clone(), &cfg, seed[0]);
    replica.run(&cfg)?;

    let Some(got) = stats::collect(&world, &replica.stats, replica.spins())? else {
        return Ok(());
    };
    let want = reference::simulate(&cfg, seed[0], world.size());
    for (slot, (g, w)) in got.stats.iter().zip(&want.stats).enumerate() {
        let (gr, wr) = (g.to_row(), w.to_row());
        if let Some(k) = (0..stats::FIELDS).find(|&k| !close(gr[k], wr[k])) {
            return Err(Box::new(Mismatch(format!("slot {slot} field {k}: got {} want {}", gr[k], wr[k]))));
        }
    }
    if let Some(slot) = (0..world.size()).find(|&s| got.spins[s] != want.spins[s]) {
        return Err(Box::new(Mismatch(format!("final spins of slot {slot}"))));
    }
    let accepted: f64 = want.stats.iter().map(|s| s.swaps_accepted).sum();
    if got.total_accepted as f64 != accepted {
        return Err(Box::new(Mismatch(format!("{} swaps accepted, want {accepted}", got.total_accepted))));
    }
    if cfg.verbose {
        for (slot, s) in got.stats.iter().enumerate() {
            println!(
                "slot {slot}: beta {:.3} <E> {:.3} swaps {}/{}",
                cfg.beta(slot, world.size()),
                s.mean_energy(cfg.sweeps),
                s.swaps_accepted,
                s.swaps_attempted
            );
        }
    }
    println!(
        "OK replica_exchange slots={} sweeps={} swap_every={} spins={} swaps_accepted={}",
        world.size(),
        cfg.sweeps,
        cfg.swap_every,
        cfg.spins,
        got.total_accepted
    );
    Ok(())
}
