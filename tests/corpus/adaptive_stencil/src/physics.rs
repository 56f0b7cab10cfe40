//! The explicit advection-diffusion update and the cost model, shared by the
//! distributed and the serial solver so both compute the same bits.

/// Initial state: a bump near the left end.
pub fn initial(cells: usize) -> Vec<f64> {
    (0..cells)
        .map(|i| {
            let x = (i as f64 + 0.5) / cells as f64;
            (-((x - 0.25) / 0.06).powi(2)).exp()
        })
        .collect()
}

/// One explicit step of the interior of `u` (whose first and last items are ghosts):
/// diffusion `nu` and upwind advection to the right at `speed`.
pub fn advance(u: &[f64], nu: f64, speed: f64) -> Vec<f64> {
    u.windows(3).map(|w| w[1] + nu * (w[0] - 2.0 * w[1] + w[2]) - speed * (w[1] - w[0])).collect()
}

/// Work a cell costs: cells where the solution is active are refined.
pub fn cell_cost(v: f64) -> f64 {
    if v.abs() > 0.02 { 6.0 } else { 1.0 }
}
