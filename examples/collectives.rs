//! Every collective once, as the torch.distributed tutorial prints them, each checked
//! against what it must produce.
//!
//! `cargo xtask run -n 4 --example collectives`

use dist_runtime::prelude::*;

fn expect<T: PartialEq + std::fmt::Debug>(what: &str, got: T, want: T) -> Result<(), String> {
    if got != want {
        return Err(format!("{what}: got {got:?}, expected {want:?}"));
    }
    Ok(())
}

#[spmd(strict)]
fn main(world: Comm<World>) -> Result<(), String> {
    let (r, n) = (world.rank(), world.size());
    let err = |e: dist_runtime::Error| e.to_string();
    let me = r as i64;
    let show = |what: &str, v: &dyn std::fmt::Debug| println!("rank {r}: {what:<15} {v:?}");

    let mut b = [me * 10; 2];
    world.broadcast(&mut b, 0).map_err(err)?;
    expect("broadcast from 0", b, [0, 0])?;
    let last = n - 1;
    let mut b = [me * 10; 2];
    world.broadcast(&mut b, last).map_err(err)?;
    expect("broadcast from last", b, [last as i64 * 10; 2])?;
    show("broadcast", &b);

    let mut x = [me + 1];
    world.reduce(&mut x, ReduceOp::Sum, 0).map_err(err)?;
    if r == 0 {
        expect("reduce to 0", x[0], (n * (n + 1) / 2) as i64)?;
        show("reduce", &x);
    }

    let mut x = [me + 1];
    world.all_reduce(&mut x, ReduceOp::Prod).map_err(err)?;
    expect("all_reduce prod", x[0], (1..=n as i64).product())?;
    show("all_reduce", &x);

    let mut all = vec![0i64; n];
    world.all_gather(&[me], &mut all).map_err(err)?;
    expect("all_gather", all.clone(), (0..n as i64).collect())?;
    show("all_gather", &all);

    let mut at_root = vec![0i64; 2 * n];
    world.gather(&[me, -me], if r == 0 { Some(&mut at_root[..]) } else { None }, 0).map_err(err)?;
    if r == 0 {
        expect("gather", at_root.clone(), (0..n as i64).flat_map(|j| [j, -j]).collect())?;
        show("gather", &at_root);
    }

    let parts: Vec<i64> = (0..n as i64).map(|j| 100 + j).collect();
    let mut mine = [0i64];
    world.scatter(if r == 0 { Some(&parts[..]) } else { None }, &mut mine, 0).map_err(err)?;
    expect("scatter", mine[0], 100 + me)?;
    show("scatter", &mine);

    let send: Vec<i64> = (0..n as i64).map(|j| me * j).collect();
    let mut red = [0i64];
    world.reduce_scatter(&send, &mut red, ReduceOp::Sum).map_err(err)?;
    expect("reduce_scatter", red[0], me * (n * (n - 1) / 2) as i64)?;
    show("reduce_scatter", &red);

    let send: Vec<i64> = (0..n as i64).map(|j| me * 100 + j).collect();
    let mut recv = vec![0i64; n];
    world.all_to_all(&send, &mut recv).map_err(err)?;
    expect("all_to_all", recv.clone(), (0..n as i64).map(|j| j * 100 + me).collect())?;
    show("all_to_all", &recv);

    world.barrier().map_err(err)?;
    if r == 0 {
        println!("all collectives correct on {n} ranks");
    }
    Ok(())
}
