//! A symmetric sparse matrix from a seed: a perturbed 2-D Laplacian-like stencil
//! (couplings to i ± 1 and i ± nx) with a random diagonal and one heavy row, so that
//! the dominant eigenvalue is well separated.

fn hash(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

pub fn uniform(seed: u64, a: u64, b: u64) -> f64 {
    (hash(seed ^ hash(a.wrapping_mul(0x1000_0001) ^ hash(b))) >> 11) as f64 / (1u64 << 53) as f64
}

/// One row in compressed form.
#[derive(Debug, Clone, Default)]
pub struct Row {
    pub cols: Vec<usize>,
    pub vals: Vec<f64>,
}

#[derive(Debug, Clone)]
pub struct Generator {
    pub n: usize,
    pub nx: usize,
    pub seed: u64,
}

impl Generator {
    fn value(&self, i: usize, j: usize) -> f64 {
        if i == j {
            let bump = if i == self.n / 3 { 6.0 } else { 0.0 };
            4.0 + 2.0 * uniform(self.seed, i as u64, i as u64) + bump
        } else {
            let (a, b) = (i.min(j) as u64, i.max(j) as u64);
            -(0.5 + 0.5 * uniform(self.seed, a, b))
        }
    }

    /// Row `i`, columns in increasing order.
    pub fn row(&self, i: usize) -> Row {
        let mut cols: Vec<usize> = [i.checked_sub(self.nx), i.checked_sub(1), Some(i), Some(i + 1), Some(i + self.nx)]
            .into_iter()
            .flatten()
            .filter(|&j| j < self.n)
            .collect();
        cols.sort_unstable();
        cols.dedup();
        let vals = cols.iter().map(|&j| self.value(i, j)).collect();
        Row { cols, vals }
    }

    pub fn rows(&self, range: std::ops::Range<usize>) -> Vec<Row> {
        range.map(|i| self.row(i)).collect()
    }
}

/// Block-row partition of `n` rows over `parts` ranks (the first `n % parts` get one more).
#[derive(Debug, Clone)]
pub struct Partition {
    pub offsets: Vec<usize>,
}

impl Partition {
    pub fn new(n: usize, parts: usize) -> Partition {
        let offsets = (0..=parts).map(|r| r * (n / parts) + r.min(n % parts)).collect();
        Partition { offsets }
    }

    pub fn range(&self, r: usize) -> std::ops::Range<usize> {
        self.offsets[r]..self.offsets[r + 1]
    }

    /// The rank that owns row `j`.
    pub fn owner(&self, j: usize) -> usize {
        self.offsets.partition_point(|&o| o <= j) - 1
    }
}

/// y = A x on full vectors (the serial reference).
pub fn spmv_full(rows: &[Row], x: &[f64]) -> Vec<f64> {
    rows.iter().map(|row| row.cols.iter().zip(&row.vals).map(|(&j, v)| v * x[j]).sum()).collect()
}
