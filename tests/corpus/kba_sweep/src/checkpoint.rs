//! A sharded checkpoint of the scalar flux, gathered on rank 0 and scattered back.
//!
//! Each rank's shard is its scalar flux followed by `rank % 3` diagnostics values, so the
//! shards have different lengths.

use dist_runtime::prelude::*;

use crate::grid::ProcGrid;

pub const ROOT: usize = 0;

/// Length of the shard of `rank` for blocks of `cells` cells.
pub fn shard_len(cells: usize, rank: usize) -> usize {
    cells + rank % 3
}

/// This rank's shard: the scalar flux, then `rank % 3` diagnostics values
/// (block total, largest value).
pub fn make_shard(world_rank: usize, phi: &[f64]) -> Vec<f64> {
    let diagnostics = [phi.iter().sum::<f64>(), phi.iter().cloned().fold(f64::MIN, f64::max)];
    let mut shard = phi.to_vec();
    shard.extend_from_slice(&diagnostics[..world_rank % 3]);
    shard
}

/// Order-independent checksum of a slice of floats (wrapping sum of their bits).
pub fn checksum(xs: &[f64]) -> u64 {
    xs.iter().fold(0u64, |acc, x| acc.wrapping_add(x.to_bits().rotate_left(7)))
}

/// What the root keeps of a saved checkpoint.
pub struct Saved {
    pub lengths: Vec<usize>,
    pub data: Vec<f64>,
}

/// Gathers every rank's shard on the root and checks the root's copy against the
/// ranks' own checksums. Returns the root's copy on the root.
pub fn save(grid: &ProcGrid, shard: &[f64], cells: usize) -> Result<Option<Saved>, Box<dyn std::error::Error>> {
    let world = &grid.world;
    let (rank, n) = (world.rank(), world.size());
    let mine = [shard.len() as u64];
    let mut lengths = vec![0u64; n];
    if rank == ROOT {
        world.gather(&mine, Some(&mut lengths[..]), ROOT)?;
    } else {
        world.gather(&mine, None, ROOT)?;
    }
    let counts: Vec<usize> = if rank == ROOT {
        lengths.iter().map(|&l| l as usize).collect()
    } else {
        (0..n).map(|r| shard_len(cells, r)).collect()
    };
    let mut data = vec![0.0; if rank == ROOT { counts.iter().sum() } else { 0 }];
    if rank == ROOT {
        world.gather_v(shard, Some(&mut data[..]), &counts, ROOT)?;
    } else {
        world.gather_v(shard, None, &counts, ROOT)?;
    }
    let mut sum = [checksum(shard)];
    world.all_reduce(&mut sum, ReduceOp::Sum)?;
    if rank == ROOT {
        let got = checksum(&data);
        if got != sum[0] {
            return Err(format!("checkpoint checksum {got:#x} on the root, {:#x} from the ranks", sum[0]).into());
        }
        println!("checkpoint: {} values from {n} ranks, checksum {got:#018x}", data.len());
        Ok(Some(Saved { lengths: counts, data }))
    } else {
        Ok(None)
    }
}

/// Scatters the root's copy back and checks that every rank got its own shard.
pub fn restore(grid: &ProcGrid, saved: Option<&Saved>, shard: &[f64], cells: usize) -> Result<(), Box<dyn std::error::Error>> {
    let world = &grid.world;
    let (rank, n) = (world.rank(), world.size());
    let counts: Vec<usize> = match saved {
        Some(s) => s.lengths.clone(),
        None => (0..n).map(|r| shard_len(cells, r)).collect(),
    };
    let mut back = vec![0.0; counts[rank]];
    world.scatter_v(saved.map(|s| &s.data[..]), &mut back, &counts, ROOT)?;
    if back != shard {
        return Err(format!("rank {rank}: restored shard differs from the saved one").into());
    }
    let mut ok = [1u32];
    world.all_reduce(&mut ok, ReduceOp::Min)?;
    if rank == ROOT {
        println!("checkpoint restored on all {n} ranks");
    }
    Ok(())
}
