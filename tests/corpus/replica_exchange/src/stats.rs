//! Per-replica statistics and their collection on rank 0.

use dist_runtime::prelude::*;

pub const FIELDS: usize = 6;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct SlotStats {
    /// Σ of the energy after every sweep.
    pub energy_sum: f64,
    pub final_energy: f64,
    pub magnetisation: f64,
    pub flips: f64,
    /// Swaps this slot attempted with the slot above it (it is the decider there).
    pub swaps_attempted: f64,
    pub swaps_accepted: f64,
}

impl SlotStats {
    pub fn to_row(&self) -> [f64; FIELDS] {
        [
            self.energy_sum,
            self.final_energy,
            self.magnetisation,
            self.flips,
            self.swaps_attempted,
            self.swaps_accepted,
        ]
    }

    pub fn from_row(row: &[f64]) -> Self {
        SlotStats {
            energy_sum: row[0],
            final_energy: row[1],
            magnetisation: row[2],
            flips: row[3],
            swaps_attempted: row[4],
            swaps_accepted: row[5],
        }
    }

    pub fn mean_energy(&self, sweeps: usize) -> f64 {
        if sweeps == 0 {
            self.final_energy
        } else {
            self.energy_sum / sweeps as f64
        }
    }
}

/// Everything rank 0 needs to check the run.
pub struct Collected {
    pub stats: Vec<SlotStats>,
    pub spins: Vec<Vec<i8>>,
    pub total_accepted: u64,
}

/// Gathers every slot's statistics and final configuration to rank 0; `None` elsewhere.
pub fn collect(world: &Comm<World>, stats: &SlotStats, spins: &[i8]) -> dist_runtime::Result<Option<Collected>> {
    let root = 0;
    let n = world.size();
    let row = stats.to_row();
    let accepted = [stats.swaps_accepted as u64];
    let mut total = accepted;
    world.all_reduce(&mut total, ReduceOp::Sum)?;

    let is_root = world.rank() == root;
    let mut rows = if is_root { vec![0.0f64; n * FIELDS] } else { Vec::new() };
    world.gather(&row, is_root.then_some(&mut rows[..]), root)?;
    let mut all_spins = if is_root { vec![0i8; n * spins.len()] } else { Vec::new() };
    world.gather(spins, is_root.then_some(&mut all_spins[..]), root)?;

    if !is_root {
        return Ok(None);
    }
    Ok(Some(Collected {
        stats: rows.chunks(FIELDS).map(SlotStats::from_row).collect(),
        spins: all_spins.chunks(spins.len()).map(<[i8]>::to_vec).collect(),
        total_accepted: total[0],
    }))
}
