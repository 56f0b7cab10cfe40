//! The matrices, their padded blocks, and the dense kernel.

/// Entry (i, j) of A (`which` = 0) or B (`which` = 1): a hash of the seed and the
/// position, in [-1, 1).
pub fn entry(seed: u64, which: u64, i: usize, j: usize) -> f64 {
    let mut x = seed ^ (which << 62) ^ ((i as u64) << 32) ^ j as u64;
    x = (x ^ (x >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
    x = (x ^ (x >> 33)).wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^= x >> 33;
    (x >> 11) as f64 / (1u64 << 52) as f64 - 1.0
}

/// Block (bi, bj) of size nb × nb of an n × n matrix, zero past its edge.
pub fn block(seed: u64, which: u64, n: usize, nb: usize, bi: usize, bj: usize) -> Vec<f64> {
    let mut out = vec![0.0; nb * nb];
    for (r, row) in out.chunks_mut(nb).enumerate() {
        let gi = bi * nb + r;
        if gi >= n {
            break;
        }
        for (c, x) in row.iter_mut().enumerate() {
            let gj = bj * nb + c;
            if gj < n {
                *x = entry(seed, which, gi, gj);
            }
        }
    }
    out
}

/// c += a · b, all nb × nb.
pub fn gemm_acc(c: &mut [f64], a: &[f64], b: &[f64], nb: usize) {
    for i in 0..nb {
        for k in 0..nb {
            let x = a[i * nb + k];
            if x == 0.0 {
                continue;
            }
            for (cj, bj) in c[i * nb..(i + 1) * nb].iter_mut().zip(&b[k * nb..(k + 1) * nb]) {
                *cj += x * bj;
            }
        }
    }
}

/// The whole product in one process.
pub fn serial_matmul(seed: u64, n: usize) -> Vec<f64> {
    let a: Vec<f64> = (0..n * n).map(|ij| entry(seed, 0, ij / n, ij % n)).collect();
    let b: Vec<f64> = (0..n * n).map(|ij| entry(seed, 1, ij / n, ij % n)).collect();
    let mut c = vec![0.0; n * n];
    for i in 0..n {
        for k in 0..n {
            for j in 0..n {
                c[i * n + j] += a[i * n + k] * b[k * n + j];
            }
        }
    }
    c
}

/// Puts the q × q gathered blocks (in grid-rank order) back into an n × n matrix.
pub fn assemble(blocks: &[f64], n: usize, nb: usize, q: usize) -> Vec<f64> {
    let mut c = vec![0.0; n * n];
    for (rank, blk) in blocks.chunks(nb * nb).enumerate() {
        let (bi, bj) = (rank / q, rank % q);
        for r in 0..nb {
            for s in 0..nb {
                let (gi, gj) = (bi * nb + r, bj * nb + s);
                if gi < n && gj < n {
                    c[gi * n + gj] = blk[r * nb + s];
                }
            }
        }
    }
    c
}
