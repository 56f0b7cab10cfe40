//! Particles: generation, the push, packing into f64 records, the serial simulation.

use crate::config::{Boundary, Config};
use crate::domain::{substeps_for, LENGTH};

/// f64 values per packed particle: id, x, v, m.
pub const FIELDS: usize = 4;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Particle {
    pub id: u64,
    pub x: f64,
    pub v: f64,
    pub m: f64,
}

struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// All particles of the run; every rank draws the same ones.
pub fn generate(count: usize, vmax: f64, seed: u64) -> Vec<Particle> {
    let mut g = Rng(seed);
    (0..count as u64)
        .map(|id| Particle { id, x: g.unit() * LENGTH, v: (2.0 * g.unit() - 1.0) * vmax, m: 1.0 + g.unit() })
        .collect()
}

impl Particle {
    /// Moves the particle by `dt` and applies the outer boundary.
    pub fn push(&mut self, dt: f64, boundary: Boundary) {
        self.x += self.v * dt;
        match boundary {
            Boundary::Periodic => {
                self.x = self.x.rem_euclid(LENGTH);
                if self.x >= LENGTH {
                    self.x -= LENGTH;
                }
            }
            Boundary::Reflect if self.x < 0.0 => {
                self.x = -self.x;
                self.v = -self.v;
            }
            Boundary::Reflect if self.x >= LENGTH => {
                self.x = 2.0 * LENGTH - self.x;
                self.v = -self.v;
            }
            Boundary::Reflect => {}
        }
    }
}

pub fn pack(ps: &[Particle]) -> Vec<f64> {
    ps.iter().flat_map(|p| [p.id as f64, p.x, p.v, p.m]).collect()
}

pub fn unpack(data: &[f64]) -> Vec<Particle> {
    data.chunks_exact(FIELDS).map(|c| Particle { id: c[0] as u64, x: c[1], v: c[2], m: c[3] }).collect()
}

pub fn momentum(ps: &[Particle]) -> f64 {
    ps.iter().map(|p| p.m * p.v).sum()
}

/// The same simulation in one process: final particles and (count, momentum) reports.
pub fn serial_run(all: &[Particle], cfg: &Config, n: usize) -> (Vec<Particle>, Vec<(u64, f64)>) {
    let mut ps = all.to_vec();
    let vmax = ps.iter().map(|p| p.v.abs()).fold(0.0, f64::max);
    let substeps = substeps_for(vmax, cfg.dt, LENGTH / n as f64);
    let mut reports = Vec::new();
    for step in 0..cfg.steps {
        for _ in 0..substeps {
            ps.iter_mut().for_each(|p| p.push(cfg.dt / substeps as f64, cfg.boundary));
        }
        if (step + 1) % cfg.report_every == 0 {
            reports.push((ps.len() as u64, momentum(&ps)));
        }
    }
    (ps, reports)
}
