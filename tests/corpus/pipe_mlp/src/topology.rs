//! Who is who: data-parallel replicas × pipeline stages, and the communicators.

use dist_runtime::prelude::*;

dist_runtime::group!(pub Dp);
dist_runtime::group!(pub Pp);

pub struct Topology {
    pub world: Comm<World>,
    /// The same stage in every replica (gradient all_reduce).
    pub dp: Comm<Dp>,
    /// One replica's pipeline, stage 0 first.
    pub pp: Comm<Pp>,
}

impl Topology {
    pub fn new(world: &Comm<World>, dp: usize) -> Result<Topology, String> {
        let n = world.size();
        if dp == 0 || n % dp != 0 {
            return Err(format!("--dp {dp} does not divide {n} ranks"));
        }
        // rank = replica * stages + stage: a replica's stages are contiguous ranks.
        let (dpc, ppc) = world.mesh2::<Dp, Pp>(dp, n / dp).map_err(|e| e.to_string())?;
        Ok(Topology { world: world.clone(), dp: dpc, pp: ppc })
    }

    pub fn stage(&self) -> usize {
        self.pp.rank()
    }
    pub fn stages(&self) -> usize {
        self.pp.size()
    }
    pub fn replica(&self) -> usize {
        self.dp.rank()
    }
    pub fn is_first(&self) -> bool {
        self.stage() == 0
    }
    pub fn is_last(&self) -> bool {
        self.stage() + 1 == self.stages()
    }
}
