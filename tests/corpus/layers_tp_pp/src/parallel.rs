//! The process layout: a (pp × dp × tp) mesh over the world, built by a builder.

use dist_runtime::prelude::*;

dist_runtime::group!(pub Pp);
dist_runtime::group!(pub Dp);
dist_runtime::group!(pub Tp);

/// Everything a layer needs to know about where it runs.
pub struct ParallelState {
    pub world: Comm<World>,
    pub pp: Comm<Pp>,
    pub dp: Comm<Dp>,
    pub tp: Comm<Tp>,
}

impl ParallelState {
    pub fn builder(world: &Comm<World>) -> ParallelStateBuilder {
        ParallelStateBuilder { world: world.clone(), tp: 1, pp: 1 }
    }

    pub fn stage(&self) -> usize {
        self.pp.rank()
    }
    pub fn num_stages(&self) -> usize {
        self.pp.size()
    }
    pub fn is_first_stage(&self) -> bool {
        self.pp.rank() == 0
    }
    pub fn is_last_stage(&self) -> bool {
        self.pp.rank() + 1 == self.pp.size()
    }
}

pub struct ParallelStateBuilder {
    world: Comm<World>,
    tp: usize,
    pp: usize,
}

impl ParallelStateBuilder {
    pub fn tensor_parallel(mut self, tp: usize) -> Self {
        self.tp = tp;
        self
    }
    pub fn pipeline_parallel(mut self, pp: usize) -> Self {
        self.pp = pp;
        self
    }
    pub fn build(self) -> Result<ParallelState, String> {
        let n = self.world.size();
        if self.tp == 0 || n % self.tp != 0 {
            return Err(format!("--tp {} must divide the world size {n}", self.tp));
        }
        if self.pp == 0 || (n / self.tp) % self.pp != 0 {
            return Err(format!("--pp {} must divide world size / tp = {}", self.pp, n / self.tp));
        }
        let dp = n / (self.tp * self.pp);
        let (pp, dp, tp) =
            self.world.mesh::<(Pp, Dp, Tp)>([self.pp, dp, self.tp]).map_err(|e| e.to_string())?;
        Ok(ParallelState { world: self.world, pp, dp, tp })
    }
}
