//! Global sums and the final gather of the field to the root.

use crate::field::Field;
use crate::topology::Topology;
use dist_runtime::prelude::*;

pub const ROOT: usize = 0;
const META: usize = 5;

pub fn total(world: &Comm<World>, local: f64) -> dist_runtime::Result<f64> {
    let mut s = [local];
    world.all_reduce(&mut s, ReduceOp::Sum)?;
    Ok(s[0])
}

/// Σ u² over the whole field.
pub fn energy(world: &Comm<World>, f: &Field) -> dist_runtime::Result<f64> {
    total(world, f.interior().iter().map(|v| v * v).sum())
}

/// Gathers every block to the root, which assembles the nx × ny field.
pub fn gather_field(
    world: &Comm<World>,
    topo: &Topology,
    f: &Field,
    nx: usize,
    ny: usize,
) -> dist_runtime::Result<Option<Vec<f64>>> {
    let mine = f.interior();
    let mut offset = [mine.len() as u64];
    world.exscan(&mut offset, ReduceOp::Sum)?;
    let (x0, lx, y0, ly) = topo.my_block(nx, ny);
    let meta = [offset[0], x0 as u64, y0 as u64, lx as u64, ly as u64];
    let mut sizes = vec![0u64; world.size()];
    world.all_gather(&[mine.len() as u64], &mut sizes)?;
    let counts: Vec<usize> = sizes.iter().map(|&c| c as usize).collect();

    if world.rank() != ROOT {
        world.gather(&meta[..], None, ROOT)?;
        world.gather_v(&mine[..], None, &counts, ROOT)?;
        return Ok(None);
    }
    let mut metas = vec![0u64; META * world.size()];
    world.gather(&meta[..], Some(&mut metas[..]), ROOT)?;
    let mut flat = vec![0.0; counts.iter().sum()];
    world.gather_v(&mine[..], Some(&mut flat[..]), &counts, ROOT)?;
    let mut global = vec![f64::NAN; nx * ny];
    for m in metas.chunks(META) {
        let [off, x0, y0, lx, ly] = [m[0], m[1], m[2], m[3], m[4]].map(|v| v as usize);
        for j in 0..ly {
            global[(y0 + j) * nx + x0..(y0 + j) * nx + x0 + lx].copy_from_slice(&flat[off + j * lx..off + (j + 1) * lx]);
        }
    }
    Ok(Some(global))
}
