//! The distributed Jacobi solver and its serial reference.

use crate::config::Config;
use crate::grid::{factor2, split_range, Decomp, Field};
use crate::halo::{self, HaloBuffers, XDir, YDir};
use crate::kernel::{make_kernel, source_field, sweep, Kernel};
use dist_runtime::prelude::*;

#[derive(Clone, Copy, Debug)]
pub struct Outcome { pub iters: usize, pub residual: f64 }

pub struct Solver {
    pub d: Decomp,
    u: Field, next: Field, src: Field,
    bufs: HaloBuffers,
    kernel: Box<dyn Kernel>,
    world: Comm<World>, xc: Comm<XDir>, yc: Comm<YDir>,
    /// (iteration, global residual) at every check.
    pub history: Vec<(usize, f64)>,
}

impl Solver {
    pub fn new(world: &Comm<World>, cfg: &Config) -> dist_runtime::Result<Solver> {
        let size = world.size();
        let (px, py) = match cfg.px {
            Some(px) if px > 0 && size % px == 0 => (px, size / px),
            _ => factor2(size),
        };
        let (xc, yc) = world.mesh2::<XDir, YDir>(px, py)?;
        let d = Decomp::new(cfg.nx, cfg.ny, cfg.nz, px, py, world.rank());
        let (u, src, bufs) = (Field::zeros(d.lx, d.ly, d.nz), source_field(&d), HaloBuffers::new(&d));
        let kernel = make_kernel(cfg.kernel, cfg.nx.max(cfg.ny).max(cfg.nz));
        Ok(Solver { next: u.clone(), u, d, src, bufs, kernel, world: world.clone(), xc, yc, history: Vec::new() })
    }

    pub fn kernel_name(&self) -> &'static str { self.kernel.name() }

    /// One Jacobi sweep with its halo exchange; returns the local sum of squared changes.
    fn step(&mut self, overlap: bool) -> dist_runtime::Result<f64> {
        let Solver { d, u, next, src, bufs, kernel, xc, yc, .. } = self;
        let (lx, ly, k) = (d.lx, d.ly, kernel.as_ref());
        let split = overlap && lx > 2 && ly > 2;
        bufs.pack(u);
        let reqs = halo::post(xc, yc, d, bufs)?;
        // With overlap, the points that need no halo value while the faces are in flight.
        let mut sq = if split { sweep(k, u, src, next, 2..=lx - 1, 2..=ly - 1) } else { 0.0 };
        dist_runtime::wait_all(reqs)?;
        bufs.unpack(u, d);
        if split {
            sq += sweep(k, u, src, next, 1..=1, 1..=ly) + sweep(k, u, src, next, lx..=lx, 1..=ly);
            sq += sweep(k, u, src, next, 2..=lx - 1, 1..=1) + sweep(k, u, src, next, 2..=lx - 1, ly..=ly);
        } else {
            sq += sweep(k, u, src, next, 1..=lx, 1..=ly);
        }
        std::mem::swap(u, next);
        Ok(sq)
    }

    pub fn run(&mut self, cfg: &Config) -> dist_runtime::Result<Outcome> {
        let mut residual = f64::INFINITY;
        for it in 1..=cfg.iters {
            let local_sq = self.step(cfg.overlap)?;
            if it % cfg.check_every == 0 || it == cfg.iters {
                let mut global = [local_sq];
                self.world.all_reduce(&mut global, ReduceOp::Sum)?;
                residual = global[0].sqrt();
                self.history.push((it, residual));
                if residual < cfg.tol {
                    return Ok(Outcome { iters: it, residual });
                }
            }
        }
        Ok(Outcome { iters: cfg.iters, residual })
    }

    /// The value at one global point, broadcast from the rank that holds it.
    pub fn probe(&self, gx: usize, gy: usize, gz: usize) -> dist_runtime::Result<f64> {
        let d = &self.d;
        let ox = d.owner_x(gx);
        let owner = d.rank_of(ox, d.owner_y(gy));
        let here = (d.x0..d.x0 + d.lx).contains(&gx) && (d.y0..d.y0 + d.ly).contains(&gy) && gz < d.nz;
        let mut v = [if here { self.u.data[self.u.idx(gx - d.x0 + 1, gy - d.y0 + 1, gz + 1)] } else { 0.0 }];
        self.world.broadcast(&mut v, owner)?;
        Ok(v[0])
    }

    /// The whole solution on rank 0 (x-major, then y, then z), `None` elsewhere.
    pub fn gather(&self) -> dist_runtime::Result<Option<Vec<f64>>> {
        let mine = self.u.interior();
        let counts: Vec<usize> = (0..self.world.size()).map(|r| self.d.block_len(r)).collect();
        if self.world.rank() != 0 {
            return self.world.gather_v(&mine, None, &counts, 0).map(|()| None);
        }
        let mut all = vec![0.0; counts.iter().sum()];
        self.world.gather_v(&mine, Some(&mut all[..]), &counts, 0)?;
        let d = &self.d;
        let mut global = vec![0.0; d.nx * d.ny * d.nz];
        let mut columns = all.chunks(d.nz);
        for r in 0..self.world.size() {
            let ((x0, lx), (y0, ly)) = (split_range(d.nx, d.px, r / d.py), split_range(d.ny, d.py, r % d.py));
            for (i, j) in (x0..x0 + lx).flat_map(|i| (y0..y0 + ly).map(move |j| (i, j))) {
                let col = columns.next().unwrap_or(&[]);
                let at = (i * d.ny + j) * d.nz;
                global[at..at + col.len()].copy_from_slice(col);
            }
        }
        Ok(Some(global))
    }
}

/// The same iteration on one block holding the whole grid.
pub fn serial_reference(cfg: &Config) -> (Vec<f64>, Outcome) {
    let d = Decomp::new(cfg.nx, cfg.ny, cfg.nz, 1, 1, 0);
    let kernel = make_kernel(cfg.kernel, cfg.nx.max(cfg.ny).max(cfg.nz));
    let (src, mut u) = (source_field(&d), Field::zeros(d.lx, d.ly, d.nz));
    let mut next = u.clone();
    let mut out = Outcome { iters: cfg.iters, residual: f64::INFINITY };
    for it in 1..=cfg.iters {
        let sq = sweep(kernel.as_ref(), &u, &src, &mut next, 1..=d.lx, 1..=d.ly);
        std::mem::swap(&mut u, &mut next);
        if it % cfg.check_every == 0 || it == cfg.iters {
            out.residual = sq.sqrt();
            if out.residual < cfg.tol {
                out.iters = it;
                break;
            }
        }
    }
    (u.interior(), out)
}
