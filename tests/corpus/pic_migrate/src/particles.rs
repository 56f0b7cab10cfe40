//! Particles in a periodic 1-D box [0, LENGTH) pushed through a fixed electric field.

use std::f64::consts::PI;

pub const LENGTH: f64 = 1.0;
pub const DT: f64 = 0.01;
const AMPLITUDE: f64 = 1.5;
const WAVENUMBER: f64 = 2.0 * PI / LENGTH;

/// f64s per particle on the wire: id, x, v.
pub const PACKED: usize = 3;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Particle {
    pub id: u64,
    pub x: f64,
    pub v: f64,
}

impl Particle {
    /// Semi-implicit Euler: kick, then drift, then wrap into the box.
    pub fn push(&mut self) {
        self.v += DT * field(self.x);
        self.x = (self.x + DT * self.v).rem_euclid(LENGTH);
    }

    pub fn energy(&self) -> f64 {
        0.5 * self.v * self.v + potential(self.x)
    }
}

pub fn field(x: f64) -> f64 {
    -AMPLITUDE * (WAVENUMBER * x).sin()
}

fn potential(x: f64) -> f64 {
    -AMPLITUDE / WAVENUMBER * (WAVENUMBER * x).cos()
}

pub fn pack(ps: &[Particle]) -> Vec<f64> {
    ps.iter().flat_map(|p| [p.id as f64, p.x, p.v]).collect()
}

pub fn unpack(buf: &[f64]) -> Vec<Particle> {
    buf.chunks_exact(PACKED).map(|c| Particle { id: c[0] as u64, x: c[1], v: c[2] }).collect()
}

/// The same initial particles on every rank, from the seed.
pub fn initial(count: usize, seed: u64) -> Vec<Particle> {
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let mut uniform = move || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    (0..count as u64).map(|id| Particle { id, x: uniform() * LENGTH, v: uniform() - 0.5 }).collect()
}

/// The slice of the box a rank owns: [lo, hi).
#[derive(Clone, Copy, Debug)]
pub struct Domain {
    pub rank: usize,
    pub ranks: usize,
}

impl Domain {
    pub fn owner_of(&self, x: f64) -> usize {
        ((x / LENGTH * self.ranks as f64) as usize).min(self.ranks - 1)
    }

    pub fn owns(&self, x: f64) -> bool {
        self.owner_of(x) == self.rank
    }

    pub fn bounds(&self) -> (f64, f64) {
        let w = LENGTH / self.ranks as f64;
        (self.rank as f64 * w, (self.rank + 1) as f64 * w)
    }
}

/// Every particle pushed `steps` times in one process: the reference.
pub fn simulate_serial(mut ps: Vec<Particle>, steps: usize) -> Vec<Particle> {
    for _ in 0..steps {
        ps.iter_mut().for_each(Particle::push);
    }
    ps
}
