//! The 1-D domain [0, LENGTH) cut into one slab per rank.

use crate::config::Boundary;
use crate::particle::Particle;

pub const LENGTH: f64 = 1.0;

/// Sub-steps per step so that no particle crosses more than half a slab per sub-step.
pub fn substeps_for(vmax: f64, dt: f64, width: f64) -> usize {
    ((vmax * dt / (0.5 * width)).ceil() as usize).max(1)
}

pub struct Domain {
    pub n: usize,
    pub rank: usize,
    pub boundary: Boundary,
}

/// Where a particle goes after a sub-step.
pub enum Dest {
    Stay,
    Left,
    Right,
}

impl Domain {
    pub fn new(n: usize, rank: usize, boundary: Boundary) -> Domain {
        Domain { n, rank, boundary }
    }

    pub fn width(&self) -> f64 {
        LENGTH / self.n as f64
    }

    pub fn slab_of(&self, x: f64) -> usize {
        ((x / self.width()) as usize).min(self.n - 1)
    }

    /// The rank particles leaving through the left edge go to, if any.
    pub fn left(&self) -> Option<usize> {
        match self.boundary {
            _ if self.n == 1 => None,
            Boundary::Periodic => Some((self.rank + self.n - 1) % self.n),
            Boundary::Reflect => self.rank.checked_sub(1),
        }
    }

    /// The rank particles leaving through the right edge go to, if any.
    pub fn right(&self) -> Option<usize> {
        match self.boundary {
            _ if self.n == 1 => None,
            Boundary::Periodic => Some((self.rank + 1) % self.n),
            Boundary::Reflect => Some(self.rank + 1).filter(|&r| r < self.n),
        }
    }

    pub fn dest(&self, p: &Particle) -> Dest {
        let (s, me, n) = (self.slab_of(p.x), self.rank, self.n);
        // The slabs next to ours (the boundary decides whether the ends wrap).
        let (next, prev) = match self.boundary {
            Boundary::Periodic => ((me + 1) % n, (me + n - 1) % n),
            Boundary::Reflect => (me + 1, me.wrapping_sub(1)),
        };
        if s == me {
            Dest::Stay
        } else if s == next {
            Dest::Right
        } else if s == prev {
            Dest::Left
        } else {
            panic!("particle {} jumped from slab {me} to slab {s}", p.id)
        }
    }

    /// Pushes every particle by `dt`; returns (staying, leaving left, leaving right).
    pub fn advance(&self, ps: Vec<Particle>, dt: f64) -> (Vec<Particle>, Vec<Particle>, Vec<Particle>) {
        let (mut stay, mut left, mut right) = (Vec::new(), Vec::new(), Vec::new());
        for mut p in ps {
            p.push(dt, self.boundary);
            match self.dest(&p) {
                Dest::Stay => stay.push(p),
                Dest::Left => left.push(p),
                Dest::Right => right.push(p),
            }
        }
        (stay, left, right)
    }
}
