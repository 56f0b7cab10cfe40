//! The whole ensemble simulated in one process, drawing from the same streams.

use crate::config::Config;
use crate::ising::{swap_accepted, Chain};
use crate::replica::{chain_stream, pairing, swap_stream, Pairing};
use crate::rng::XorShift64;
use crate::stats::SlotStats;

pub struct Ensemble {
    pub stats: Vec<SlotStats>,
    pub spins: Vec<Vec<i8>>,
}

pub fn simulate(cfg: &Config, seed: u64, slots: usize) -> Ensemble {
    let betas: Vec<f64> = (0..slots).map(|s| cfg.beta(s, slots)).collect();
    let mut rngs: Vec<XorShift64> = (0..slots).map(|s| XorShift64::stream(seed, chain_stream(s))).collect();
    let mut swap_rngs: Vec<XorShift64> = (0..slots).map(|s| XorShift64::stream(seed, swap_stream(s))).collect();
    let mut chains: Vec<Chain> =
        rngs.iter_mut().map(|rng| Chain::random(cfg.spins, cfg.coupling, cfg.field, rng)).collect();
    let mut stats = vec![SlotStats::default(); slots];
    let mut rounds = 0;

    for sweep in 1..=cfg.sweeps {
        for s in 0..slots {
            stats[s].flips += chains[s].sweep(betas[s], &mut rngs[s]) as f64;
            stats[s].energy_sum += chains[s].energy();
        }
        if sweep % cfg.swap_every == 0 {
            let phase = rounds % 2;
            for s in 0..slots {
                if let Some(Pairing::Decider(p)) = pairing(s, slots, phase) {
                    let u = swap_rngs[s].next_f64();
                    let ok = swap_accepted(betas[s], chains[s].energy(), betas[p], chains[p].energy(), u);
                    stats[s].swaps_attempted += 1.0;
                    if ok {
                        stats[s].swaps_accepted += 1.0;
                        let (lo, hi) = chains.split_at_mut(p);
                        std::mem::swap(&mut lo[s].spins, &mut hi[0].spins);
                    }
                }
            }
            rounds += 1;
        }
    }
    for (st, c) in stats.iter_mut().zip(&chains) {
        st.final_energy = c.energy();
        st.magnetisation = c.magnetisation() as f64;
    }
    Ensemble { stats, spins: chains.into_iter().map(|c| c.spins).collect() }
}
