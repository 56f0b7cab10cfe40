//! The distributed solver: one block of the rod per rank, halos exchanged with
//! nonblocking point-to-point while the interior is updated.

use dist_runtime::prelude::*;

use crate::config::Params;
use crate::stencil::{squared_change, Scheme};

/// Values travelling towards higher ranks (a block's last point) and towards lower
/// ranks (a block's first point).
const EASTWARD: Tag<f64> = Tag::new(21);
const WESTWARD: Tag<f64> = Tag::new(22);

#[derive(Default)]
struct Halo {
    to_west: [f64; 1],
    to_east: [f64; 1],
    from_west: [f64; 1],
    from_east: [f64; 1],
}

#[derive(Debug, Clone, Copy)]
pub struct RunSummary {
    pub steps: usize,
    pub residual: f64,
}

pub struct HeatSolver {
    world: Comm<World>,
    west: Option<usize>,
    east: Option<usize>,
    scheme: Scheme,
    left_bc: f64,
    right_bc: f64,
    u: Vec<f64>,
    next: Vec<f64>,
    halo: Halo,
}

impl HeatSolver {
    pub fn new(world: Comm<World>, block: Vec<f64>, p: &Params) -> Self {
        let (r, n) = (world.rank(), world.size());
        HeatSolver {
            west: r.checked_sub(1),
            east: (r + 1 < n).then_some(r + 1),
            world,
            scheme: Scheme { alpha: p.alpha, kappa: p.kappa },
            left_bc: p.left_bc,
            right_bc: p.right_bc,
            next: vec![0.0; block.len()],
            u: block,
            halo: Halo::default(),
        }
    }

    pub fn values(&self) -> &[f64] {
        &self.u
    }

    /// Computes `next` from `u`: posts the halo exchange, updates the interior while
    /// it is in flight, then the two edge points.
    fn advance(&mut self) -> dist_runtime::Result<()> {
        let HeatSolver { world, west, east, scheme, u, next, halo, .. } = self;
        halo.to_west[0] = u[0];
        halo.to_east[0] = u[u.len() - 1];

        let mut pending = Vec::with_capacity(4);
        if let Some(w) = *west {
            pending.push(world.irecv(w, EASTWARD, &mut halo.from_west)?);
            pending.push(world.isend(w, WESTWARD, &halo.to_west)?);
        }
        if let Some(e) = *east {
            pending.push(world.irecv(e, WESTWARD, &mut halo.from_east)?);
            pending.push(world.isend(e, EASTWARD, &halo.to_east)?);
        }
        scheme.interior(u, next);
        dist_runtime::wait_all(pending)?;

        let beyond_left = if west.is_some() { halo.from_west[0] } else { self.left_bc };
        let beyond_right = if east.is_some() { halo.from_east[0] } else { self.right_bc };
        scheme.edges(u, next, beyond_left, beyond_right);
        Ok(())
    }

    /// ‖next − u‖ over the whole rod.
    fn global_residual(&self) -> dist_runtime::Result<f64> {
        let mut sum = [squared_change(&self.u, &self.next)];
        self.world.all_reduce(&mut sum, ReduceOp::Sum)?;
        Ok(sum[0].sqrt())
    }

    /// Steps until the residual, checked every `check_every` steps, is below `tol`, or
    /// `max_steps` have run.
    pub fn run(&mut self, p: &Params) -> dist_runtime::Result<RunSummary> {
        let mut summary = RunSummary { steps: 0, residual: f64::INFINITY };
        for step in 1..=p.max_steps {
            self.advance()?;
            let checked = step % p.check_every == 0;
            if checked {
                summary.residual = self.global_residual()?;
            }
            std::mem::swap(&mut self.u, &mut self.next);
            summary.steps = step;
            if checked && summary.residual < p.tol {
                break;
            }
        }
        Ok(summary)
    }
}
