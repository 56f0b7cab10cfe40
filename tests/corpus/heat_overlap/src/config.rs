//! Flags of the heat solver.

#[derive(Debug, Clone)]
pub struct Params {
    /// Grid points of the rod (the "file" rank 0 reads has this many values).
    pub points: usize,
    /// Upper bound on time steps.
    pub max_steps: usize,
    /// Diffusion number α = D·dt/dx² (stable for α ≤ 0.5).
    pub alpha: f64,
    /// Heat loss to the surroundings per step.
    pub kappa: f64,
    /// Temperatures held at the two ends.
    pub left_bc: f64,
    pub right_bc: f64,
    /// Compute the global residual every this many steps.
    pub check_every: usize,
    pub tol: f64,
    pub seed: u64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            points: 250,
            max_steps: 5000,
            alpha: 0.4,
            kappa: 0.01,
            left_bc: 1.0,
            right_bc: 0.0,
            check_every: 25,
            tol: 1e-8,
            seed: 2024,
        }
    }
}

pub fn parse_args(argv: impl Iterator<Item = String>) -> Result<Params, String> {
    let mut p = Params::default();
    let argv: Vec<String> = argv.collect();
    let mut rest = argv.iter();
    while let Some(flag) = rest.next() {
        let mut val = |name: &str| rest.next().cloned().ok_or(format!("{name} needs a value"));
        match flag.as_str() {
            "--points" | "-n" => p.points = val(flag)?.parse().map_err(|e| format!("--points: {e}"))?,
            "--steps" => p.max_steps = val(flag)?.parse().map_err(|e| format!("--steps: {e}"))?,
            "--alpha" => p.alpha = val(flag)?.parse().map_err(|e| format!("--alpha: {e}"))?,
            "--kappa" => p.kappa = val(flag)?.parse().map_err(|e| format!("--kappa: {e}"))?,
            "--left" => p.left_bc = val(flag)?.parse().map_err(|e| format!("--left: {e}"))?,
            "--right" => p.right_bc = val(flag)?.parse().map_err(|e| format!("--right: {e}"))?,
            "--check-every" => p.check_every = val(flag)?.parse().map_err(|e| format!("--check-every: {e}"))?,
            "--tol" => p.tol = val(flag)?.parse().map_err(|e| format!("--tol: {e}"))?,
            "--seed" => p.seed = val(flag)?.parse().map_err(|e| format!("--seed: {e}"))?,
            other => return Err(format!("unknown flag {other}")),
        }
    }
    if p.alpha <= 0.0 || p.alpha > 0.5 {
        return Err(format!("--alpha {} is outside (0, 0.5]: the explicit scheme would blow up", p.alpha));
    }
    if p.check_every == 0 {
        return Err("--check-every must be at least 1".to_string());
    }
    Ok(p)
}
