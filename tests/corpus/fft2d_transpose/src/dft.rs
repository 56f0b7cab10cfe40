//! A hand-written complex DFT and the serial 2-D reference.

use dist_runtime::Complex;

pub type C64 = Complex<f64>;

/// Forward DFT of one line, out of place.
pub fn dft(line: &[C64]) -> Vec<C64> {
    let n = line.len();
    (0..n)
        .map(|k| {
            line.iter().enumerate().fold(C64::new(0.0, 0.0), |acc, (j, &x)| {
                let ang = -2.0 * std::f64::consts::PI * ((j * k) % n) as f64 / n as f64;
                acc + x * C64::new(ang.cos(), ang.sin())
            })
        })
        .collect()
}

/// DFT of every row of a row-major `rows × cols` block, in place.
pub fn dft_rows(block: &mut [C64], cols: usize) {
    if cols == 0 {
        return;
    }
    for row in block.chunks_mut(cols) {
        let out = dft(row);
        row.copy_from_slice(&out);
    }
}

/// The deterministic test grid, value at (i, j).
pub fn input(i: usize, j: usize) -> C64 {
    let x = (i * 31 + j * 17) % 23;
    C64::new(x as f64 / 23.0 - 0.5, ((i + 2 * j) % 7) as f64 * 0.1)
}

/// The serial 2-D DFT of the whole grid (row-major).
pub fn serial_2d(rows: usize, cols: usize) -> Vec<C64> {
    let mut a: Vec<C64> = (0..rows).flat_map(|i| (0..cols).map(move |j| input(i, j))).collect();
    dft_rows(&mut a, cols);
    let mut t = transpose(&a, rows, cols);
    dft_rows(&mut t, rows);
    transpose(&t, cols, rows)
}

pub fn transpose(a: &[C64], rows: usize, cols: usize) -> Vec<C64> {
    let mut t = vec![C64::new(0.0, 0.0); rows * cols];
    for i in 0..rows {
        for j in 0..cols {
            t[j * rows + i] = a[i * cols + j];
        }
    }
    t
}

pub fn max_err(a: &[C64], b: &[C64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).norm_sqr().sqrt()).fold(0.0, f64::max)
}
