//! Two-pass distributed statistics: a global histogram, tail cut points from it, the
//! outliers collected on the root, and trimmed moments, checked against a serial run.
//!
//! `cargo spmd run -n 4 -- --root 2 --bins 48 --per-rank 400`

mod cli;
mod data;
mod engine;
mod stats;

use cli::Args;
use dist_runtime::prelude::*;
use engine::Analysis;

#[derive(Debug)]
enum AppError {
    Usage(String),
    Dist(dist_runtime::Error),
    Wrong(String),
}

impl std::fmt::Display for AppError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AppError::Usage(m) => f.write_str(m),
            AppError::Dist(e) => write!(f, "dist: {e}"),
            AppError::Wrong(m) => write!(f, "wrong result: {m}"),
        }
    }
}

impl From<dist_runtime::Error> for AppError {
    fn from(e: dist_runtime::Error) -> Self {
        AppError::Dist(e)
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

#[spmd]
fn main(world: Comm<World>) -> Result<(), AppError> {
    let args = Args::parse().map_err(AppError::Usage)?;
    let (rank, size) = (world.rank(), world.size());
    let analysis = Analysis::new(world.clone(), args.root).map_err(AppError::Usage)?;
    let xs = data::readings(rank, args.per_rank, args.seed);

    // Pass 1: the range, then the histogram on the root, then the cut points everywhere.
    let (lo, hi) = analysis.global_range(&xs)?;
    let hist = analysis.histogram(&xs, lo, hi, args.bins)?;
    let cut = analysis.share_cut(hist.as_ref(), args.tail)?;

    // Pass 2: outliers to the root, their tail ranks back, inlier moments to the root.
    let mine: Vec<f64> = xs.iter().copied().filter(|&x| stats::is_outlier(x, &cut)).collect();
    let counts = analysis.outlier_counts(mine.len())?;
    let gathered = analysis.collect(&mine, &counts)?;
    let ranks = gathered.as_ref().map(|all| stats::tail_ranks(all, &cut));
    let my_ranks = analysis.hand_back(ranks.as_deref(), &counts)?;
    let extreme = mine
        .iter()
        .zip(&my_ranks)
        .filter(|(_, &r)| (r as usize) < args.top)
        .fold([0.0, 0.0], |e, (&x, _)| [e[0] + 1.0, e[1] + x]);
    let extreme = analysis.sum_everywhere(extreme)?;
    let moments = analysis.sum_at_root(stats::inlier_moments(&xs, &cut))?;

    let mut problems = Vec::new();
    if let (Some(hist), Some(outliers)) = (&hist, &gathered) {
        let all: Vec<Vec<f64>> = (0..size).map(|r| data::readings(r, args.per_rank, args.seed)).collect();
        let want = stats::serial(&all, args.bins, args.tail, args.top);
        if *hist != want.hist {
            problems.push("histogram".to_string());
        }
        if cut != want.cut {
            problems.push(format!("cut points {cut:?} vs {:?}", want.cut));
        }
        if *outliers != want.outliers {
            problems.push(format!("{} outliers vs {}", outliers.len(), want.outliers.len()));
        }
        if !moments.iter().zip(&want.moments).all(|(&a, &b)| close(a, b)) {
            problems.push(format!("inlier moments {moments:?} vs {:?}", want.moments));
        }
        if !extreme.iter().zip(&want.extreme).all(|(&a, &b)| close(a, b)) {
            problems.push(format!("extremes {extreme:?} vs {:?}", want.extreme));
        }
        let mean = moments[1] / moments[0];
        let sd = (moments[2] / moments[0] - mean * mean).sqrt();
        println!(
            "{} readings in [{lo:.2}, {hi:.2}]; cut [{:.3}, {:.3}]; {} outliers; trimmed mean {mean:.4} sd {sd:.4}",
            hist.total(),
            cut[0],
            cut[1],
            outliers.len()
        );
    }
    if !analysis.agree(problems.is_empty())? {
        return Err(AppError::Wrong(if problems.is_empty() { "see the root's report".into() } else { problems.join("; ") }));
    }
    if analysis.is_root() {
        println!("histogram_stats OK: {size} ranks, root {}, {} extreme readings", analysis.root(), extreme[0]);
    }
    Ok(())
}
