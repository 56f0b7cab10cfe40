//! Histogram arithmetic shared by the distributed code and the serial reference.

#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    pub lo: f64,
    pub hi: f64,
    pub counts: Vec<u64>,
}

impl Histogram {
    pub fn empty(lo: f64, hi: f64, bins: usize) -> Histogram {
        Histogram { lo, hi, counts: vec![0; bins] }
    }

    pub fn bin_of(&self, x: f64) -> usize {
        let b = self.counts.len();
        let t = ((x - self.lo) / (self.hi - self.lo) * b as f64).floor();
        (t.max(0.0) as usize).min(b - 1)
    }

    pub fn edge(&self, k: usize) -> f64 {
        self.lo + (self.hi - self.lo) * k as f64 / self.counts.len() as f64
    }

    pub fn fill(&mut self, xs: &[f64]) {
        for &x in xs {
            let b = self.bin_of(x);
            self.counts[b] += 1;
        }
    }

    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Conservative tail cut points: the lower edge of the bin where the lower `q`
    /// fraction ends, and the upper edge of the bin where the upper `q` fraction starts.
    pub fn tail_thresholds(&self, q: f64) -> [f64; 2] {
        let want = (q * self.total() as f64).floor() as u64;
        let mut acc = 0;
        let low = self
            .counts
            .iter()
            .position(|&c| {
                acc += c;
                acc > want
            })
            .unwrap_or(0);
        acc = 0;
        let high = self
            .counts
            .iter()
            .rposition(|&c| {
                acc += c;
                acc > want
            })
            .unwrap_or(self.counts.len() - 1);
        [self.edge(low), self.edge(high + 1)]
    }
}

pub fn is_outlier(x: f64, cut: &[f64; 2]) -> bool {
    x < cut[0] || x > cut[1]
}

/// Moments of the inliers: count, sum, sum of squares.
pub fn inlier_moments(xs: &[f64], cut: &[f64; 2]) -> [f64; 3] {
    xs.iter().filter(|&&x| !is_outlier(x, cut)).fold([0.0; 3], |m, &x| [m[0] + 1.0, m[1] + x, m[2] + x * x])
}

/// For each outlier, how far it is from the end of its own tail: 0 for the most
/// extreme low value and for the most extreme high value.
pub fn tail_ranks(outliers: &[f64], cut: &[f64; 2]) -> Vec<u64> {
    let mut order: Vec<usize> = (0..outliers.len()).collect();
    order.sort_by(|&a, &b| outliers[a].total_cmp(&outliers[b]));
    let mut ranks = vec![0u64; outliers.len()];
    let lows: Vec<usize> = order.iter().copied().filter(|&i| outliers[i] < cut[0]).collect();
    let highs: Vec<usize> = order.iter().rev().copied().filter(|&i| outliers[i] > cut[1]).collect();
    for (k, &i) in lows.iter().enumerate() {
        ranks[i] = k as u64;
    }
    for (k, &i) in highs.iter().enumerate() {
        ranks[i] = k as u64;
    }
    ranks
}

/// The whole analysis on one process, for checking.
pub struct Reference {
    pub hist: Histogram,
    pub cut: [f64; 2],
    pub outliers: Vec<f64>,
    pub moments: [f64; 3],
    pub extreme: [f64; 2],
}

pub fn serial(all: &[Vec<f64>], bins: usize, tail: f64, top: usize) -> Reference {
    let flat: Vec<f64> = all.iter().flatten().copied().collect();
    let lo = flat.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = flat.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut hist = Histogram::empty(lo, hi, bins);
    hist.fill(&flat);
    let cut = hist.tail_thresholds(tail);
    let outliers: Vec<f64> = flat.iter().copied().filter(|&x| is_outlier(x, &cut)).collect();
    let ranks = tail_ranks(&outliers, &cut);
    let extreme = outliers
        .iter()
        .zip(&ranks)
        .filter(|(_, &r)| (r as usize) < top)
        .fold([0.0, 0.0], |e, (&x, _)| [e[0] + 1.0, e[1] + x]);
    Reference { moments: inlier_moments(&flat, &cut), hist, cut, outliers, extreme }
}
