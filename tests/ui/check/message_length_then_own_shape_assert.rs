// A reduction tree of small square factors (TSQR's R factors): each child sends its
// (k+1)×(k+1) factor, the parent receives it into a k×k buffer (the stale size), and the
// parent's own helper asserts the shape right after. The receive fails first at run
// time; the check reports it there, not losing it because the run then ends in the
// program's own panic.
use dist_runtime::prelude::*;

const R: Tag<f64> = Tag::new(1);

mod linalg {
    /// Stacks two n×n factors and returns the combined one (here: their sum).
    pub fn combine(a: &[f64], b: &[f64], n: usize) -> Vec<f64> {
        assert_eq!(a.len(), n * n, "factor of the wrong shape");
        assert_eq!(b.len(), n * n, "factor of the wrong shape");
        a.iter().zip(b).map(|(x, y)| x + y).collect()
    }
}

#[spmd(ranks = 2)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let k = 3;
    let n = k + 1;
    let (rank, size) = (world.rank(), world.size());
    let mut r = vec![rank as f64; n * n];
    let mut step = 1;
    while step < size {
        if rank % (2 * step) == 0 {
            if rank + step < size {
                let mut other = vec![0.0; k * k];
                world.recv(rank + step, R, &mut other)?;
                r = linalg::combine(&r, &other, n);
            }
        } else {
            world.send(rank - step, R, &r)?;
            break;
        }
        step *= 2;
    }
    Ok(())
}
