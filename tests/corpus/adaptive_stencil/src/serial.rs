//! The whole domain in one process.

use crate::physics::{advance, initial};
use crate::settings::Settings;

/// Runs until the residual falls below `tol` or `steps` are done; returns the cells and the steps taken.
pub fn solve(s: &Settings) -> (Vec<f64>, usize) {
    let mut u = vec![0.0];
    u.extend(initial(s.cells));
    u.push(0.0);
    let mut taken = 0;
    for _ in 0..s.steps {
        let next = advance(&u, s.nu, s.speed);
        let res = next.iter().zip(&u[1..]).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        u[1..=s.cells].copy_from_slice(&next);
        taken += 1;
        if res < s.tol {
            break;
        }
    }
    (u[1..=s.cells].to_vec(), taken)
}
