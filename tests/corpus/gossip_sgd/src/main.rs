//! Decentralised (gossip) SGD on a linear least-squares problem: each rank takes a
//! gradient step on its own shard, then averages its weights with one neighbour
//! (hypercube or alternating ring schedule); every few steps a global all_reduce
//! measures consensus and the global loss, and training stops early once it is low.
//! The result is compared with a serial simulation of every rank.

mod config;
mod consensus;
mod gossip;
mod model;
mod serial;

use config::Config;
use consensus::{global_check, Check};
use dist_runtime::prelude::*;
use gossip::Gossiper;
use model::{sgd_step, Shard};

struct Trainer {
    world: Comm<World>,
    shard: Shard,
    gossip: Gossiper,
    w: Vec<f64>,
    checks: Vec<Check>,
}

impl Trainer {
    fn new(world: &Comm<World>, cfg: &Config) -> Trainer {
        Trainer {
            world: world.clone(),
            shard: Shard::generate(cfg, world.rank()),
            gossip: Gossiper::new(world, cfg.schedule, cfg.dim),
            w: vec![0.0; cfg.dim],
            checks: Vec::new(),
        }
    }

    fn train(&mut self, cfg: &Config) -> dist_runtime::Result<()> {
        for t in 0..cfg.max_steps {
            let g = self.shard.grad(&self.w);
            sgd_step(&mut self.w, &g, cfg.lr);
            self.gossip.mix(t, &mut self.w)?;
            if (t + 1) % cfg.check_every == 0 {
                let local = self.shard.loss(&self.w);
                let c = global_check(&self.world, t + 1, &self.w, local)?;
                self.checks.push(c);
                if c.converged(cfg.tol) {
                    break;
                }
            }
        }
        Ok(())
    }
}

#[spmd]
fn main(world: Comm<World>) -> Result<(), Box<dyn std::error::Error>> {
    let cfg = Config::parse(std::env::args().skip(1))?;
    let (r, n) = (world.rank(), world.size());

    let mut trainer = Trainer::new(&world, &cfg);
    trainer.train(&cfg)?;

    // Compare with the serial simulation: every rank checks its own weights.
    let reference = serial::simulate(&cfg, n);
    let werr = trainer.w.iter().zip(&reference.weights[r]).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    let same_checks = trainer.checks.len() == reference.checks.len()
        && trainer.checks.iter().zip(&reference.checks).all(|(a, b)| {
            a.step == b.step && (a.loss - b.loss).abs() <= 1e-12 * b.loss.abs().max(1.0) && (a.spread - b.spread).abs() <= 1e-12
        });
    let mut worst = [werr, if same_checks { 0.0 } else { 1.0 }];
    world.all_reduce(&mut worst, ReduceOp::Max)?;

    let last = trainer.checks.last().copied();
    if r == 0 {
        if worst[0] > 1e-10 || worst[1] != 0.0 {
            return Err(format!("differs from the serial simulation: weight error {:.3e}, checks differ: {}", worst[0], worst[1] != 0.0).into());
        }
        let last = last.ok_or("no consensus check ran (steps < check-every)")?;
        println!(
            "OK gossip-sgd n={n} schedule={:?}: stopped at step {} loss {:.3e} spread {:.3e}, {} exchanges on rank 0, max |w - serial| = {:.1e}",
            cfg.schedule, last.step, last.loss, last.spread, trainer.gossip.exchanges, worst[0]
        );
    }
    Ok(())
}
