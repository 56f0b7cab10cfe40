//! One replica of the parallel-tempering ensemble, owned by one rank.

use dist_runtime::prelude::*;

use crate::config::Config;
use crate::ising::{swap_accepted, Chain};
use crate::rng::XorShift64;
use crate::stats::SlotStats;

const ENERGY: Tag<f64> = Tag::new(10);
const DECISION: Tag<u8> = Tag::new(11);
const SPINS: Tag<i8> = Tag::new(12);

/// Stream ids: the chain's own draws and the swap decisions of a slot.
pub fn chain_stream(slot: usize) -> u64 {
    2 * slot as u64
}
pub fn swap_stream(slot: usize) -> u64 {
    2 * slot as u64 + 1
}

/// Which neighbour a slot pairs with in a swap phase, and who decides.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pairing {
    /// The partner is the slot above; this slot draws and sends the decision.
    Decider(usize),
    /// The partner is the slot below; this slot waits for its decision.
    Follower(usize),
}

impl Pairing {
    pub fn peer(self) -> usize {
        match self {
            Pairing::Decider(p) | Pairing::Follower(p) => p,
        }
    }
}

/// Even phases pair (0,1), (2,3), …; odd phases pair (1,2), (3,4), ….
pub fn pairing(slot: usize, slots: usize, phase: usize) -> Option<Pairing> {
    if slot % 2 == phase % 2 {
        (slot + 1 < slots).then_some(Pairing::Decider(slot + 1))
    } else {
        (slot >= 1).then(|| Pairing::Follower(slot - 1))
    }
}

pub struct Replica {
    world: Comm<World>,
    slot: usize,
    slots: usize,
    betas: Vec<f64>,
    chain: Chain,
    rng: XorShift64,
    swap_rng: XorShift64,
    scratch: Vec<i8>,
    swap_rounds: usize,
    pub stats: SlotStats,
}

impl Replica {
    pub fn new(world: Comm<World>, cfg: &Config, seed: u64) -> Self {
        let slot = world.rank();
        let slots = world.size();
        let betas = (0..slots).map(|s| cfg.beta(s, slots)).collect();
        let mut rng = XorShift64::stream(seed, chain_stream(slot));
        let chain = Chain::random(cfg.spins, cfg.coupling, cfg.field, &mut rng);
        Replica {
            world,
            slot,
            slots,
            betas,
            scratch: vec![0; chain.len()],
            chain,
            rng,
            swap_rng: XorShift64::stream(seed, swap_stream(slot)),
            swap_rounds: 0,
            stats: SlotStats::default(),
        }
    }

    pub fn spins(&self) -> &[i8] {
        &self.chain.spins
    }

    fn beta(&self) -> f64 {
        self.betas[self.slot]
    }

    fn sweep(&mut self) {
        let beta = self.beta();
        self.stats.flips += self.chain.sweep(beta, &mut self.rng) as f64;
        self.stats.energy_sum += self.chain.energy();
    }

    /// One swap attempt with this phase's partner, if any. Returns whether the
    /// configurations were exchanged.
    pub fn attempt_swap(&mut self, phase: usize) -> dist_runtime::Result<bool> {
        let Some(pair) = pairing(self.slot, self.slots, phase) else {
            return Ok(false);
        };
        let peer = pair.peer();
        // The proposal carries the energy and the configuration both ways, so that an
        // accepted swap needs no second round trip.
        let mine = [self.chain.energy()];
        let mut theirs = [0.0f64];
        self.world.sendrecv(peer, ENERGY, &mine, peer, &mut theirs)?;
        self.world.sendrecv(peer, SPINS, &self.chain.spins, peer, &mut self.scratch)?;

        let accepted = match pair {
            Pairing::Decider(_) => {
                let u = self.swap_rng.next_f64();
                let ok = swap_accepted(self.beta(), mine[0], self.betas[peer], theirs[0], u);
                self.world.send(peer, DECISION, &[ok as u8])?;
                self.stats.swaps_attempted += 1.0;
                if ok {
                    self.stats.swaps_accepted += 1.0;
                }
                ok
            }
            Pairing::Follower(_) => {
                let mut decision = [0u8];
                self.world.recv(peer, DECISION, &mut decision)?;
                decision[0] == 1
            }
        };

        if accepted {
            std::mem::swap(&mut self.chain.spins, &mut self.scratch);
        }
        Ok(accepted)
    }

    /// The whole schedule: sweeps, with a swap phase after every `swap_every` of them.
    pub fn run(&mut self, cfg: &Config) -> dist_runtime::Result<()> {
        for sweep in 1..=cfg.sweeps {
            self.sweep();
            if sweep % cfg.swap_every == 0 {
                // Even and odd pairings alternate from one swap phase to the next.
                let phase = (sweep / cfg.swap_every + 1) % 2;
                self.attempt_swap(phase)?;
                self.swap_rounds += 1;
            }
        }
        self.stats.final_energy = self.chain.energy();
        self.stats.magnetisation = self.chain.magnetisation() as f64;
        Ok(())
    }
}
