//! KBA wavefront sweep of a one-group, step-differenced S_N problem.

use dist_runtime::prelude::*;

use crate::grid::ProcGrid;

/// Face fluxes crossing a process boundary in x (one value per local row).
const X_FACE: Tag<f64> = Tag::new(11);
/// Face fluxes crossing a process boundary in y (one value per local column).
const Y_FACE: Tag<f64> = Tag::new(12);
/// Scalar-flux halos for the smoothness diagnostic.
const HALO: Tag<f64> = Tag::new(13);

pub const SIGMA_T: f64 = 1.0;
pub const SIGMA_S: f64 = 0.5;

/// Direction of travel in x and y.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Octant {
    pub east: bool,
    pub north: bool,
}

impl Octant {
    /// (+x,+y), (-x,+y), (+x,-y), (-x,-y).
    pub const ALL: [Octant; 4] = [
        Octant { east: true, north: true },
        Octant { east: false, north: true },
        Octant { east: true, north: false },
        Octant { east: false, north: false },
    ];
}

/// Quadrature of one octant: direction cosines (mu, eta) and weight; the weights of all
/// four octants sum to 1.
pub fn quadrature(angles: usize) -> Vec<(f64, f64, f64)> {
    (0..angles)
        .map(|m| {
            let theta = (m as f64 + 0.5) / angles as f64 * std::f64::consts::FRAC_PI_2;
            (theta.cos(), theta.sin(), 0.25 / angles as f64)
        })
        .collect()
}

/// External source of global cell (gi, gj).
pub fn external_source(gi: usize, gj: usize) -> f64 {
    1.0 + 0.1 * ((7 * gi + 3 * gj) % 5) as f64
}

/// Step (upwind) balance of one cell: the angular flux leaving it, from the fluxes
/// entering through its upstream x and y faces.
#[inline]
pub fn cell(q: f64, psi_x: f64, psi_y: f64, ax: f64, ay: f64) -> f64 {
    (q + ax * psi_x + ay * psi_y) / (SIGMA_T + ax + ay)
}

/// Sweeps one octant over an `nx × ny` block in place: `xface[j]` enters row j, `yface[i]`
/// enters column i; both hold the leaving fluxes afterwards. Adds `w · psi` to `phi`.
#[allow(clippy::too_many_arguments)]
pub fn sweep_block(
    oct: Octant,
    nx: usize,
    ny: usize,
    q: &[f64],
    (mu, eta, w): (f64, f64, f64),
    xface: &mut [f64],
    yface: &mut [f64],
    phi: &mut [f64],
) {
    let (ax, ay) = (2.0 * mu, 2.0 * eta); // 2|mu|/dx with dx = dy = 1
    for jj in 0..ny {
        let j = if oct.north { jj } else { ny - 1 - jj };
        let mut psi_x = xface[j];
        for ii in 0..nx {
            let i = if oct.east { ii } else { nx - 1 - ii };
            let k = j * nx + i;
            let psi = cell(q[k], psi_x, yface[i], ax, ay);
            phi[k] += w * psi;
            psi_x = psi;
            yface[i] = psi;
        }
        xface[j] = psi_x;
    }
}

/// This rank's block of the transport problem.
pub struct Sweeper<'g> {
    grid: &'g ProcGrid,
    nx: usize,
    ny: usize,
    quad: Vec<(f64, f64, f64)>,
    q_ext: Vec<f64>,
    /// Total source of the current iteration.
    q: Vec<f64>,
    /// Scalar flux being accumulated, and the last iteration's.
    pub phi: Vec<f64>,
    phi_old: Vec<f64>,
}

impl<'g> Sweeper<'g> {
    pub fn new(grid: &'g ProcGrid, nx: usize, ny: usize, angles: usize) -> Sweeper<'g> {
        let mut q_ext = vec![0.0; nx * ny];
        for j in 0..ny {
            for i in 0..nx {
                q_ext[j * nx + i] = external_source(grid.ix * nx + i, grid.jy * ny + j);
            }
        }
        Sweeper {
            grid,
            nx,
            ny,
            quad: quadrature(angles),
            q: q_ext.clone(),
            q_ext,
            phi: vec![0.0; nx * ny],
            phi_old: vec![0.0; nx * ny],
        }
    }

    /// Starts a source iteration: scattering source from the last scalar flux.
    pub fn begin_iteration(&mut self) {
        std::mem::swap(&mut self.phi, &mut self.phi_old);
        for k in 0..self.q.len() {
            self.q[k] = self.q_ext[k] + SIGMA_S * self.phi_old[k];
            self.phi[k] = 0.0;
        }
    }

    /// Largest change of the scalar flux in this block over the last iteration.
    pub fn local_change(&self) -> f64 {
        self.phi.iter().zip(&self.phi_old).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max)
    }

    /// Sum of the scalar flux over this block.
    pub fn local_total(&self) -> f64 {
        self.phi.iter().sum()
    }

    /// Sweeps every angle of one octant through the process grid: wait for the
    /// upstream faces, sweep the block, pass the downstream faces on.
    pub fn sweep(&mut self, oct: Octant) -> dist_runtime::Result<()> {
        let g = self.grid;
        let (up_x, down_x) = if oct.east { (g.west(), g.east()) } else { (g.east(), g.west()) };
        let (up_y, down_y) = if oct.north { (g.south(), g.north()) } else { (g.north(), g.south()) };
        let mut xface = vec![0.0; self.ny];
        let mut yface = vec![0.0; self.nx];
        for a in 0..self.quad.len() {
            // Vacuum where the face is on the global boundary.
            xface.fill(0.0);
            yface.fill(0.0);
            if let Some(src) = up_x {
                g.row.recv(src, X_FACE, &mut xface)?;
            }
            if let Some(src) = up_y {
                g.col.recv(src, Y_FACE, &mut yface)?;
            }
            sweep_block(oct, self.nx, self.ny, &self.q, self.quad[a], &mut xface, &mut yface, &mut self.phi);
            if let Some(dst) = down_x {
                g.row.send(dst, X_FACE, &xface)?;
            }
            if let Some(dst) = down_y {
                g.col.send(dst, Y_FACE, &yface)?;
            }
        }
        Ok(())
    }

    /// Sum over the block of the squared 5-point Laplacian of the scalar flux (mirror
    /// ghosts on the global boundary): a smoothness diagnostic needing the neighbours'
    /// edge values.
    pub fn roughness(&self) -> dist_runtime::Result<f64> {
        let (g, nx, ny) = (self.grid, self.nx, self.ny);
        let at = |i: usize, j: usize| self.phi[j * nx + i];
        let west_edge: Vec<f64> = (0..ny).map(|j| at(0, j)).collect();
        let east_edge: Vec<f64> = (0..ny).map(|j| at(nx - 1, j)).collect();
        let south_edge: Vec<f64> = (0..nx).map(|i| at(i, 0)).collect();
        let north_edge: Vec<f64> = (0..nx).map(|i| at(i, ny - 1)).collect();
        // Ghosts default to the mirror image (the edge itself).
        let mut west_ghost = west_edge.clone();
        let mut east_ghost = east_edge.clone();
        let mut south_ghost = south_edge.clone();
        let mut north_ghost = north_edge.clone();
        shift(&g.row, g.east(), &east_edge, g.west(), &mut west_ghost)?;
        shift(&g.row, g.west(), &west_edge, g.east(), &mut east_ghost)?;
        shift(&g.col, g.north(), &north_edge, g.south(), &mut south_ghost)?;
        shift(&g.col, g.south(), &south_edge, g.north(), &mut north_ghost)?;
        let mut r = 0.0;
        for j in 0..ny {
            for i in 0..nx {
                let w = if i > 0 { at(i - 1, j) } else { west_ghost[j] };
                let e = if i + 1 < nx { at(i + 1, j) } else { east_ghost[j] };
                let s = if j > 0 { at(i, j - 1) } else { south_ghost[i] };
                let n = if j + 1 < ny { at(i, j + 1) } else { north_ghost[i] };
                let lap = w + e + s + n - 4.0 * at(i, j);
                r += lap * lap;
            }
        }
        Ok(r)
    }
}

/// Sends `out` to `to` and receives `into` from `from`, either side possibly absent.
fn shift<G: Group>(
    comm: &Comm<G>,
    to: Option<usize>,
    out: &[f64],
    from: Option<usize>,
    into: &mut [f64],
) -> dist_runtime::Result<()> {
    match (to, from) {
        (Some(t), Some(f)) => comm.sendrecv(t, HALO, out, f, into),
        (Some(t), None) => comm.send(t, HALO, out),
        (None, Some(f)) => comm.recv(f, HALO, into),
        (None, None) => Ok(()),
    }
}

/// The whole problem in one process, over the global `gnx × gny` grid, with the same
/// arithmetic cell by cell. Returns the scalar flux, row-major over the global grid.
pub fn serial_reference(gnx: usize, gny: usize, angles: usize, iters: usize) -> Vec<f64> {
    let quad = quadrature(angles);
    let mut phi = vec![0.0; gnx * gny];
    let mut q = vec![0.0; gnx * gny];
    for _ in 0..iters {
        for gj in 0..gny {
            for gi in 0..gnx {
                let k = gj * gnx + gi;
                q[k] = external_source(gi, gj) + SIGMA_S * phi[k];
            }
        }
        phi.fill(0.0);
        for oct in Octant::ALL {
            for &dir in &quad {
                let mut xface = vec![0.0; gny];
                let mut yface = vec![0.0; gnx];
                sweep_block(oct, gnx, gny, &q, dir, &mut xface, &mut yface, &mut phi);
            }
        }
    }
    phi
}

/// The smoothness diagnostic of [`Sweeper::roughness`] on the global grid.
pub fn serial_roughness(phi: &[f64], gnx: usize, gny: usize) -> f64 {
    let at = |i: usize, j: usize| phi[j * gnx + i];
    let mut r = 0.0;
    for j in 0..gny {
        for i in 0..gnx {
            let w = at(i.saturating_sub(1), j);
            let e = at((i + 1).min(gnx - 1), j);
            let s = at(i, j.saturating_sub(1));
            let n = at(i, (j + 1).min(gny - 1));
            let lap = w + e + s + n - 4.0 * at(i, j);
            r += lap * lap;
        }
    }
    r
}
