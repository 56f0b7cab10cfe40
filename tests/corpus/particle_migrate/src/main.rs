//! A 1-D domain-decomposed particle simulation: particles leaving a rank's slab move to
//! the neighbouring rank each sub-step; global count and momentum are reported every
//! few steps, and at the end every particle is gathered on rank 0 and compared with a
//! serial simulation.
//!
//! `cargo spmd run -n 4 -- --particles 300 --steps 30 --boundary reflect --gather object`

mod config;
mod domain;
mod migrate;
mod particle;
mod report;

use config::Config;
use dist_runtime::prelude::*;
use domain::Domain;
use migrate::Migrator;

fn err(e: dist_runtime::Error) -> String {
    e.to_string()
}

#[spmd]
fn main(world: Comm<World>) -> Result<(), String> {
    let cfg = Config::from_args(std::env::args().skip(1))?;
    let (n, me) = (world.size(), world.rank());
    let domain = Domain::new(n, me, cfg.boundary);
    let all = particle::generate(cfg.particles, cfg.vmax, cfg.seed);
    let (want, want_reports) = particle::serial_run(&all, &cfg, n);

    let mut local: Vec<_> = all.iter().filter(|p| domain.slab_of(p.x) == me).copied().collect();
    let local_vmax = local.iter().map(|p| p.v.abs()).fold(0.0, f64::max);
    let mut vmax = [local_vmax];
    world.all_reduce(&mut vmax, ReduceOp::Max).map_err(err)?;
    let substeps = domain::substeps_for(vmax[0], cfg.dt, domain.width());
    let dt = cfg.dt / substeps as f64;

    let mut mig = Migrator::new(&world, &domain);
    let mut reports = Vec::new();
    for step in 0..cfg.steps {
        for _ in 0..substeps {
            let (mut stay, to_left, to_right) = domain.advance(std::mem::take(&mut local), dt);
            stay.extend(mig.migrate(&to_left, &to_right).map_err(err)?);
            local = stay;
        }
        if (step + 1) % cfg.report_every == 0 {
            let (count, p) = report::global_stats(&world, &local).map_err(err)?;
            if me == 0 {
                println!("step {:>4}: {count} particles, momentum {p:+.6}", step + 1);
            }
            reports.push((count, p));
        }
    }

    let gathered = report::gather_all(&world, &local, cfg.gather, 0).map_err(err)?;
    if let Some(got) = gathered {
        if got != want {
            let first = got.iter().zip(&want).position(|(a, b)| a != b);
            return Err(format!("final particles differ from serial: {} vs {}, first at {first:?}", got.len(), want.len()));
        }
        for ((c, p), (wc, wp)) in reports.iter().zip(&want_reports) {
            if c != wc || (p - wp).abs() > 1e-9 * (1.0 + wp.abs()) {
                return Err(format!("report ({c}, {p}) differs from serial ({wc}, {wp})"));
            }
        }
        if reports.len() != want_reports.len() {
            return Err("wrong number of reports".into());
        }
        println!(
            "particle_migrate: {} particles, {n} ranks, {:?}, {substeps} sub-steps/step, {} sent by rank 0: OK",
            got.len(),
            cfg.boundary,
            mig.sent
        );
    }
    Ok(())
}
