//! Communicators of groups: `subgroup` (torch's `new_group`), `split` (MPI's
//! `Comm_split`) and `mesh2` (a 2-D `DeviceMesh`), each collective over the parent, and
//! the child's backend created by the parent's. (The group markers themselves are in
//! `group.rs`, which depends on nothing, so the two never import each other.)

use crate::backend::Backend;
use crate::comm::device::DeviceSide;
use crate::comm::{hash_usizes, Comm};
use crate::error::{Error, Result};
use crate::group::Group;
use crate::op::{Op, OpKind};
use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;

impl<G: Group> Comm<G> {
    // ---------------------------------------------------------------- groups

    /// Creates a communicator of the ranks `ranks` (this communicator's numbering),
    /// numbered in increasing order of those ranks, as torch's `new_group` does by
    /// default: `subgroup(&[3, 0])` and `subgroup(&[0, 3])` are the same group, whose
    /// rank 0 is rank 0 here. [`subgroup_ordered`](Self::subgroup_ordered) keeps the
    /// list's order instead. Collective: every rank calls it with the same set; members
    /// get `Some`, the others `None`.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # dist_runtime::group!(Pair);
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// if world.size() >= 2 {
    ///     // As torch.distributed.new_group([1, 0]): world rank 0 is the pair's rank 0.
    ///     let pair = world.subgroup::<Pair>(&[1, 0])?;
    ///     match world.rank() {
    ///         0 | 1 => {
    ///             let pair = pair.unwrap();
    ///             assert_eq!((pair.rank(), pair.size()), (world.rank(), 2));
    ///             assert_eq!(pair.members(), [0, 1]);
    ///             let mut x = [world.rank() as u32 + 1];
    ///             pair.all_reduce(&mut x, ReduceOp::Sum)?;
    ///             assert_eq!(x, [3]);
    ///         }
    ///         _ => assert!(pair.is_none()),
    ///     }
    /// }
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(4, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn subgroup<H: Group>(&self, ranks: &[usize]) -> Result<Option<Comm<H>>> {
        let mut sorted = ranks.to_vec();
        sorted.sort_unstable();
        self.group_of::<H>("subgroup", ranks, &sorted)
    }

    /// Creates a communicator of the ranks `ranks` numbered in the list's order: the
    /// child's rank i is `ranks[i]` (MPI's `MPI_Group_incl`, torch's `new_group` with an
    /// explicit ordering via `split`). Collective: every rank calls it with the same list.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # dist_runtime::group!(Pair);
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// if world.size() >= 2 {
    ///     // World ranks 1 and 0 become ranks 0 and 1 of `pair`.
    ///     if let Some(pair) = world.subgroup_ordered::<Pair>(&[1, 0])? {
    ///         assert_eq!((pair.rank(), pair.members()), (1 - world.rank(), &[1, 0][..]));
    ///     }
    /// }
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(4, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn subgroup_ordered<H: Group>(&self, ranks: &[usize]) -> Result<Option<Comm<H>>> {
        self.group_of::<H>("subgroup_ordered", ranks, ranks)
    }

    /// `subgroup`/`subgroup_ordered`: `ranks` as the user gave them (checked), `order`
    /// the members in the child's numbering.
    #[track_caller]
    fn group_of<H: Group>(&self, name: &'static str, ranks: &[usize], order: &[usize]) -> Result<Option<Comm<H>>> {
        if ranks.is_empty() {
            return Err(Error::invalid(name, "the rank list is empty"));
        }
        let mut seen = HashSet::new();
        for &r in ranks {
            self.check_rank(name, "rank", r)?;
            if !seen.insert(r) {
                return Err(Error::invalid(name, format!("rank {r} appears twice in {ranks:?}")));
            }
        }
        let k = self.inner.children.fetch_add(1, Ordering::Relaxed);
        let fp = Op::new(OpKind::CommCreate).count(order.len()).extra(hash_usizes(order));
        let child = self.create_child(&self.cx(name, fp), &format!("{}#{k}", H::NAME), order)?;
        // The device side: members split with color 0, ordered by their place in `order`.
        let pos = order.iter().position(|&r| r == self.rank());
        let dev = self.split_device(pos.map(|_| 0), pos.unwrap_or(0))?;
        Ok(child.map(|b| self.child::<H>(b, H::NAME, order).with_device(dev)))
    }

    /// Attaches a device side (world creation, and children split from a parent's).
    pub(crate) fn with_device(mut self, dev: Option<DeviceSide>) -> Self {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.device = dev;
        }
        self
    }

    /// The device side of a child: a split of ours (collective over this communicator's
    /// device side, as `ncclCommSplit`; `color` None for ranks that are not in the
    /// child), with our deadline.
    pub(crate) fn split_device(&self, color: Option<u32>, key: usize) -> Result<Option<DeviceSide>> {
        let Some(d) = &self.inner.device else { return Ok(None) };
        Ok(d.dev.split(color, key)?.map(|dev| DeviceSide { dev: Arc::from(dev), timeout: d.timeout }))
    }

    /// The backend's child creation, compared across ranks first where the backend does
    /// not do that itself (the op carries a hash of the member list).
    pub(crate) fn create_child(&self, op: &Op, key: &str, members: &[usize]) -> Result<Option<Box<dyn Backend>>> {
        // After the queued non-blocking collectives, so every rank sees the same order
        // (and a worker's collective never waits behind a creation that holds MPI).
        self.inner.drain();
        crate::comm::agree(&self.inner, op)?;
        let group = key.split('#').next().unwrap_or(key);
        self.inner.backend.create_child(op, key, &self.child_name(group, members), members)
    }

    /// A child's name in errors: its group and its members' world ranks (`Tp{4,5}`),
    /// whatever communicator it was made from.
    fn child_name(&self, group: &str, ranks: &[usize]) -> String {
        let world: Vec<String> = ranks.iter().map(|&r| self.inner.members[r].to_string()).collect();
        format!("{group}{{{}}}", world.join(","))
    }

    pub(crate) fn child<H: Group>(&self, b: Box<dyn Backend>, name: &str, ranks: &[usize]) -> Comm<H> {
        let members: Vec<usize> = ranks.iter().map(|&r| self.inner.members[r]).collect();
        Comm::from_backend(Arc::from(b), self.child_name(name, ranks), members, self.inner.check, None)
    }

    /// Splits the communicator (MPI's `Comm_split`): ranks passing the same `color` form
    /// one new communicator, ordered by `key`, then by current rank. Collective.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # dist_runtime::group!(Parity);
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let r = world.rank();
    /// // Even and odd ranks part; each side is ordered by descending world rank.
    /// let side = world.split::<Parity>((r % 2) as u32, -(r as i64))?;
    /// let mine: Vec<usize> = (0..world.size()).rev().filter(|x| x % 2 == r % 2).collect();
    /// assert_eq!(side.members(), &mine[..]);
    /// assert_eq!(side.rank(), mine.iter().position(|&x| x == r).unwrap());
    /// let mut sum = [r as u64];
    /// side.all_reduce(&mut sum, ReduceOp::Sum)?;
    /// assert_eq!(sum[0], mine.iter().sum::<usize>() as u64);
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(4, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn split<H: Group>(&self, color: u32, key: i64) -> Result<Comm<H>> {
        let mut all = vec![0u64; 2 * self.size()];
        self.all_gather(&[color as u64, key as u64], &mut all)?;
        let mut members: Vec<usize> = (0..self.size()).filter(|&r| all[2 * r] == color as u64).collect();
        members.sort_by_key(|&r| (all[2 * r + 1] as i64, r));
        let k = self.inner.children.fetch_add(1, Ordering::Relaxed);
        let fp = Op::new(OpKind::CommCreate);
        let child = self.create_child(&self.cx("split", fp), &format!("{}#{k}c{color}", H::NAME), &members)?;
        let c = self.child::<H>(child.expect("every rank is in its own color"), H::NAME, &members);
        let key = members.iter().position(|&r| r == self.rank()).expect("a member of its own color");
        Ok(c.with_device(self.split_device(Some(color), key)?))
    }

    /// Arranges the `a × b` ranks of this communicator as a mesh (rank = i·b + j) and
    /// returns this rank's column communicator `Comm<A>` (size `a`: ranks sharing j, e.g.
    /// data parallel) and row communicator `Comm<B>` (size `b`: ranks sharing i,
    /// contiguous, e.g. tensor parallel), as torch's `DeviceMesh((a, b))`.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # dist_runtime::group!(Dp);
    /// # dist_runtime::group!(Tp);
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let n = world.size();
    /// if n % 2 == 0 {
    ///     // 2-way tensor parallel in n/2-way data parallel: rank = 2·i + j.
    ///     let (dp, tp) = world.mesh2::<Dp, Tp>(n / 2, 2)?;
    ///     let (i, j) = (world.rank() / 2, world.rank() % 2);
    ///     assert_eq!((dp.size(), dp.rank()), (n / 2, i));
    ///     assert_eq!((tp.size(), tp.rank()), (2, j));
    ///     assert_eq!(tp.members(), [2 * i, 2 * i + 1]);
    ///     assert_eq!(dp.members(), (0..n / 2).map(|x| 2 * x + j).collect::<Vec<_>>());
    ///     // Along the row: 2i + (2i + 1).
    ///     let mut x = [world.rank() as u64];
    ///     tp.all_reduce(&mut x, ReduceOp::Sum)?;
    ///     assert_eq!(x, [4 * i as u64 + 1]);
    /// }
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(4, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn mesh2<A: Group, B: Group>(&self, a: usize, b: usize) -> Result<(Comm<A>, Comm<B>)> {
        if a == 0 || b == 0 || a * b != self.size() {
            return Err(Error::invalid(
                "mesh2",
                format!("a mesh of {a} × {b} needs {} ranks, but {} has {}", a * b, self.inner.name, self.size()),
            ));
        }
        let (i, j) = (self.rank() / b, self.rank() % b);
        let k = self.inner.children.fetch_add(1, Ordering::Relaxed);
        let fp = Op::new(OpKind::CommCreate).count(a).extra(hash_usizes(&[a, b]));
        let col: Vec<usize> = (0..a).map(|x| x * b + j).collect();
        let row: Vec<usize> = (0..b).map(|y| i * b + y).collect();
        let ca = self.create_child(&self.cx("mesh2", fp), &format!("{}#{k}c{j}", A::NAME), &col)?;
        let cb = self.create_child(&self.cx("mesh2", fp), &format!("{}#{k}r{i}", B::NAME), &row)?;
        let (a_comm, b_comm) =
            (self.child::<A>(ca.expect("member"), A::NAME, &col), self.child::<B>(cb.expect("member"), B::NAME, &row));
        let col_dev = self.split_device(Some(j as u32), i)?;
        let row_dev = self.split_device(Some(i as u32), j)?;
        Ok((a_comm.with_device(col_dev), b_comm.with_device(row_dev)))
    }
}
