//! Moving particles between neighbouring slabs: per direction, the count first, then
//! the packed f64 records.

use crate::domain::Domain;
use crate::particle::{pack, unpack, Particle, FIELDS};
use dist_runtime::prelude::*;

const COUNT: Tag<u64> = Tag::new(1);
const PAYLOAD: Tag<f64> = Tag::new(2);

pub struct Migrator {
    world: Comm<World>,
    left: Option<usize>,
    right: Option<usize>,
    /// Particles this rank has sent away so far.
    pub sent: u64,
}

impl Migrator {
    pub fn new(world: &Comm<World>, domain: &Domain) -> Migrator {
        Migrator { world: world.clone(), left: domain.left(), right: domain.right(), sent: 0 }
    }

    /// Sends `out` to `dst` while receiving what `src` sends here (either may be absent:
    /// a reflecting wall).
    fn shift(&mut self, dst: Option<usize>, src: Option<usize>, out: &[Particle]) -> dist_runtime::Result<Vec<Particle>> {
        let mut count = [0u64];
        match (dst, src) {
            (Some(d), Some(s)) => self.world.sendrecv(d, COUNT, &[out.len() as u64], s, &mut count)?,
            (Some(d), None) => self.world.send(d, COUNT, &[out.len() as u64])?,
            (None, Some(s)) => self.world.recv(s, COUNT, &mut count)?,
            (None, None) => {}
        }
        let packed = pack(out);
        let mut incoming = vec![0.0; count[0] as usize * FIELDS];
        match (dst, src) {
            (Some(d), Some(s)) => self.world.sendrecv(d, PAYLOAD, &packed, s, &mut incoming)?,
            (Some(d), None) => self.world.send(d, PAYLOAD, &packed)?,
            (None, Some(s)) => self.world.recv(s, PAYLOAD, &mut incoming)?,
            (None, None) => {}
        }
        self.sent += out.len() as u64;
        Ok(unpack(&incoming))
    }

    /// Sends the leavers to their neighbours; returns the particles that arrived.
    pub fn migrate(&mut self, to_left: &[Particle], to_right: &[Particle]) -> dist_runtime::Result<Vec<Particle>> {
        let (left, right) = (self.left, self.right);
        let mut arrived = self.shift(left, right, to_left)?;
        arrived.extend(self.shift(right, left, to_right)?);
        Ok(arrived)
    }
}
