//! Ghost-cell exchange between neighbouring slabs with blocking send/recv, ordered
//! by parity so that no two neighbours both wait in `send`.

use dist_runtime::prelude::*;

/// Edge values travelling towards lower ranks.
const TO_LEFT: Tag<f64> = Tag::new(11);
/// Edge values travelling towards higher ranks.
const TO_RIGHT: Tag<f64> = Tag::new(12);

pub struct Halo {
    comm: Comm<World>,
    left: Option<usize>,
    right: Option<usize>,
    /// Messages this rank has sent.
    pub sent: usize,
}

impl Halo {
    pub fn new(comm: &Comm<World>) -> Halo {
        let (r, n) = (comm.rank(), comm.size());
        Halo {
            comm: comm.clone(),
            left: (r > 0).then(|| r - 1),
            right: (r + 1 < n).then(|| r + 1),
            sent: 0,
        }
    }

    /// Refreshes the ghost cells of `u` (interior `u[1..=m]`) from the neighbours.
    pub fn exchange(&mut self, u: &mut [f64]) -> dist_runtime::Result<()> {
        let even = self.comm.rank() % 2 == 0;
        if even {
            self.send_edges(u)?;
            self.recv_ghosts(u)?;
        } else {
            self.recv_ghosts(u)?;
            self.send_edges(u)?;
        }
        Ok(())
    }

    fn send_edges(&mut self, u: &[f64]) -> dist_runtime::Result<()> {
        let m = u.len() - 2;
        if let Some(l) = self.left {
            self.comm.send(l, TO_LEFT, &u[1..2])?;
            self.sent += 1;
        }
        if let Some(r) = self.right {
            self.comm.send(r, TO_RIGHT, &u[m..m + 1])?;
            self.sent += 1;
        }
        Ok(())
    }

    fn recv_ghosts(&mut self, u: &mut [f64]) -> dist_runtime::Result<()> {
        let m = u.len() - 2;
        if let Some(l) = self.left {
            self.comm.recv(l, TO_RIGHT, &mut u[0..1])?;
        }
        if let Some(r) = self.right {
            self.comm.recv(r, TO_LEFT, &mut u[m + 1..m + 2])?;
        }
        Ok(())
    }
}
