//! The checks: each hand-written collective against dist's own and the serial answer.

use crate::reference::{contribution, gathered, reduced};
use crate::tree::{self, Op};
use dist_runtime::prelude::*;

pub struct Suite {
    pub world: Comm<World>,
    pub failures: Vec<String>,
    pub checks: usize,
}

impl Suite {
    pub fn new(world: Comm<World>) -> Suite {
        Suite { world, failures: Vec::new(), checks: 0 }
    }

    fn expect(&mut self, what: String, got: &[i64], want: &[i64]) {
        self.checks += 1;
        if got != want {
            self.failures.push(format!("rank {}: {what}: got {:?}, want {:?}", self.world.rank(), got, want));
        }
    }

    pub fn broadcast(&mut self, len: usize, root: usize) -> dist_runtime::Result<()> {
        let salt = 1000 + root as u64;
        let me = self.world.rank();
        let want = contribution(root, len, salt);
        let start = if me == root { want.clone() } else { vec![0; len] };
        let mut mine = start.clone();
        tree::broadcast(&self.world, &mut mine, root)?;
        let mut theirs = start;
        self.world.broadcast(&mut theirs, root)?;
        self.expect(format!("broadcast len {len} root {root}"), &mine, &want);
        self.expect(format!("dist broadcast len {len} root {root}"), &theirs, &want);
        Ok(())
    }

    pub fn reduce(&mut self, len: usize, root: usize, op: Op) -> dist_runtime::Result<()> {
        let (n, me) = (self.world.size(), self.world.rank());
        let salt = 2000 + root as u64;
        let mut mine = contribution(me, len, salt);
        let mut theirs = mine.clone();
        tree::reduce(&self.world, &mut mine, op, root)?;
        self.world.reduce(&mut theirs, op.to_dist(), root)?;
        if me == root {
            let want = reduced(n, len, salt, op);
            self.expect(format!("reduce {op:?} len {len} root {root}"), &mine, &want);
            self.expect(format!("dist reduce {op:?} len {len} root {root}"), &theirs, &want);
        }
        Ok(())
    }

    pub fn all_reduce(&mut self, len: usize, op: Op) -> dist_runtime::Result<()> {
        let (n, me) = (self.world.size(), self.world.rank());
        let salt = 3000 + len as u64;
        let mut mine = contribution(me, len, salt);
        let mut theirs = mine.clone();
        tree::all_reduce(&self.world, &mut mine, op)?;
        self.world.all_reduce(&mut theirs, op.to_dist())?;
        let want = reduced(n, len, salt, op);
        self.expect(format!("all_reduce {op:?} len {len}"), &mine, &want);
        self.expect(format!("dist all_reduce {op:?} len {len}"), &theirs, &want);
        Ok(())
    }

    pub fn all_gather(&mut self, len: usize) -> dist_runtime::Result<()> {
        let (n, me) = (self.world.size(), self.world.rank());
        let salt = 4000;
        let block = contribution(me, len, salt);
        let mut mine = vec![0i64; n * len];
        let mut theirs = vec![0i64; n * len];
        tree::all_gather_ring(&self.world, &block, &mut mine)?;
        self.world.all_gather(&block, &mut theirs)?;
        let want = gathered(n, len, salt);
        self.expect(format!("ring all_gather len {len}"), &mine, &want);
        self.expect(format!("dist all_gather len {len}"), &theirs, &want);
        Ok(())
    }
}
