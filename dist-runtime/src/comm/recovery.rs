//! Surviving a rank's death (ULFM's vocabulary, as NCCL's `ncclCommRevoke` /
//! `ncclCommShrink` and torch's `shrink_group`): `failed_ranks`, `revoke`, `agree`,
//! `shrink`. Built on the shm backend; the others answer with an error naming it.

use super::Comm;
use crate::error::Result;
use crate::group::Group;
use crate::op::{Op, OpKind};
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;

impl<G: Group> Comm<G> {
    /// The ranks of this communicator (in its numbering, ascending) whose process died
    /// or failed: killed, crashed, or ended by an error or panic. A rank that returned
    /// from its entry is not among them. Local: asks no peer.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// assert!(world.failed_ranks()?.is_empty()); // every rank is alive
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(2, demo).unwrap(); }
    /// ```
    pub fn failed_ranks(&self) -> Result<Vec<usize>> {
        self.inner.backend.failed_ranks()
    }

    /// Makes every pending and later op on this communicator fail, on every rank, with
    /// [`Error::Revoked`](crate::Error::Revoked) (ULFM's `MPIX_Comm_revoke`,
    /// `ncclCommRevoke`): a rank that saw a peer fail tells the ranks blocked elsewhere
    /// on this communicator, within one wait slice (50 ms), so they can all
    /// [`shrink`](Self::shrink) it. Not collective; [`agree`](Self::agree) and `shrink`
    /// still work on a revoked communicator.
    #[track_caller]
    pub fn revoke(&self) -> Result<()> {
        self.inner.backend.revoke()
    }

    /// Fault-tolerant agreement of the live ranks (ULFM's `MPIX_Comm_agree`): returns the
    /// AND of the `flag`s of the ranks that took part, and the ranks that did not
    /// because they are gone — the same answer on every live rank, even when ranks die
    /// during the call. Every live rank must call it (the `n`-th agreement of one rank
    /// meets the `n`-th of the others); it waits for live ranks that have not called it
    /// yet up to the communicator's deadline. Works on a revoked communicator.
    ///
    /// The usual use: "did every rank finish this step?" before committing it.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let (all_ok, gone) = world.agree(world.rank() != 1)?;
    /// assert!(!all_ok && gone.is_empty());
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn agree(&self, flag: bool) -> Result<(bool, Vec<usize>)> {
        let cx = self.cx("agree", Op::new(OpKind::Agree));
        let call = self.inner.recoveries.fetch_add(1, SeqCst);
        self.recorded_as(true, cx.name, cx.site, || self.inner.backend.agree(&cx, flag, call))
    }

    /// The communicator of the live ranks (ULFM's `MPIX_Comm_shrink`, NCCL's
    /// `ncclCommShrink`, torch's `shrink_group`): collective over the live ranks. It
    /// revokes this communicator first (ranks still blocked in ops on it learn at once),
    /// agrees on who is alive, and builds a new communicator of those ranks alone,
    /// numbered densely in this communicator's rank order, of the same group type. The
    /// ranks left out are [`failed_ranks`](Self::failed_ranks) of the new one's parent;
    /// every op, `split`, `subgroup` and mesh works on the result. This communicator
    /// stays revoked.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let mut x = [1u32];
    /// let world = match world.all_reduce(&mut x, ReduceOp::Sum) {
    ///     Err(dist_runtime::Error::PeerFailed { .. } | dist_runtime::Error::Revoked { .. }) => world.shrink()?,
    ///     other => { other?; world }
    /// };
    /// assert_eq!(x[0] as usize, world.size());
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn shrink(&self) -> Result<Comm<G>> {
        let cx = self.cx("shrink", Op::new(OpKind::Agree));
        if self.inner.device.is_some() {
            return Err(crate::error::Error::backend(
                "nccl",
                "shrinking a communicator with a device side (NCCL's ncclCommShrink) is not built yet: a dead rank \
                 ends a device job",
            ));
        }
        let call = self.inner.recoveries.fetch_add(1, SeqCst);
        let members = self.inner.members.clone();
        let name = move |live: &[usize]| {
            let world: Vec<String> = live.iter().map(|&r| members[r].to_string()).collect();
            format!("{}{{{}}}", G::NAME, world.join(","))
        };
        self.recorded_as(true, cx.name, cx.site, || {
            self.inner.backend.revoke()?;
            self.inner.drain();
            let (backend, out) = self.inner.backend.shrink(&cx, call, &name)?;
            let live: Vec<usize> = (0..self.size()).filter(|r| !out.contains(r)).collect();
            let members: Vec<usize> = live.iter().map(|&r| self.inner.members[r]).collect();
            crate::verify::failure::recovered();
            Ok(Comm::from_backend(Arc::from(backend), name(&live), members, self.inner.check, None))
        })
    }
}
