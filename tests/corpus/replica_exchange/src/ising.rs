//! A periodic 1-D Ising chain with a Metropolis sweep.

use crate::rng::XorShift64;

#[derive(Debug, Clone, PartialEq)]
pub struct Chain {
    pub spins: Vec<i8>,
    coupling: f64,
    field: f64,
}

impl Chain {
    /// A random chain drawn from `rng`.
    pub fn random(len: usize, coupling: f64, field: f64, rng: &mut XorShift64) -> Self {
        let spins = (0..len).map(|_| if rng.next_u64() & 1 == 0 { 1 } else { -1 }).collect();
        Chain { spins, coupling, field }
    }

    pub fn len(&self) -> usize {
        self.spins.len()
    }

    fn neighbours(&self, i: usize) -> (i8, i8) {
        let n = self.len();
        (self.spins[(i + n - 1) % n], self.spins[(i + 1) % n])
    }

    /// E = -J Σ s_i s_{i+1} - h Σ s_i.
    pub fn energy(&self) -> f64 {
        let n = self.len();
        let bonds: i64 = (0..n).map(|i| (self.spins[i] as i64) * (self.spins[(i + 1) % n] as i64)).sum();
        let mag: i64 = self.spins.iter().map(|&s| s as i64).sum();
        -self.coupling * bonds as f64 - self.field * mag as f64
    }

    pub fn magnetisation(&self) -> i64 {
        self.spins.iter().map(|&s| s as i64).sum()
    }

    /// One Metropolis sweep in site order at inverse temperature `beta`. Returns the
    /// number of accepted flips. One uniform is drawn per site whatever the outcome.
    pub fn sweep(&mut self, beta: f64, rng: &mut XorShift64) -> u64 {
        let mut flips = 0;
        for i in 0..self.len() {
            let (l, r) = self.neighbours(i);
            let s = self.spins[i] as f64;
            let d_e = 2.0 * s * (self.coupling * (l as f64 + r as f64) + self.field);
            let u = rng.next_f64();
            if d_e <= 0.0 || u < (-beta * d_e).exp() {
                self.spins[i] = -self.spins[i];
                flips += 1;
            }
        }
        flips
    }
}

/// Metropolis criterion for exchanging the configurations of two replicas.
pub fn swap_accepted(beta_a: f64, e_a: f64, beta_b: f64, e_b: f64, u: f64) -> bool {
    let log_ratio = (beta_a - beta_b) * (e_a - e_b);
    log_ratio >= 0.0 || u < log_ratio.exp()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn energy_of_aligned_chain() {
        let c = Chain { spins: vec![1; 8], coupling: 1.0, field: 0.5 };
        assert_eq!(c.energy(), -8.0 - 4.0);
    }
}
