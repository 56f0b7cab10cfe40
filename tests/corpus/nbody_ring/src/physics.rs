//! Bodies, the pairwise kernel and the serial reference integrator.

pub const GRAV: f64 = 1.0;
/// Doubles per body on the wire: x, y, z, mass.
pub const PACKED: usize = 4;

#[derive(Debug, Clone, Copy, Default)]
pub struct Body {
    pub pos: [f64; 3],
    pub vel: [f64; 3],
    pub mass: f64,
}

/// SplitMix64, so every rank draws the same initial conditions.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [lo, hi).
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
    }
}

pub fn initial_bodies(n: usize, seed: u64) -> Vec<Body> {
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|_| Body {
            pos: [rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), rng.range(-1.0, 1.0)],
            vel: [rng.range(-0.1, 0.1), rng.range(-0.1, 0.1), rng.range(-0.1, 0.1)],
            mass: rng.range(0.5, 1.5),
        })
        .collect()
}

/// Acceleration that a source of mass `m` at `src` gives to a body at `at`.
#[inline]
pub fn accel_from(at: &[f64; 3], src: &[f64], m: f64, eps2: f64) -> [f64; 3] {
    let d = [src[0] - at[0], src[1] - at[1], src[2] - at[2]];
    let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + eps2;
    let inv = GRAV * m / (r2 * r2.sqrt());
    [d[0] * inv, d[1] * inv, d[2] * inv]
}

#[inline]
pub fn pair_potential(a: &[f64; 3], b: &[f64], ma: f64, mb: f64, eps2: f64) -> f64 {
    let d = [b[0] - a[0], b[1] - a[1], b[2] - a[2]];
    -GRAV * ma * mb / (d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + eps2).sqrt()
}

pub fn kinetic(bodies: &[Body]) -> f64 {
    bodies.iter().map(|b| 0.5 * b.mass * b.vel.iter().map(|v| v * v).sum::<f64>()).sum()
}

/// Kick then drift with the given accelerations.
pub fn integrate(bodies: &mut [Body], acc: &[[f64; 3]], dt: f64) {
    for (b, a) in bodies.iter_mut().zip(acc) {
        for k in 0..3 {
            b.vel[k] += a[k] * dt;
            b.pos[k] += b.vel[k] * dt;
        }
    }
}

/// The all-pairs reference on one process.
pub struct SerialSim {
    pub bodies: Vec<Body>,
    eps2: f64,
    dt: f64,
}

impl SerialSim {
    pub fn new(bodies: Vec<Body>, softening: f64, dt: f64) -> SerialSim {
        SerialSim { bodies, eps2: softening * softening, dt }
    }

    pub fn step(&mut self) {
        let acc: Vec<[f64; 3]> = (0..self.bodies.len())
            .map(|i| {
                let mut a = [0.0; 3];
                for (j, src) in self.bodies.iter().enumerate() {
                    if i != j {
                        let d = accel_from(&self.bodies[i].pos, &src.pos, src.mass, self.eps2);
                        a.iter_mut().zip(d).for_each(|(x, y)| *x += y);
                    }
                }
                a
            })
            .collect();
        integrate(&mut self.bodies, &acc, self.dt);
    }

    pub fn energy(&self) -> f64 {
        let mut pot = 0.0;
        for i in 0..self.bodies.len() {
            for j in i + 1..self.bodies.len() {
                let (a, b) = (&self.bodies[i], &self.bodies[j]);
                pot += pair_potential(&a.pos, &b.pos, a.mass, b.mass, self.eps2);
            }
        }
        kinetic(&self.bodies) + pot
    }
}
