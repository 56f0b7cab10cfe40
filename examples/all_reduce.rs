//! All-reduce with every operator, checked against the closed form.
//!
//! `cargo xtask run -n 8 --example all_reduce`

use dist_runtime::prelude::*;

#[spmd(strict)]
fn main(world: Comm<World>) -> Result<(), String> {
    let (r, n) = (world.rank() as i64, world.size() as i64);
    // Rank r holds [r+1, r+1, ...]; a length that is not a multiple of n on purpose.
    let len = 1000 + 7;
    let run = |op: ReduceOp, want: i64| -> Result<(), String> {
        let mut v = vec![r + 1; len];
        world.all_reduce(&mut v, op).map_err(|e| e.to_string())?;
        if v.iter().any(|&x| x != want) {
            return Err(format!("{op:?}: got {} want {want}", v[0]));
        }
        if world.rank() == 0 {
            println!("all_reduce {:<5} over {n} ranks of {len} × i64 = {}", op.name(), v[0]);
        }
        Ok(())
    };
    run(ReduceOp::Sum, n * (n + 1) / 2)?;
    run(ReduceOp::Prod, (1..=n).product())?;
    run(ReduceOp::Max, n)?;
    run(ReduceOp::Min, 1)?;
    let mut f = vec![(r + 1) as f32; 3];
    world.all_reduce(&mut f, ReduceOp::Avg).map_err(|e| e.to_string())?;
    let want = (n + 1) as f32 / 2.0;
    if (f[0] - want).abs() > 1e-6 {
        return Err(format!("avg: got {} want {want}", f[0]));
    }
    if world.rank() == 0 {
        println!("all_reduce avg   over {n} ranks of 3 × f32 = {}", f[0]);
    }
    Ok(())
}
