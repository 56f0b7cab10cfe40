//! All-pairs gravitational N-body on a ring of ranks, checked against a serial run.
//!
//! `cargo spmd run -n 4 -- --particles 37 --steps 4 [--overlap]`

mod cli;
mod physics;
mod ring;

use cli::Config;
use dist_runtime::prelude::*;
use physics::SerialSim;
use ring::RingSim;
use std::fmt;

#[derive(Debug)]
enum AppError {
    Usage(String),
    Comm(dist_runtime::Error),
    Mismatch(String),
}

impl fmt::Display for AppError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AppError::Usage(m) => write!(f, "usage: {m}"),
            AppError::Comm(e) => write!(f, "communication failed: {e}"),
            AppError::Mismatch(m) => write!(f, "result differs from the serial reference: {m}"),
        }
    }
}

impl From<dist_runtime::Error> for AppError {
    fn from(e: dist_runtime::Error) -> Self {
        AppError::Comm(e)
    }
}

fn relative(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs().max(1e-300)
}

const TOL: f64 = 1e-9;

#[spmd]
fn main(world: Comm<World>) -> Result<(), AppError> {
    let cfg = Config::from_args(std::env::args().skip(1)).map_err(AppError::Usage)?;
    let bodies = physics::initial_bodies(cfg.particles, cfg.seed);

    let mut sim = RingSim::new(world.clone(), &bodies, &cfg);
    let e_start = sim.total_energy()?;
    for step in 1..=cfg.steps {
        sim.step()?;
        if cfg.verbose {
            println!("rank {} step {step}: {} local bodies advanced", world.rank(), sim.local_len());
        }
    }
    let e_end = sim.total_energy()?;

    let mut serial = SerialSim::new(bodies, cfg.softening, cfg.dt);
    let s_start = serial.energy();
    (0..cfg.steps).for_each(|_| serial.step());
    let s_end = serial.energy();

    // Rank 0 compares every position and tells the others the worst difference.
    let mut worst = [0.0f64];
    if let Some(pos) = sim.gather_positions(0)? {
        let want = serial.bodies.iter().flat_map(|b| b.pos);
        worst[0] = pos.iter().zip(want).map(|(&p, q)| (p - q).abs()).fold(0.0, f64::max);
    }
    world.broadcast(&mut worst, 0)?;

    let de = relative(e_start, s_start).max(relative(e_end, s_end));
    if worst[0] > TOL || de > TOL {
        return Err(AppError::Mismatch(format!("position error {:.3e}, energy error {de:.3e}", worst[0])));
    }
    if world.rank() == 0 {
        println!(
            "nbody_ring OK: {} bodies on {} ranks, {} steps, energy {e_start:.9} -> {e_end:.9} (drift {:.2e}), max position error {:.2e}",
            cfg.particles,
            world.size(),
            cfg.steps,
            relative(e_end, e_start),
            worst[0]
        );
    }
    Ok(())
}
