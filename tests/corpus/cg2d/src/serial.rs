//! Serial CG on the whole mesh: the reference.

use crate::solver::rhs;

pub struct Serial {
    pub x: Vec<f64>,
    pub iterations: usize,
}

fn apply(nx: usize, ny: usize, p: &[f64], y: &mut [f64]) {
    let at = |i: isize, j: isize| -> f64 {
        if i < 0 || j < 0 || i >= nx as isize || j >= ny as isize {
            0.0
        } else {
            p[j as usize * nx + i as usize]
        }
    };
    for j in 0..ny {
        for i in 0..nx {
            let (a, b) = (i as isize, j as isize);
            y[j * nx + i] = 4.0 * at(a, b) - at(a - 1, b) - at(a + 1, b) - at(a, b - 1) - at(a, b + 1);
        }
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

pub fn solve(nx: usize, ny: usize, max_iter: usize, tol: f64) -> Serial {
    let b: Vec<f64> = (0..ny).flat_map(|j| (0..nx).map(move |i| rhs(i, j))).collect();
    let mut x = vec![0.0; nx * ny];
    let mut r = b.clone();
    let mut p = b.clone();
    let mut ap = vec![0.0; nx * ny];
    let bnorm = dot(&b, &b).sqrt();
    let mut rr = dot(&r, &r);
    let mut it = 0;
    while it < max_iter {
        apply(nx, ny, &p, &mut ap);
        let alpha = rr / dot(&p, &ap);
        x.iter_mut().zip(&p).for_each(|(x, p)| *x += alpha * p);
        r.iter_mut().zip(&ap).for_each(|(r, a)| *r -= alpha * a);
        let rr_new = dot(&r, &r);
        it += 1;
        if rr_new.sqrt() <= tol * bnorm {
            break;
        }
        let beta = rr_new / rr;
        p.iter_mut().zip(&r).for_each(|(p, r)| *p = r + beta * *p);
        rr = rr_new;
    }
    Serial { x, iterations: it }
}
