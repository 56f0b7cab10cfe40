// A 2-D process grid (`px × py`, the most square) over an `--nx` × `--nx` grid that the
// program refuses below one column a rank. The x-direction halo exists only where
// `px > 1` (world sizes 4, 6, 8), and there its receive from the right takes the
// wrong tag. With the inputs' small samples (1, 2, 3) every run at size 4 is refused:
// the check tries numbers past the size (5) before taking the size as unsupported.
use dist_runtime::prelude::*;

const TO_LOW: Tag<f64> = Tag::new(1);
const TO_HIGH: Tag<f64> = Tag::new(2);

fn factor2(size: usize) -> (usize, usize) {
    let px = (1..=size).take_while(|d| d * d <= size).filter(|d| size % d == 0).last().unwrap_or(1);
    (px, size / px)
}

/// `--nx N`, required.
fn nx_flag() -> Option<usize> {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == "--nx").and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok())
}

#[spmd(sizes = 1..=4)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let Some(nx) = nx_flag() else {
        return Err(dist_runtime::Error::Env("usage: --nx N".into()));
    };
    if nx < world.size() {
        return Err(dist_runtime::Error::Env(format!("--nx {nx} is too small for {} ranks", world.size())));
    }
    let (px, py) = factor2(world.size());
    let (cx, cy) = (world.rank() / py, world.rank() % py);
    let face = vec![1.0f64; nx / py];
    let (mut from_left, mut from_right) = (vec![0.0f64; nx / py], vec![0.0f64; nx / py]);
    let mut reqs = Vec::new();
    if cx > 0 {
        let left = (cx - 1) * py + cy;
        reqs.push(world.irecv(left, TO_HIGH, &mut from_left)?);
        reqs.push(world.isend(left, TO_LOW, &face)?);
    }
    if cx + 1 < px {
        let right = (cx + 1) * py + cy;
        reqs.push(world.irecv(right, TO_HIGH, &mut from_right)?);
        reqs.push(world.isend(right, TO_HIGH, &face)?);
    }
    dist_runtime::wait_all(reqs)?;
    Ok(())
}
