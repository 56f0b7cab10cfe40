//! The explicit update u' = u + α(u₋ − 2u + u₊) − κu and the residual.

#[derive(Debug, Clone, Copy)]
pub struct Scheme {
    pub alpha: f64,
    pub kappa: f64,
}

impl Scheme {
    #[inline]
    pub fn point(&self, left: f64, mid: f64, right: f64) -> f64 {
        mid + self.alpha * (left - 2.0 * mid + right) - self.kappa * mid
    }

    /// Updates every point of `u` whose two neighbours are inside `u` (1..len−1).
    pub fn interior(&self, u: &[f64], out: &mut [f64]) {
        for i in 1..u.len().saturating_sub(1) {
            out[i] = self.point(u[i - 1], u[i], u[i + 1]);
        }
    }

    /// Updates the first and last points, given the values beyond each end.
    pub fn edges(&self, u: &[f64], out: &mut [f64], beyond_left: f64, beyond_right: f64) {
        let last = u.len() - 1;
        let right_of_first = if last == 0 { beyond_right } else { u[1] };
        out[0] = self.point(beyond_left, u[0], right_of_first);
        if last > 0 {
            out[last] = self.point(u[last - 1], u[last], beyond_right);
        }
    }
}

/// Σ (new − old)² over a block.
pub fn squared_change(old: &[f64], new: &[f64]) -> f64 {
    old.iter().zip(new).map(|(a, b)| (b - a) * (b - a)).sum()
}
