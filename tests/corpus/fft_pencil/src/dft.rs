//! Plain O(L²) discrete Fourier transforms and the serial 2-D reference.

use dist_runtime::Complex;

pub type C = Complex<f64>;

/// e^{-2πi k/len}
fn twiddle(k: usize, len: usize) -> C {
    let a = -2.0 * std::f64::consts::PI * (k % len) as f64 / len as f64;
    C::new(a.cos(), a.sin())
}

/// The DFT of `x` (any length).
pub fn dft(x: &[C]) -> Vec<C> {
    let len = x.len();
    (0..len)
        .map(|k| x.iter().enumerate().fold(C::new(0.0, 0.0), |acc, (j, v)| acc + v * twiddle(j * k, len)))
        .collect()
}

/// The DFT of a real row.
pub fn real_dft(row: &[f64]) -> Vec<C> {
    let x: Vec<C> = row.iter().map(|&v| C::new(v, 0.0)).collect();
    dft(&x)
}

/// X[k1][k2] = Σ_a Σ_b x[a][b] e^{-2πi (k1 a / n + k2 b / m)}, straight from the definition.
pub fn dft2_reference(grid: &[f64], n: usize, m: usize) -> Vec<C> {
    let mut out = vec![C::new(0.0, 0.0); n * m];
    for k1 in 0..n {
        for k2 in 0..m {
            let mut acc = C::new(0.0, 0.0);
            for a in 0..n {
                let wa = twiddle(k1 * a, n);
                for b in 0..m {
                    acc += wa * twiddle(k2 * b, m) * grid[a * m + b];
                }
            }
            out[k1 * m + k2] = acc;
        }
    }
    out
}

/// The grid's value at (a, b): a smooth part plus seeded noise, the same on every rank.
pub fn sample(seed: u64, a: usize, b: usize) -> f64 {
    let mut z = seed ^ ((a as u64) << 32 | b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    let noise = ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
    (0.3 * a as f64).sin() + (0.7 * b as f64).cos() + noise
}
