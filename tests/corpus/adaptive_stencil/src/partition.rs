//! Block partitions of the cells and how to move from one to another.

/// `bounds[r]..bounds[r + 1]` are rank r's cells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partition {
    pub bounds: Vec<usize>,
}

fn overlap(a: (usize, usize), b: (usize, usize)) -> usize {
    a.1.min(b.1).saturating_sub(a.0.max(b.0))
}

impl Partition {
    pub fn even(cells: usize, ranks: usize) -> Partition {
        Partition { bounds: (0..=ranks).map(|r| r * cells / ranks).collect() }
    }

    pub fn ranks(&self) -> usize {
        self.bounds.len() - 1
    }

    pub fn range(&self, rank: usize) -> (usize, usize) {
        (self.bounds[rank], self.bounds[rank + 1])
    }

    pub fn sizes(&self) -> Vec<usize> {
        self.bounds.windows(2).map(|w| w[1] - w[0]).collect()
    }

    /// A partition that gives every rank about the same load, taking each rank's
    /// measured load to be spread evenly over its cells. Every rank keeps at least one cell.
    pub fn rebalance(&self, loads: &[f64]) -> Partition {
        let n = self.ranks();
        let cells = self.bounds[n];
        // Cost of each cell, as the loads tell it.
        let per_cell: Vec<f64> = self
            .sizes()
            .iter()
            .zip(loads)
            .flat_map(|(&size, &load)| std::iter::repeat_n(load / size.max(1) as f64, size))
            .collect();
        let total: f64 = per_cell.iter().sum();
        let mut bounds = vec![0; n + 1];
        bounds[n] = cells;
        let mut acc = 0.0;
        let mut cell = 0;
        for k in 1..n {
            let target = total * k as f64 / n as f64;
            while cell < cells && acc + per_cell[cell] / 2.0 < target {
                acc += per_cell[cell];
                cell += 1;
            }
            bounds[k] = cell.clamp(bounds[k - 1] + 1, cells - (n - k));
        }
        Partition { bounds }
    }

    /// How many of `rank`'s cells go to each rank under `next`.
    pub fn send_counts(&self, next: &Partition, rank: usize) -> Vec<usize> {
        (0..next.ranks()).map(|dst| overlap(self.range(rank), next.range(dst))).collect()
    }

    /// How many cells `rank` receives from each rank under `next`.
    pub fn recv_counts(&self, next: &Partition, rank: usize) -> Vec<usize> {
        (0..self.ranks()).map(|src| overlap(self.range(src), next.range(rank))).collect()
    }

    /// max load / mean load.
    pub fn imbalance(loads: &[f64]) -> f64 {
        let mean = loads.iter().sum::<f64>() / loads.len() as f64;
        loads.iter().cloned().fold(0.0, f64::max) / mean
    }
}
