//! Parameter-server training of a linear model, checked against serial training.
//!
//!     cargo spmd run -n 4 -- --rounds 20 [--samples 120 --features 6 --lr 0.1 --seed 5]
//!
//! Rank 0 is the server; with one rank it trains on all the data itself.

use dist_runtime::prelude::*;
use param_server::model::train_serial;
use param_server::protocol::SERVER;
use param_server::server::Server;
use param_server::worker::Worker;
use param_server::{Participant, RunConfig};

fn drive<P: Participant>(mut p: P, rounds: usize) -> dist_runtime::Result<(P, Vec<f64>, f64)> {
    for r in 0..rounds {
        p.round(r)?;
    }
    let (params, loss) = p.finish()?;
    Ok((p, params, loss))
}

fn max_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max)
}

#[spmd]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let cfg = RunConfig::parse(std::env::args().skip(1)).unwrap_or_else(|e| panic!("{e}"));
    let (rank, size) = (world.rank(), world.size());
    let owners = (size - 1).max(1);
    let (want, want_losses) = train_serial(&cfg, owners);

    let mut bad = 0u32;
    let mut report = String::new();
    if rank == SERVER {
        let (server, params, final_loss) = drive(Server::new(world.clone(), &cfg), cfg.rounds)?;
        let d = max_diff(&params, &want);
        let dl = max_diff(&server.losses, &want_losses);
        if d > 1e-12 || dl > 1e-12 {
            bad = 1;
        }
        let shuffled = server.arrivals.iter().filter(|o| o.windows(2).any(|w| w[0] > w[1])).count();
        report = format!(
            "OK param_server ranks={size} rounds={} samples={} params_err={d:.1e} loss={:.6} final_loss={:.6} out_of_order_rounds={shuffled}",
            cfg.rounds,
            cfg.samples,
            server.losses.last().copied().unwrap_or(f64::NAN),
            final_loss / cfg.samples as f64
        );
    } else {
        let (_, params, _) = drive(Worker::new(world.clone(), &cfg), cfg.rounds)?;
        if max_diff(&params, &want) > 1e-12 {
            bad = 1;
        }
    }

    let mut any_bad = [bad];
    world.all_reduce(&mut any_bad, ReduceOp::Max)?;
    if any_bad[0] != 0 {
        return Err(dist_runtime::Error::Mismatch {
            comm: "World".into(),
            msg: format!("rank {rank}: parameters differ from serial training (this rank bad: {bad})"),
        });
    }
    if rank == SERVER {
        println!("{report}");
    }
    Ok(())
}
