//! Expert-parallel Mixture-of-Experts forward: top-1 routing, token counts exchanged
//! with all_to_all, tokens and expert ids with all_to_all_v, outputs returned with the
//! inverse all_to_all_v. `cargo spmd run -n 4 -- --layers 3 [--experts E] [--tokens T]`
//! (E defaults to 2 × ranks; any E ≥ 1 works, ranks may host no expert).

mod dispatch;
mod experts;
mod gate;
mod reference;

use dist_runtime::prelude::*;

use experts::LocalExperts;

struct Args {
    layers: usize,
    experts: Option<usize>,
    tokens: usize,
}

impl Args {
    fn parse() -> Args {
        let argv: Vec<String> = std::env::args().skip(1).collect();
        let get = |name: &str| argv.windows(2).find(|w| w[0] == name).map(|w| w[1].parse::<usize>().expect(name));
        Args { layers: get("--layers").or(get("--steps")).unwrap_or(2), experts: get("--experts"), tokens: get("--tokens").unwrap_or(6) }
    }
}

#[spmd]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let args = Args::parse();
    let (rank, n) = (world.rank(), world.size());
    let num_experts = args.experts.unwrap_or(2 * n);
    assert!(num_experts >= 1, "--experts must be at least 1");

    let mut x = gate::tokens(rank, args.tokens);
    let mut replicated = Vec::with_capacity(args.layers);
    let mut aux_losses = Vec::with_capacity(args.layers);
    for layer in 0..args.layers {
        let experts = LocalExperts::load(layer, num_experts, &world);
        let (routes, probs) = gate::route(&x, &gate::gate_weights(layer, num_experts), num_experts);
        let (aux, load) = dispatch::balance_loss(&world, &routes, &probs, num_experts)?;
        let (toks, ids, plan) = dispatch::dispatch(&world, &x, &routes, num_experts)?;
        let y = dispatch::compute_and_combine(&world, &experts, &toks, &ids, &plan)?;
        for ((xi, yi), r) in x.chunks_mut(gate::D).zip(y.chunks(gate::D)).zip(&routes) {
            xi.iter_mut().zip(yi).for_each(|(a, b)| *a += r.prob * b);
        }
        if rank == 0 {
            println!("layer {layer}: expert load {load:?}, balance loss {aux:.4}");
        }
        aux_losses.push(aux);
        replicated.push(experts.replicate(&world)?);
    }

    let (want, want_aux) = reference::run(n, args.tokens, &replicated);
    let loaded_ok = replicated.iter().enumerate().all(|(l, ws)| ws.iter().enumerate().all(|(e, w)| *w == experts::load_expert(l, e)));
    let err = x.iter().zip(&want[rank]).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max) as f64;
    let aux_err = aux_losses.iter().zip(&want_aux).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    let mut worst = [err.max(aux_err), if loaded_ok { 0.0 } else { 1.0 }];
    world.all_reduce(&mut worst, ReduceOp::Max)?;
    if worst[0] > 1e-5 || worst[1] != 0.0 {
        return Err(dist_runtime::Error::Env(format!("MoE output differs from the serial reference: {worst:?}")));
    }
    if rank == 0 {
        println!("OK moe ranks={n} experts={num_experts} layers={} tokens/rank={}.. max_abs_diff={:.1e}", args.layers, args.tokens, worst[0]);
    }
    Ok(())
}
