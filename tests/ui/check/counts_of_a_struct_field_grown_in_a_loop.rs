// Top-k compression: each rank keeps the entries of its own gradient past a threshold,
// pushed into a struct's field in a loop. Every rank then assumes that all ranks send
// as many entries as itself, which holds only where the ranks' gradients agree.
use dist_runtime::prelude::*;

#[derive(Default)]
struct Sparse {
    idx: Vec<u32>,
}

fn compress(grad: &[f32]) -> Sparse {
    let order: Vec<usize> = (0..grad.len()).filter(|&i| grad[i].abs() > 0.5).collect();
    let mut out = Sparse::default();
    for i in order {
        out.idx.push(i as u32);
    }
    out
}

#[spmd(sizes = 1..=8)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let n = world.size();
    // (A gradient of the rank's own data, which the check cannot compute.)
    let seed = std::process::id() as usize;
    let grad: Vec<f32> = (0..16).map(|i| ((i * 7 + world.rank() * 3 + seed) % 5) as f32 / 4.0).collect();
    let mine = compress(&grad);
    let counts = vec![mine.idx.len(); n];
    let mut all = vec![0u32; counts.iter().sum()];
    world.all_gather_v(&mine.idx, &mut all, &counts)?;
    Ok(())
}
