//! 1-D particle-in-cell with particle migration between neighbouring ranks.
//!
//! `cargo spmd run -n 4 -- --particles 2000 --steps 100`

mod cli;
mod exchange;
mod particles;

use dist_runtime::prelude::*;
use exchange::Migrator;
use particles::{Domain, Particle, PACKED};

type BoxError = Box<dyn std::error::Error>;

/// (particle count, total energy) over every rank.
fn global_totals(world: &Comm<World>, mine: &[Particle]) -> dist_runtime::Result<(u64, f64)> {
    let mut count = [mine.len() as u64];
    world.all_reduce(&mut count, ReduceOp::Sum)?;
    let mut energy = [mine.iter().map(Particle::energy).sum::<f64>()];
    world.all_reduce(&mut energy, ReduceOp::Sum)?;
    Ok((count[0], energy[0]))
}

#[spmd]
fn main(world: Comm<World>) -> Result<(), BoxError> {
    let opts = cli::parse_args()?;
    let (rank, size) = (world.rank(), world.size());
    let domain = Domain { rank, ranks: size };

    let start = particles::initial(opts.particles, opts.seed);
    let mut mine: Vec<Particle> = start.iter().filter(|p| domain.owns(p.x)).copied().collect();
    let mut migrator = Migrator::new(world.clone());
    let (n0, e0) = global_totals(&world, &mine)?;
    if rank == 0 {
        println!("{n0} particles over {size} ranks, initial energy {e0:.6}");
    }

    for step in 1..=opts.steps {
        mine.iter_mut().for_each(Particle::push);
        let (stay, leaving): (Vec<Particle>, Vec<Particle>) = mine.into_iter().partition(|p| domain.owns(p.x));
        let (to_right, to_left): (Vec<Particle>, Vec<Particle>) = leaving.into_iter().partition(|p| p.v > 0.0);
        let arrived = migrator.exchange(&to_left, &to_right)?;
        if let Some(stray) = arrived.iter().find(|p| !domain.owns(p.x)) {
            return Err(format!("rank {rank}: particle {} at x = {} landed outside {:?}", stray.id, stray.x, domain.bounds()).into());
        }
        mine = stay;
        mine.extend(arrived);

        let (count, energy) = global_totals(&world, &mine)?;
        if count != n0 {
            return Err(format!("step {step}: {count} particles, expected {n0}").into());
        }
        if opts.verbose && rank == 0 && step % 10 == 0 {
            println!("step {step:4}: energy {energy:.6}");
        }
    }

    // Collect everything on rank 0 and compare with a serial run.
    let mut counts = vec![0u64; size];
    world.all_gather(&[mine.len() as u64], &mut counts)?;
    let counts: Vec<usize> = counts.iter().map(|&c| c as usize * PACKED).collect();
    let packed = particles::pack(&mine);
    let mut verdict = [0u8];
    if rank == 0 {
        let mut all = vec![0.0; counts.iter().sum()];
        world.gather_v(&packed, Some(&mut all[..]), &counts, 0)?;
        let mut got = particles::unpack(&all);
        got.sort_by_key(|p| p.id);
        let want = particles::simulate_serial(start, opts.steps);
        let worst = got
            .iter()
            .zip(&want)
            .map(|(a, b)| if a.id != b.id { f64::INFINITY } else { (a.x - b.x).abs().max((a.v - b.v).abs()) })
            .fold(0.0, f64::max);
        let ok = got.len() == want.len() && worst < 1e-12;
        println!("after {} steps: {} particles, max deviation from serial {worst:.2e}", opts.steps, got.len());
        verdict[0] = ok as u8;
    } else {
        world.gather_v(&packed, None, &counts, 0)?;
    }
    world.broadcast(&mut verdict, 0)?;
    let mut moved = [migrator.sent as u64];
    world.reduce(&mut moved, ReduceOp::Sum, 0)?;
    if verdict[0] == 0 {
        return Err("particles differ from the serial simulation".into());
    }
    if rank == 0 {
        println!("{} migrations in total; OK", moved[0]);
    }
    Ok(())
}
