// A halo plan keeps, per ghost column, its slot in a map built by an untyped `collect()`
// into the struct's `BTreeMap` field; a lookup of a column the plan holds finds its slot.
// Rank 0 then sends one message more than its neighbour receives.
use dist_runtime::prelude::*;
use std::collections::BTreeMap;

const GHOST: Tag<f64> = Tag::new(2);

struct Plan {
    peer: usize,
    slot: BTreeMap<usize, usize>,
}

impl Plan {
    fn new(rank: usize, n: usize) -> Plan {
        let peer = (rank + 1) % n;
        let cols = vec![peer * 10, peer * 10 + 1];
        let slot = cols.iter().copied().enumerate().map(|(s, c)| (c, s)).collect();
        Plan { peer, slot }
    }
    fn slot(&self, col: usize) -> Option<usize> {
        self.slot.get(&col).copied()
    }
}

#[spmd(sizes = 2..=3)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let (r, n) = (world.rank(), world.size());
    let plan = Plan::new(r, n);
    let s = plan.slot(plan.peer * 10 + 1).expect("a ghost column of the plan");
    let mut ghost = [0.0f64];
    world.sendrecv(plan.peer, GHOST, &[s as f64], (r + n - 1) % n, &mut ghost)?;
    if r == 0 {
        world.send(plan.peer, GHOST, &[1.0])?;
    }
    Ok(())
}
