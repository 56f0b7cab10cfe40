//! How fast a collective runs in this crate's build: `cargo spmd run -n 2 --entry
//! all_reduce_16m` (add `--exact-profile` for the plain dev profile, `--release` for
//! release). The figures in the README come from here.

use dist_runtime::prelude::*;

/// 16 MiB f32 all_reduce, 7 times; rank 0 prints the median and checks the sum.
#[spmd]
pub fn all_reduce_16m(world: Comm<World>) -> dist_runtime::Result<()> {
    let mut times = Vec::new();
    for _ in 0..7 {
        let mut buf = vec![1.0f32; 4 << 20];
        let t = std::time::Instant::now();
        world.all_reduce(&mut buf, ReduceOp::Sum)?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
        assert!(buf.iter().all(|&x| x == world.size() as f32));
    }
    times.sort_by(f64::total_cmp);
    if world.rank() == 0 {
        println!("16 MiB f32 all_reduce on {} ranks: median {:.1} ms", world.size(), times[3]);
    }
    Ok(())
}
