// A serial reference with a helper named like the distributed one (`apply`).
pub fn apply(n: usize, p: &[f64], y: &mut [f64]) {
    for i in 0..n {
        y[i] = 2.0 * p[i];
    }
}

pub fn solve(n: usize) -> Vec<f64> {
    let p = vec![1.0; n];
    let mut y = vec![0.0; n];
    apply(n, &p, &mut y);
    y
}
