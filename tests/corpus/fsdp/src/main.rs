//! FSDP training of a small tanh MLP: `cargo spmd run -n 4 -- --steps 5 [--rows R]`.
//! Every rank trains on its rows of the global batch; the consolidated parameters and
//! the loss curve must match serial training on the whole batch.

use dist_runtime::prelude::*;
use fsdp::{dense, flat, FsdpModel};

const DIMS: [usize; 4] = [6, 11, 7, 1];

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    match args.iter().position(|a| a == name) {
        Some(i) => args.get(i + 1).and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("{name} needs a number")),
        None => default,
    }
}

#[spmd]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let steps = arg("--steps", 3);
    let rows = arg("--rows", 10);
    let (rank, n) = (world.rank(), world.size());
    let (lr, beta) = (0.05, 0.9);

    let mut model = FsdpModel::builder()
        .input(DIMS[0])
        .layer(DIMS[1])
        .layer(DIMS[2])
        .layer(DIMS[3])
        .lr(lr)
        .momentum(beta)
        .build(world.clone(), rows);
    let (x, t) = dense::batch(rows, DIMS[0]);
    let mine = flat::batch_rows(rows, n, rank);
    let (x_local, t_local) = (&x[mine.start * DIMS[0]..mine.end * DIMS[0]], &t[mine.clone()]);

    let mut losses = Vec::with_capacity(steps);
    for step in 0..steps {
        let stats = model.train_step(x_local, t_local)?;
        if rank == 0 {
            println!("step {step}: loss {:.6}  |grad| {:.6}", stats.loss, stats.grad_norm);
        }
        losses.push(stats.loss);
    }

    let state = model.full_state()?;
    let (want, want_losses) = dense::serial(&model.dims(), rows, steps, lr, beta);
    let diff = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0f64, f64::max);
    let mut worst = [state.iter().zip(&want).map(|(a, b)| diff(a, b)).fold(diff(&losses, &want_losses), f64::max)];
    world.all_reduce(&mut worst, ReduceOp::Max)?;
    if worst[0] > 1e-10 {
        return Err(dist_runtime::Error::Env(format!("rank {rank}: FSDP differs from serial training by {:.3e}", worst[0])));
    }
    if rank == 0 {
        let numel: Vec<usize> = state.iter().map(Vec::len).collect();
        let last = losses.last().copied().unwrap_or(f64::NAN);
        println!("OK fsdp ranks={n} steps={steps} rows={rows} params={numel:?} final_loss={last:.6} max_abs_diff={:.1e}", worst[0]);
    }
    Ok(())
}
