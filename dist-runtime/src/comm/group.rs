//! Communicators of groups: `subgroup` (torch's `new_group`), `split` (MPI's
//! `Comm_split`) and `mesh2` (a 2-D `DeviceMesh`), each collective over the parent, and
//! the child's backend created by the parent's. (The group markers themselves are in
//! `group.rs`, which depends on nothing, so the two never import each other.)

use crate::backend::Backend;
use crate::comm::device::DeviceSide;
use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::group::{Group, World};
use crate::op::hash_usizes;
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

/// The group markers of an n-D mesh, as a tuple `(A,)` to `(A, B, C, D, E)`:
/// [`Comm::mesh`] and [`Comm::submesh`] return one communicator per marker, in order.
pub trait MeshGroups {
    /// `(Comm<A>, Comm<B>, …)`.
    type Comms;
    /// `[usize; N]`: one number per marker (sizes for `mesh`, dimension indices for
    /// `submesh`).
    type Dims: AsRef<[usize]>;
    #[doc(hidden)]
    fn names() -> Vec<&'static str>;
    #[doc(hidden)]
    fn assemble(parts: Vec<MeshPart>) -> Self::Comms;
}

/// One communicator of a mesh before it is typed (an implementation detail of
/// [`MeshGroups`]).
#[doc(hidden)]
pub struct MeshPart(Arc<crate::comm::Inner>);

macro_rules! mesh_groups {
    ($n:literal: $($g:ident),+) => {
        impl<$($g: Group),+> MeshGroups for ($($g,)+) {
            type Comms = ($(Comm<$g>,)+);
            type Dims = [usize; $n];
            fn names() -> Vec<&'static str> {
                vec![$($g::NAME),+]
            }
            fn assemble(parts: Vec<MeshPart>) -> Self::Comms {
                let mut it = parts.into_iter();
                ($(Comm::<$g> { inner: it.next().expect("one part per group").0, _g: std::marker::PhantomData },)+)
            }
        }
    };
}
mesh_groups!(1: A);
mesh_groups!(2: A, B);
mesh_groups!(3: A, B, C);
mesh_groups!(4: A, B, C, D);
mesh_groups!(5: A, B, C, D, E);

impl<G: Group> Comm<G> {
    /// Arranges this communicator's ranks as an n-D mesh of shape `dims` (1 to 5
    /// dimensions, product = `size()`) and returns this rank's communicator along each
    /// dimension, typed by the markers in order. The layout is torch's `DeviceMesh`:
    /// row-major, the last dimension varies fastest (`rank = Σ coord[d]·Π dims[d+1..]`),
    /// so the last dimension's groups are contiguous ranks (put tensor parallel there,
    /// where the bandwidth is). Along dimension d, a communicator holds the ranks that
    /// share this rank's coordinates on every other dimension, ordered by their
    /// coordinate on d. Collective over this communicator.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # dist_runtime::group!(Pp);
    /// # dist_runtime::group!(Dp);
    /// # dist_runtime::group!(Tp);
    /// # #[spmd(ranks = 8)]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// // 8 ranks as 2 pipeline stages × 2 data-parallel replicas × 2 tensor shards:
    /// // rank = 4·pp + 2·dp + tp.
    /// let (pp, dp, tp) = world.mesh::<(Pp, Dp, Tp)>([2, 2, 2])?;
    /// let r = world.rank();
    /// assert_eq!(world.mesh_coordinate(&[2, 2, 2])?, [r / 4, r / 2 % 2, r % 2]);
    /// assert_eq!((pp.rank(), dp.rank(), tp.rank()), (r / 4, r / 2 % 2, r % 2));
    /// assert_eq!(tp.members(), [r / 2 * 2, r / 2 * 2 + 1]);
    /// assert_eq!(pp.members(), [r % 4, r % 4 + 4]);
    /// let mut x = [r as u32];
    /// tp.all_reduce(&mut x, ReduceOp::Sum)?; // the two shards of this stage and replica
    /// assert_eq!(x, [(r / 2 * 4 + 1) as u32]);
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(8, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn mesh<M: MeshGroups>(&self, dims: M::Dims) -> Result<M::Comms> {
        let dims = dims.as_ref().to_vec();
        let along: Vec<Vec<usize>> = (0..dims.len()).map(|d| vec![d]).collect();
        self.mesh_groups::<M>("mesh", &dims, &along)
    }

    /// The communicators of a sub-mesh of the mesh `dims`: one per dimension index in
    /// `along` (increasing), each the same group [`mesh`](Self::mesh) returns for that
    /// dimension (torch's `mesh["dp", "tp"]`). Collective over this communicator.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # dist_runtime::group!(Dp);
    /// # dist_runtime::group!(Tp);
    /// # #[spmd(ranks = 8)]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// // Of a 2 × 2 × 2 (pp, dp, tp) mesh, only the dp and tp communicators.
    /// let (dp, tp) = world.submesh::<(Dp, Tp)>(&[2, 2, 2], [1, 2])?;
    /// assert_eq!((dp.size(), tp.size()), (2, 2));
    /// assert_eq!(dp.members(), [world.rank() / 4 * 4 + world.rank() % 2, world.rank() / 4 * 4 + world.rank() % 2 + 2]);
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(8, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn submesh<M: MeshGroups>(&self, dims: &[usize], along: M::Dims) -> Result<M::Comms> {
        let along: Vec<Vec<usize>> = along.as_ref().iter().map(|&d| vec![d]).collect();
        if let Some(d) = along.iter().flatten().find(|&&d| d >= dims.len()) {
            return Err(Error::invalid(
                "submesh",
                format!("dimension {d} is not one of the mesh's {} (0..{})", dims.len(), dims.len()),
            ));
        }
        self.mesh_groups::<M>("submesh", dims, &along)
    }

    /// One communicator over several dimensions of the mesh `dims`, flattened (torch's
    /// `mesh["dp", "cp"]._flatten()`): the ranks that share this rank's coordinates on
    /// every dimension not in `along` (increasing indices), in row-major order over
    /// `along`. The data-parallel × context-parallel group of a (pp, dp, cp, tp) mesh
    /// is `mesh_group::<DpCp>(&dims, &[1, 2])`. Collective over this communicator.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # dist_runtime::group!(DpCp);
    /// # #[spmd(ranks = 8)]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// // (pp, dp, cp, tp) = (2, 2, 1, 2): the dp × cp ranks of this stage and shard.
    /// let dims = [2, 2, 1, 2];
    /// let dpcp = world.mesh_group::<DpCp>(&dims, &[1, 2])?;
    /// let r = world.rank();
    /// assert_eq!(dpcp.members(), [r / 4 * 4 + r % 2, r / 4 * 4 + r % 2 + 2]);
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(8, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn mesh_group<H: Group>(&self, dims: &[usize], along: &[usize]) -> Result<Comm<H>> {
        let (c,) = self.mesh_groups::<(H,)>("mesh_group", dims, &[along.to_vec()])?;
        Ok(c)
    }

    /// This rank's coordinate in the row-major mesh `dims` (torch's
    /// `DeviceMesh.get_coordinate()`); local, nothing is sent.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let c = world.mesh_coordinate(&[world.size(), 1])?;
    /// assert_eq!(c, [world.rank(), 0]);
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn mesh_coordinate(&self, dims: &[usize]) -> Result<Vec<usize>> {
        let all: Vec<usize> = (0..dims.len()).collect();
        if let Some(p) = dist_ops::mesh_problem(dims, &all, self.size()) {
            return Err(Error::invalid("mesh_coordinate", format!("{p} ({})", self.inner.name)));
        }
        Ok(dist_ops::mesh_coordinate(dims, self.rank()))
    }

    /// Creates one communicator per entry of `along` (each a set of dimensions of the
    /// mesh `dims`), typed by `M`'s markers.
    #[track_caller]
    fn mesh_groups<M: MeshGroups>(&self, name: &'static str, dims: &[usize], along: &[Vec<usize>]) -> Result<M::Comms> {
        for a in along {
            if let Some(p) = dist_ops::mesh_problem(dims, a, self.size()) {
                return Err(Error::invalid(name, format!("{p} ({})", self.inner.name)));
            }
        }
        let names = M::names();
        let k = self.inner.children.fetch_add(1, Ordering::Relaxed);
        let mut shape: Vec<usize> = dims.to_vec();
        for a in along {
            shape.push(usize::MAX);
            shape.extend(a);
        }
        let fp = Op::new(OpKind::CommCreate).count(dims.len()).extra(hash_usizes(&shape));
        let cx = self.cx(name, fp);
        let mut parts = Vec::with_capacity(along.len());
        for (i, a) in along.iter().enumerate() {
            let (members, color) = dist_ops::mesh_group(dims, a, self.rank());
            let dim: Vec<String> = a.iter().map(|d| d.to_string()).collect();
            let key = format!("{}#{k}m{}c{color}", names[i], dim.join("."));
            let child = self.create_child(&cx, &key, &members)?.expect("a member of its own group");
            let c = self.child::<World>(child, names[i], &members);
            let pos = members.iter().position(|&m| m == self.rank()).expect("a member");
            let c = c.with_device(self.split_device(Some(color as u32), pos)?);
            parts.push(MeshPart(c.inner));
        }
        Ok(M::assemble(parts))
    }
}
