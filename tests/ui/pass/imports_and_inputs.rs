// Ordinary code the check follows whole: two modules define a function of one name (a
// local matrix transpose and a distributed one) and each caller gets the one its `use`
// names, renamed or through a glob; a helper returning an `Option` uses `?` on one; a
// flag parser walks the arguments in pairs with a slice pattern and reads a list flag
// (`--lens 0,1,5`) with `split`.
#![deny(deprecated)]
use dist_runtime::prelude::*;
dist_runtime::group!(Rows);
dist_runtime::group!(Cols);

mod dft {
    /// The local transpose: no communication.
    pub fn transpose(a: &[f64], rows: usize, cols: usize) -> Vec<f64> {
        let mut t = vec![0.0; a.len()];
        for i in 0..rows {
            for j in 0..cols {
                t[j * rows + i] = a[i * cols + j];
            }
        }
        t
    }
}

mod dist_t {
    use dist_runtime::prelude::*;
    use dist_runtime::Group;

    /// The distributed transpose: one all_to_all.
    pub fn transpose<G: Group>(comm: &Comm<G>, local: &[f64]) -> dist_runtime::Result<Vec<f64>> {
        let mut out = vec![0.0; local.len()];
        comm.all_to_all(local, &mut out)?;
        Ok(out)
    }
}

mod layout {
    /// A `pr × pc` grid of `n` ranks with `pr` the largest divisor up to its square
    /// root; `None` when there is none past 1.
    pub fn grid(n: usize) -> Option<(usize, usize)> {
        let pr = (1..=n).take_while(|d| d * d <= n).filter(|d| n % d == 0).last()?;
        if pr == 1 {
            None
        } else {
            Some((pr, n / pr))
        }
    }
}

mod slab {
    use crate::dft;
    use crate::dist_t::transpose;
    use dist_runtime::prelude::*;

    pub fn forward(world: &Comm<World>, local: &[f64]) -> dist_runtime::Result<Vec<f64>> {
        let t = dft::transpose(local, 1, local.len());
        transpose(world, &t)
    }
}

mod pencil {
    use crate::dist_t as d;
    use crate::layout::*;
    use dist_runtime::prelude::*;

    pub fn forward(world: &Comm<World>, local: &[f64]) -> dist_runtime::Result<Option<Vec<f64>>> {
        let Some((pr, pc)) = grid(world.size()) else { return Ok(None) };
        let (rows, cols) = world.mesh2::<crate::Rows, crate::Cols>(pr, pc)?;
        let a = d::transpose(&rows, &local[..rows.size()])?;
        Ok(Some(d::transpose(&cols, &a[..cols.size()])?))
    }
}

struct Opts {
    root: usize,
    lens: Vec<usize>,
}

fn parse() -> Result<Opts, String> {
    let mut o = Opts { root: 0, lens: vec![0, 3] };
    let args: Vec<String> = std::env::args().skip(1).collect();
    for pair in args.chunks(2) {
        let [flag, value] = pair else {
            return Err(format!("flag {} has no value", pair[0]));
        };
        match flag.as_str() {
            "--root" => o.root = value.parse().map_err(|e| format!("--root {value}: {e}"))?,
            "--lens" => {
                o.lens = value
                    .split(',')
                    .map(|s| s.trim().parse::<usize>().map_err(|e| format!("--lens {s}: {e}")))
                    .collect::<Result<_, _>>()?
            }
            other => return Err(format!("unknown flag {other}")),
        }
    }
    Ok(o)
}

#[spmd]
fn main(world: Comm<World>) -> Result<(), Box<dyn std::error::Error>> {
    let opts = parse()?;
    let n = world.size();
    let local = vec![1.0; 12 * n];
    let a = slab::forward(&world, &local)?;
    let _b = pencil::forward(&world, &a)?;
    let mut roots = vec![opts.root % n, n - 1, n / 2];
    roots.sort_unstable();
    roots.dedup();
    for &len in &opts.lens {
        for &root in &roots {
            let mut x = vec![0i64; len];
            world.broadcast(&mut x, root)?;
        }
    }
    Ok(())
}
