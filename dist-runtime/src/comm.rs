//! `Comm<G>`: the typed communicator. Every op checks its arguments locally before any
//! byte moves, then hands bytes + `DType` to the backend.

use crate::backend::{Backend, ReqId};
use crate::dtype::{DType, Element};
use crate::error::{Error, Result, Site};
use crate::group::Group;
use crate::op::{Op, OpKind};
use crate::reduce_op::ReduceOp;
use crate::tag::Tag;
use std::collections::HashSet;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};

/// State shared by a communicator and its in-flight handles.
pub(crate) struct Inner {
    pub(crate) backend: Arc<dyn Backend>,
    /// "World", "Tp{0,1}", … for messages.
    name: String,
    /// World rank of each member, by communicator rank.
    members: Vec<usize>,
    children: AtomicU64,
    worker: Mutex<Option<Worker>>,
    inflight: Arc<(Mutex<usize>, Condvar)>,
    /// Keeps the store server alive when this process hosts it (world communicator only).
    _keep: Option<Box<dyn std::any::Any + Send + Sync>>,
    /// The NCCL communicator for device buffers, when the job runs the NCCL backend.
    #[cfg(feature = "nccl")]
    pub(crate) nccl: Option<Arc<crate::nccl::NcclComm>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // Unwinding out of a rank: tell peers why before they see us leave.
            crate::verify::failure::mark_failed(&crate::verify::failure::last_panic());
        }
        self.drain();
        // Close the worker's queue and let it finish.
        self.worker.lock().unwrap_or_else(|p| p.into_inner()).take();
        self.backend.finish();
    }
}

/// A background thread that runs this communicator's non-blocking collectives in order.
struct Worker {
    tx: mpsc::Sender<Box<dyn FnOnce() + Send>>,
}

impl Inner {
    /// Waits until every queued non-blocking collective has run, so a blocking collective
    /// keeps its place in the order every rank sees.
    fn drain(&self) {
        let (m, cv) = &*self.inflight;
        let mut g = m.lock().unwrap_or_else(|p| p.into_inner());
        while *g > 0 {
            g = cv.wait(g).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn enqueue(&self, job: Box<dyn FnOnce() + Send>) -> Result<()> {
        let mut w = self.worker.lock().unwrap_or_else(|p| p.into_inner());
        if w.is_none() {
            let (tx, rx) = mpsc::channel::<Box<dyn FnOnce() + Send>>();
            std::thread::Builder::new()
                .name(format!("dist-{}-async", self.name))
                .spawn(move || {
                    for job in rx {
                        job();
                    }
                })
                .map_err(|e| Error::Backend {
                    backend: "comm",
                    msg: "cannot start the async worker".into(),
                    source: Some(Box::new(e)),
                })?;
            *w = Some(Worker { tx });
        }
        *self.inflight.0.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        w.as_ref().expect("set").tx.send(job).map_err(|_| Error::backend("comm", "async worker is gone"))
    }
}

/// A communicator over a group of ranks, typed by the group marker `G`.
///
/// Ranks passed to and returned by a `Comm<G>` are ranks *in that communicator*
/// (`0..size()`), not world ranks. Every op is collective over the communicator
/// unless it is point-to-point; every rank must call the same collectives in the same
/// order with agreeing arguments (checked at run time with `DIST_DEBUG=check`).
pub struct Comm<G: Group> {
    pub(crate) inner: Arc<Inner>,
    _g: PhantomData<fn() -> G>,
}

/// A cheap handle to the same communicator (a reference count), as torch's process
/// groups are shared by the layers that keep them: every clone runs its ops on the one
/// communicator, in the one order every rank sees. The communicator ends when the last
/// clone (and every request borrowing it) is gone.
///
/// ```
/// # use dist_runtime::prelude::*;
/// # #[spmd]
/// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
/// // A layer keeps its own handle; its ops share the one order with `world`'s.
/// let layer = world.clone();
/// let mut a = [1u32];
/// let mut b = [world.rank() as u32];
/// layer.all_reduce(&mut a, ReduceOp::Sum)?;
/// world.all_reduce(&mut b, ReduceOp::Max)?;
/// assert_eq!((a[0], b[0]), (world.size() as u32, world.size() as u32 - 1));
/// # Ok(()) }
/// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
/// ```
impl<G: Group> Clone for Comm<G> {
    fn clone(&self) -> Self {
        Comm { inner: self.inner.clone(), _g: PhantomData }
    }
}

impl<G: Group> std::fmt::Debug for Comm<G> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Comm<{}>(rank {} of {}, {})", G::NAME, self.rank(), self.size(), self.inner.name)
    }
}

fn bytes<T: Element>(s: &[T]) -> &[u8] {
    bytemuck::cast_slice(s)
}
fn bytes_mut<T: Element>(s: &mut [T]) -> &mut [u8] {
    bytemuck::cast_slice_mut(s)
}

fn hash_usizes(v: &[usize]) -> u64 {
    // FNV-1a: stable across processes (unlike std's RandomState).
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for x in v {
        for b in (*x as u64).to_le_bytes() {
            h ^= b as u64;
            h = h.wrapping_mul(0x100_0000_01b3);
        }
    }
    h | 1
}

impl<G: Group> Comm<G> {
    pub(crate) fn from_backend(
        backend: Arc<dyn Backend>,
        name: String,
        members: Vec<usize>,
        keep: Option<Box<dyn std::any::Any + Send + Sync>>,
    ) -> Comm<G> {
        Comm {
            inner: Arc::new(Inner {
                backend,
                name,
                members,
                children: AtomicU64::new(0),
                worker: Mutex::new(None),
                inflight: Arc::new((Mutex::new(0), Condvar::new())),
                _keep: keep,
                #[cfg(feature = "nccl")]
                nccl: None,
            }),
            _g: PhantomData,
        }
    }

    /// Another handle to an existing communicator.
    pub(crate) fn from_inner(inner: Arc<Inner>) -> Comm<G> {
        Comm { inner, _g: PhantomData }
    }

    /// This rank's number in the communicator, `0..size()`.
    ///
    /// ```
    /// use dist_runtime::prelude::*;
    ///
    /// #[spmd]
    /// fn whoami(world: Comm<World>) -> dist_runtime::Result<usize> {
    ///     assert!(world.rank() < world.size());
    ///     Ok(world.rank())
    /// }
    ///
    /// fn main() {
    ///     // `launch` returns each rank's value, by rank.
    ///     assert_eq!(dist_runtime::launch(3, whoami).unwrap(), [0, 1, 2]);
    /// }
    /// ```
    pub fn rank(&self) -> usize {
        self.inner.backend.rank()
    }

    /// Number of ranks in the communicator.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// // Every rank contributes 1: the sum counts the ranks.
    /// let mut count = [1u32];
    /// world.all_reduce(&mut count, ReduceOp::Sum)?;
    /// assert_eq!(count[0] as usize, world.size());
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    pub fn size(&self) -> usize {
        self.inner.backend.size()
    }

    /// World rank of each member, indexed by communicator rank.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # dist_runtime::group!(Pair);
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// assert_eq!(world.members(), (0..world.size()).collect::<Vec<_>>());
    /// if world.size() >= 2 {
    ///     // The child's rank i is world rank ranks[i].
    ///     if let Some(pair) = world.subgroup::<Pair>(&[1, 0])? {
    ///         assert_eq!(pair.members(), [1, 0]);
    ///         assert_eq!(pair.members()[pair.rank()], world.rank());
    ///     }
    /// }
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(4, demo).unwrap(); }
    /// ```
    pub fn members(&self) -> &[usize] {
        &self.inner.members
    }

    /// This rank's number in the world (torch's `dist.get_rank()`, where [`rank`](Self::rank)
    /// is `dist.get_rank(group)`).
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # dist_runtime::group!(Dp);
    /// # dist_runtime::group!(Tp);
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// if world.size() % 2 == 0 {
    ///     // Rows of two ranks: world ranks {0, 1}, {2, 3}, …
    ///     let (_dp, tp) = world.mesh2::<Dp, Tp>(world.size() / 2, 2)?;
    ///     assert_eq!(tp.rank(), world.rank() % 2); // dist.get_rank(tp)
    ///     assert_eq!(tp.world_rank(), world.rank()); // dist.get_rank()
    /// }
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(4, demo).unwrap(); }
    /// ```
    pub fn world_rank(&self) -> usize {
        self.inner.members[self.rank()]
    }

    /// The world rank of this communicator's rank `rank` (torch's
    /// `get_global_rank(group, group_rank)`). An error if `rank` is not in `0..size()`.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # dist_runtime::group!(Dp);
    /// # dist_runtime::group!(Tp);
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// if world.size() % 2 == 0 {
    ///     let (_dp, tp) = world.mesh2::<Dp, Tp>(world.size() / 2, 2)?;
    ///     let first = world.rank() / 2 * 2; // the first world rank of this row
    ///     assert_eq!(tp.world_rank_of(0)?, first); // get_global_rank(tp, 0)
    ///     assert_eq!(tp.world_rank_of(1)?, first + 1);
    ///     assert!(tp.world_rank_of(2).is_err()); // tp has ranks 0 and 1
    /// }
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(4, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn world_rank_of(&self, rank: usize) -> Result<usize> {
        self.check_rank("world_rank_of", "rank", rank)?;
        Ok(self.inner.members[rank])
    }

    /// This communicator's rank of the world rank `world_rank` (torch's
    /// `get_group_rank(group, global_rank)`): how to name a root or peer by its world
    /// rank, since every `Comm` op takes ranks in the communicator's own numbering,
    /// as MPI does (torch's `src=`/`dst=` are world ranks; its `group_src=` are not).
    /// An error naming the group if that rank is not a member.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # dist_runtime::group!(Dp);
    /// # dist_runtime::group!(Tp);
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// if world.size() % 2 == 0 {
    ///     let (_dp, tp) = world.mesh2::<Dp, Tp>(world.size() / 2, 2)?;
    ///     // torch: dist.broadcast(t, src=src, group=tp), `src` a world rank
    ///     let src = world.rank() / 2 * 2 + 1; // the second world rank of this row
    ///     let mut t = [0u32; 2];
    ///     if world.rank() == src {
    ///         t = [7, src as u32];
    ///     }
    ///     tp.broadcast(&mut t, tp.group_rank_of(src)?)?;
    ///     assert_eq!(t, [7, src as u32]);
    ///     assert_eq!(tp.group_rank_of(src)?, 1);
    ///     assert!(tp.group_rank_of(world.size()).is_err()); // not a member
    /// }
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(4, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn group_rank_of(&self, world_rank: usize) -> Result<usize> {
        match self.inner.members.iter().position(|&m| m == world_rank) {
            Some(r) => Ok(r),
            None => Err(Error::invalid(
                "group_rank_of",
                format!(
                    "world rank {world_rank} is not a member of {} (members: {:?})",
                    self.inner.name, self.inner.members
                ),
            )),
        }
    }

    /// The group's name and members in world ranks, e.g. `Tp{2,3}`; the world communicator is `World`.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # dist_runtime::group!(Dp);
    /// # dist_runtime::group!(Tp);
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// assert_eq!(world.name(), "World");
    /// if world.size() % 2 == 0 {
    ///     let (_dp, tp) = world.mesh2::<Dp, Tp>(world.size() / 2, 2)?;
    ///     let first = world.rank() / 2 * 2;
    ///     assert_eq!(tp.name(), format!("Tp{{{},{}}}", first, first + 1));
    /// }
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(4, demo).unwrap(); }
    /// ```
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The backend that moves this communicator's host buffers: "shm" (device buffers go through
    /// NCCL, on the `device()` side, with the `nccl` feature).
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// // Host buffers go through shared memory.
    /// assert_eq!(world.backend(), "shm");
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(2, demo).unwrap(); }
    /// ```
    pub fn backend(&self) -> &'static str {
        self.inner.backend.kind()
    }

    #[track_caller]
    fn check_rank(&self, op: &'static str, what: &str, r: usize) -> Result<()> {
        if r >= self.size() {
            return Err(Error::invalid(
                op,
                format!(
                    "{what} {r} is out of range for {} of size {} (valid: 0..{})",
                    self.inner.name,
                    self.size(),
                    self.size()
                ),
            ));
        }
        Ok(())
    }

    #[track_caller]
    fn check_len(&self, op: &'static str, what: &str, got: usize, want: usize, why: &str) -> Result<()> {
        if got != want {
            return Err(Error::invalid(op, format!("{what} has {got} elements but must have {want} ({why})")));
        }
        Ok(())
    }

    #[track_caller]
    fn check_counts(&self, op: &'static str, counts: &[usize]) -> Result<()> {
        if counts.len() != self.size() {
            return Err(Error::invalid(
                op,
                format!("counts has {} entries but the communicator has {} ranks", counts.len(), self.size()),
            ));
        }
        Ok(())
    }

    #[track_caller]
    fn cx(&self, name: &'static str, op: Op) -> Op {
        op.named(name)
    }

    // ---------------------------------------------------------------- collectives

    /// Blocks until every rank of the communicator has called `barrier`.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// # let dir = std::env::temp_dir()
    /// #     .join(format!("dist-barrier-doctest-{}", std::os::unix::process::parent_id()));
    /// # std::fs::create_dir_all(&dir).unwrap();
    /// // Each rank leaves a file; past the barrier, every rank sees all of them.
    /// std::fs::write(dir.join(world.rank().to_string()), b"here").unwrap();
    /// world.barrier()?;
    /// assert_eq!(std::fs::read_dir(&dir).unwrap().count(), world.size());
    /// # world.barrier()?;
    /// # if world.rank() == 0 {
    /// #     std::fs::remove_dir_all(&dir).unwrap();
    /// # }
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn barrier(&self) -> Result<()> {
        self.inner.drain();
        self.inner.backend.barrier(&self.cx("barrier", Op::new(OpKind::Barrier)))
    }

    /// Copies `buf` of rank `root` into `buf` of every rank. Every rank passes a buffer of
    /// the same length.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let mut params = vec![0.0f32; 4];
    /// if world.rank() == 0 {
    ///     params = vec![1.0, 2.0, 3.0, 4.0];
    /// }
    /// world.broadcast(&mut params, 0)?;
    /// assert_eq!(params, [1.0, 2.0, 3.0, 4.0]);
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn broadcast<T: Element>(&self, buf: &mut [T], root: usize) -> Result<()> {
        self.check_rank("broadcast", "root", root)?;
        let fp = Op::new(OpKind::Broadcast).dtype(T::DTYPE).count(buf.len()).root(root);
        self.inner.drain();
        self.inner.backend.broadcast(&self.cx("broadcast", fp), bytes_mut(buf), root)
    }

    /// Reduces `buf` over all ranks into `buf` of `root`; other ranks' `buf` is unchanged.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let (r, n) = (world.rank() as u64, world.size() as u64);
    /// let mut x = [r, 1];
    /// world.reduce(&mut x, ReduceOp::Sum, 0)?;
    /// if r == 0 {
    ///     assert_eq!(x, [n * (n - 1) / 2, n]); // 0 + 1 + … + (n-1), and n ones
    /// } else {
    ///     assert_eq!(x, [r, 1]); // unchanged
    /// }
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn reduce<T: Element>(&self, buf: &mut [T], op: ReduceOp, root: usize) -> Result<()> {
        self.check_rank("reduce", "root", root)?;
        op.validate(T::DTYPE, "reduce")?;
        let fp = Op::new(OpKind::Reduce).dtype(T::DTYPE).count(buf.len()).root(root).reduce(op);
        self.inner.drain();
        self.inner.backend.reduce(&self.cx("reduce", fp), bytes_mut(buf), T::DTYPE, op, root)
    }

    /// Reduces `buf` over all ranks, element by element, leaving the result in every
    /// rank's `buf`. All ranks get bitwise-identical results.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let mut grad = vec![world.rank() as f32; 1024];
    /// world.all_reduce(&mut grad, ReduceOp::Avg)?;
    /// // The mean of 0, 1, …, n-1 is (n-1)/2.
    /// let mean = (world.size() - 1) as f32 / 2.0;
    /// assert!(grad.iter().all(|&g| g == mean));
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn all_reduce<T: Element>(&self, buf: &mut [T], op: ReduceOp) -> Result<()> {
        op.validate(T::DTYPE, "all_reduce")?;
        let fp = Op::new(OpKind::AllReduce).dtype(T::DTYPE).count(buf.len()).reduce(op);
        self.inner.drain();
        self.inner.backend.all_reduce(&self.cx("all_reduce", fp), bytes_mut(buf), T::DTYPE, op)
    }

    /// Concatenates every rank's `send` (all of the same length) into `recv`, in rank
    /// order, on every rank: `recv.len() == size() * send.len()`.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let r = world.rank() as u32;
    /// let mut all = vec![0u32; 2 * world.size()];
    /// world.all_gather(&[r, 10 * r], &mut all)?;
    /// // [0, 0, 1, 10, 2, 20, …]
    /// let want: Vec<u32> = (0..world.size() as u32).flat_map(|j| [j, 10 * j]).collect();
    /// assert_eq!(all, want);
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn all_gather<T: Element>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
        self.check_len("all_gather", "recv", recv.len(), send.len() * self.size(), "size() × send.len()")?;
        let counts = vec![send.len() * T::DTYPE.size(); self.size()];
        let fp = Op::new(OpKind::AllGather).dtype(T::DTYPE).count(send.len());
        self.inner.drain();
        self.inner.backend.gather_v(&self.cx("all_gather", fp), bytes(send), Some(bytes_mut(recv)), &counts, None)
    }

    /// As [`all_gather`](Self::all_gather) with per-rank counts: rank j contributes
    /// `counts[j]` elements (its `send.len()`), placed after those of ranks `0..j`.
    /// Every rank passes the same `counts`.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// // Rank j contributes j + 1 copies of j.
    /// let counts: Vec<usize> = (0..world.size()).map(|j| j + 1).collect();
    /// let mine = vec![world.rank() as i32; world.rank() + 1];
    /// let mut all = vec![0i32; counts.iter().sum()];
    /// world.all_gather_v(&mine, &mut all, &counts)?;
    /// // [0, 1, 1, 2, 2, 2, …]
    /// let want: Vec<i32> = (0..world.size()).flat_map(|j| vec![j as i32; j + 1]).collect();
    /// assert_eq!(all, want);
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn all_gather_v<T: Element>(&self, send: &[T], recv: &mut [T], counts: &[usize]) -> Result<()> {
        self.check_counts("all_gather_v", counts)?;
        self.check_len("all_gather_v", "send", send.len(), counts[self.rank()], "counts[rank]")?;
        self.check_len("all_gather_v", "recv", recv.len(), counts.iter().sum(), "the sum of counts")?;
        let bc: Vec<usize> = counts.iter().map(|c| c * T::DTYPE.size()).collect();
        let fp = Op::new(OpKind::AllGather).dtype(T::DTYPE).count(counts.iter().sum()).extra(hash_usizes(counts));
        self.inner.drain();
        self.inner.backend.gather_v(&self.cx("all_gather_v", fp), bytes(send), Some(bytes_mut(recv)), &bc, None)
    }

    /// Gathers every rank's `send` (all of the same length) into `recv` on `root`, in rank
    /// order. `root` passes `Some(recv)` with `size() * send.len()` elements; the others
    /// pass `None`.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let root = world.size() - 1;
    /// let mine = [2 * world.rank() as u32];
    /// if world.rank() == root {
    ///     let mut all = vec![0u32; world.size()];
    ///     world.gather(&mine, Some(&mut all[..]), root)?;
    ///     assert_eq!(all, (0..world.size() as u32).map(|j| 2 * j).collect::<Vec<_>>());
    /// } else {
    ///     world.gather(&mine, None, root)?;
    /// }
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn gather<T: Element>(&self, send: &[T], recv: Option<&mut [T]>, root: usize) -> Result<()> {
        let counts = vec![send.len(); self.size()];
        self.gather_impl("gather", send, recv, &counts, root, false)
    }

    /// As [`gather`](Self::gather) with per-rank counts (the same `counts` on every rank).
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// // Rank j sends j + 1 copies of j; the root gets them one rank after another.
    /// let root = 0;
    /// let counts: Vec<usize> = (1..=world.size()).collect();
    /// let mine = vec![world.rank() as u64; world.rank() + 1];
    /// if world.rank() == root {
    ///     let mut all = vec![0u64; counts.iter().sum()];
    ///     world.gather_v(&mine, Some(&mut all[..]), &counts, root)?;
    ///     let want: Vec<u64> = (0..world.size()).flat_map(|j| vec![j as u64; j + 1]).collect();
    ///     assert_eq!(all, want); // [0, 1, 1, 2, 2, 2, …]
    /// } else {
    ///     world.gather_v(&mine, None, &counts, root)?;
    /// }
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn gather_v<T: Element>(
        &self,
        send: &[T],
        recv: Option<&mut [T]>,
        counts: &[usize],
        root: usize,
    ) -> Result<()> {
        self.check_counts("gather_v", counts)?;
        self.gather_impl("gather_v", send, recv, counts, root, true)
    }

    #[track_caller]
    fn gather_impl<T: Element>(
        &self,
        op: &'static str,
        send: &[T],
        recv: Option<&mut [T]>,
        counts: &[usize],
        root: usize,
        v: bool,
    ) -> Result<()> {
        self.check_rank(op, "root", root)?;
        self.check_len(
            op,
            "send",
            send.len(),
            counts[self.rank()],
            if v { "counts[rank]" } else { "the same on every rank" },
        )?;
        match (&recv, self.rank() == root) {
            (None, true) => {
                return Err(Error::invalid(
                    op,
                    format!("root {root} must pass Some(recv) with {} elements", counts.iter().sum::<usize>()),
                ))
            }
            (Some(_), false) => {
                return Err(Error::invalid(
                    op,
                    format!("rank {} is not the root ({root}) and must pass None for recv", self.rank()),
                ))
            }
            (Some(r), true) => self.check_len(
                op,
                "recv",
                r.len(),
                counts.iter().sum(),
                if v { "the sum of counts" } else { "size() × send.len()" },
            )?,
            (None, false) => {}
        }
        let bc: Vec<usize> = counts.iter().map(|c| c * T::DTYPE.size()).collect();
        let mut fp = Op::new(OpKind::Gather).dtype(T::DTYPE).root(root);
        fp = if v { fp.count(counts.iter().sum()).extra(hash_usizes(counts)) } else { fp.count(send.len()) };
        self.inner.drain();
        self.inner.backend.gather_v(&self.cx(op, fp), bytes(send), recv.map(bytes_mut), &bc, Some(root))
    }

    /// Splits `root`'s `send` (`size() * recv.len()` elements) into `size()` blocks and
    /// gives block j to rank j. `root` passes `Some(send)`; the others pass `None`.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let root = 0;
    /// let data: Vec<i64> = (0..2 * world.size() as i64).collect();
    /// let send = if world.rank() == root { Some(&data[..]) } else { None };
    /// let mut mine = [0i64; 2];
    /// world.scatter(send, &mut mine, root)?;
    /// let r = world.rank() as i64;
    /// assert_eq!(mine, [2 * r, 2 * r + 1]);
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn scatter<T: Element>(&self, send: Option<&[T]>, recv: &mut [T], root: usize) -> Result<()> {
        self.check_rank("scatter", "root", root)?;
        match (&send, self.rank() == root) {
            (None, true) => {
                return Err(Error::invalid(
                    "scatter",
                    format!("root {root} must pass Some(send) with {} elements", recv.len() * self.size()),
                ))
            }
            (Some(_), false) => {
                return Err(Error::invalid(
                    "scatter",
                    format!("rank {} is not the root ({root}) and must pass None for send", self.rank()),
                ))
            }
            (Some(s), true) => {
                self.check_len("scatter", "send", s.len(), recv.len() * self.size(), "size() × recv.len()")?
            }
            (None, false) => {}
        }
        let fp = Op::new(OpKind::Scatter).dtype(T::DTYPE).count(recv.len()).root(root);
        self.inner.drain();
        self.inner.backend.scatter(&self.cx("scatter", fp), send.map(bytes), bytes_mut(recv), root)
    }

    /// Reduces `send` (`size()` blocks of `recv.len()` elements) over all ranks and gives
    /// rank j the reduction of block j.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let (r, n) = (world.rank() as u64, world.size() as u64);
    /// // Block j of every rank's `send` is [r, j]; it sums to [0 + 1 + … + (n-1), n·j].
    /// let send: Vec<u64> = (0..n).flat_map(|j| [r, j]).collect();
    /// let mut mine = [0u64; 2];
    /// world.reduce_scatter(&send, &mut mine, ReduceOp::Sum)?;
    /// assert_eq!(mine, [n * (n - 1) / 2, n * r]);
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn reduce_scatter<T: Element>(&self, send: &[T], recv: &mut [T], op: ReduceOp) -> Result<()> {
        op.validate(T::DTYPE, "reduce_scatter")?;
        self.check_len("reduce_scatter", "send", send.len(), recv.len() * self.size(), "size() × recv.len()")?;
        let fp = Op::new(OpKind::ReduceScatter).dtype(T::DTYPE).count(recv.len()).reduce(op);
        self.inner.drain();
        self.inner.backend.reduce_scatter(&self.cx("reduce_scatter", fp), bytes(send), bytes_mut(recv), T::DTYPE, op)
    }

    /// Sends block j of `send` to rank j and receives block i of `recv` from rank i; all
    /// blocks have `send.len() / size()` elements.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let (r, n) = (world.rank() as u32, world.size() as u32);
    /// // Rank r sends 10·r + j to rank j …
    /// let send: Vec<u32> = (0..n).map(|j| 10 * r + j).collect();
    /// let mut recv = vec![0u32; n as usize];
    /// world.all_to_all(&send, &mut recv)?;
    /// // … so block i of `recv` is 10·i + r, from rank i.
    /// let want: Vec<u32> = (0..n).map(|i| 10 * i + r).collect();
    /// assert_eq!(recv, want);
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn all_to_all<T: Element>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
        let n = self.size();
        if !send.len().is_multiple_of(n) {
            return Err(Error::invalid(
                "all_to_all",
                format!("send has {} elements, not a multiple of the communicator size {n}", send.len()),
            ));
        }
        self.check_len("all_to_all", "recv", recv.len(), send.len(), "the same as send")?;
        let counts = vec![send.len() / n * T::DTYPE.size(); n];
        let fp = Op::new(OpKind::AllToAll).dtype(T::DTYPE).count(send.len());
        self.inner.drain();
        self.inner.backend.all_to_all_v(&self.cx("all_to_all", fp), bytes(send), &counts, bytes_mut(recv), &counts)
    }

    /// All-to-all with per-pair counts: `send_counts[j]` elements go to rank j,
    /// `recv_counts[i]` come from rank i. What i sends to j must equal what j expects
    /// from i; that is checked across ranks, and a disagreement is an error on every rank.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let (r, n) = (world.rank(), world.size());
    /// // Rank i sends i + j copies of 100·i + j to rank j (none from 0 to itself).
    /// let send_counts: Vec<usize> = (0..n).map(|j| r + j).collect();
    /// let recv_counts: Vec<usize> = (0..n).map(|i| i + r).collect();
    /// let send: Vec<u32> = (0..n).flat_map(|j| vec![(100 * r + j) as u32; r + j]).collect();
    /// let mut recv = vec![0u32; recv_counts.iter().sum()];
    /// world.all_to_all_v(&send, &send_counts, &mut recv, &recv_counts)?;
    /// let want: Vec<u32> = (0..n).flat_map(|i| vec![(100 * i + r) as u32; i + r]).collect();
    /// assert_eq!(recv, want);
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn all_to_all_v<T: Element>(
        &self,
        send: &[T],
        send_counts: &[usize],
        recv: &mut [T],
        recv_counts: &[usize],
    ) -> Result<()> {
        self.check_counts("all_to_all_v", send_counts)?;
        self.check_counts("all_to_all_v", recv_counts)?;
        self.check_len("all_to_all_v", "send", send.len(), send_counts.iter().sum(), "the sum of send_counts")?;
        self.check_len("all_to_all_v", "recv", recv.len(), recv_counts.iter().sum(), "the sum of recv_counts")?;
        let es = T::DTYPE.size();
        let sc: Vec<usize> = send_counts.iter().map(|c| c * es).collect();
        let rc: Vec<usize> = recv_counts.iter().map(|c| c * es).collect();
        let fp = Op::new(OpKind::AllToAll).dtype(T::DTYPE).extra(1);
        self.inner.drain();
        self.inner.backend.all_to_all_v(&self.cx("all_to_all_v", fp), bytes(send), &sc, bytes_mut(recv), &rc)
    }

    // ---------------------------------------------------------------- objects

    /// Gathers a serialisable value from every rank, on every rank (torch's
    /// `all_gather_object`).
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let mine = (world.rank(), "x".repeat(world.rank()));
    /// let all = world.all_gather_object(&mine)?;
    /// // [(0, ""), (1, "x"), (2, "xx"), …]
    /// let want: Vec<(usize, String)> = (0..world.size()).map(|j| (j, "x".repeat(j))).collect();
    /// assert_eq!(all, want);
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn all_gather_object<V: serde::Serialize + serde::de::DeserializeOwned>(&self, value: &V) -> Result<Vec<V>> {
        let mine = encode("all_gather_object", value)?;
        let mut lens = vec![0u64; self.size()];
        self.all_gather(&[mine.len() as u64], &mut lens)?;
        let counts: Vec<usize> = lens.iter().map(|&l| l as usize).collect();
        let mut all = vec![0u8; counts.iter().sum()];
        self.all_gather_v(&mine, &mut all, &counts)?;
        split_decode("all_gather_object", &all, &counts)
    }

    /// Sends `root`'s value to every rank. `root` passes `Some(value)`, the others `None`;
    /// every rank gets the value back.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let root = world.size() - 1;
    /// let value = (world.rank() == root).then(|| (String::from("adamw"), 3e-4f64));
    /// let (opt, lr) = world.broadcast_object(value, root)?;
    /// assert_eq!((opt.as_str(), lr), ("adamw", 3e-4));
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn broadcast_object<V: serde::Serialize + serde::de::DeserializeOwned>(
        &self,
        value: Option<V>,
        root: usize,
    ) -> Result<V> {
        self.check_rank("broadcast_object", "root", root)?;
        let mut data = match (value, self.rank() == root) {
            (Some(v), true) => encode("broadcast_object", &v)?,
            (None, true) => {
                return Err(Error::invalid("broadcast_object", format!("root {root} must pass Some(value)")))
            }
            (Some(_), false) => {
                return Err(Error::invalid(
                    "broadcast_object",
                    format!("rank {} is not the root ({root}) and must pass None", self.rank()),
                ))
            }
            (None, false) => Vec::new(),
        };
        let mut len = [data.len() as u64];
        self.broadcast(&mut len, root)?;
        data.resize(len[0] as usize, 0);
        self.broadcast(&mut data, root)?;
        decode("broadcast_object", &data)
    }

    /// Gathers a serialisable value from every rank on `root` (`Some(values)` there,
    /// `None` elsewhere).
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let root = 0;
    /// let got = world.gather_object(&vec![world.rank(); world.rank()], root)?;
    /// if world.rank() == root {
    ///     // [[], [1], [2, 2], …]
    ///     let want: Vec<Vec<usize>> = (0..world.size()).map(|j| vec![j; j]).collect();
    ///     assert_eq!(got, Some(want));
    /// } else {
    ///     assert_eq!(got, None);
    /// }
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn gather_object<V: serde::Serialize + serde::de::DeserializeOwned>(
        &self,
        value: &V,
        root: usize,
    ) -> Result<Option<Vec<V>>> {
        self.check_rank("gather_object", "root", root)?;
        let mine = encode("gather_object", value)?;
        let mut lens = vec![0u64; self.size()];
        self.all_gather(&[mine.len() as u64], &mut lens)?;
        let counts: Vec<usize> = lens.iter().map(|&l| l as usize).collect();
        if self.rank() == root {
            let mut all = vec![0u8; counts.iter().sum()];
            self.gather_v(&mine, Some(&mut all), &counts, root)?;
            Ok(Some(split_decode("gather_object", &all, &counts)?))
        } else {
            self.gather_v(&mine, None, &counts, root)?;
            Ok(None)
        }
    }

    // ---------------------------------------------------------------- point-to-point

    /// Sends `buf` to rank `dst` with `tag`; returns when `buf` may be reused. The
    /// matching `recv` on `dst` names this rank and the same tag, with a buffer of the
    /// same length.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # const T: Tag<u64> = Tag::new(1);
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// if world.size() >= 2 {
    ///     match world.rank() {
    ///         0 => world.send(1, T, &[42, 7])?,
    ///         1 => {
    ///             let mut buf = [0u64; 2];
    ///             world.recv(0, T, &mut buf)?;
    ///             assert_eq!(buf, [42, 7]);
    ///         }
    ///         _ => {}
    ///     }
    /// }
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn send<T: Element>(&self, dst: usize, tag: Tag<T>, buf: &[T]) -> Result<()> {
        self.check_rank("send", "destination", dst)?;
        self.inner.backend.send(Site::caller(), dst, tag.id(), T::DTYPE, bytes(buf))
    }

    /// Receives exactly `buf.len()` elements from rank `src` sent with `tag`. A message of
    /// another length or type is an error naming both call sites.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # const T: Tag<u64> = Tag::new(1);
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let (r, n) = (world.rank(), world.size());
    /// // A pipeline: each rank adds its rank to what the previous one passed on.
    /// let mut acc = [0u64];
    /// if r > 0 {
    ///     world.recv(r - 1, T, &mut acc)?;
    /// }
    /// acc[0] += r as u64;
    /// if r + 1 < n {
    ///     world.send(r + 1, T, &acc)?;
    /// }
    /// assert_eq!(acc[0], (r * (r + 1) / 2) as u64);
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn recv<T: Element>(&self, src: usize, tag: Tag<T>, buf: &mut [T]) -> Result<()> {
        self.check_rank("recv", "source", src)?;
        self.inner.backend.recv(Site::caller(), src, tag.id(), T::DTYPE, bytes_mut(buf))
    }

    /// Sends `send` to `dst` and receives `recv` from `src` at once, so a ring exchange
    /// (`dst = (r + 1) % n`, `src = (r + n - 1) % n`) cannot deadlock.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # const T: Tag<u64> = Tag::new(1);
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let (r, n) = (world.rank(), world.size());
    /// // Shift around the ring: send right, receive from the left.
    /// let mut got = [0u64];
    /// world.sendrecv((r + 1) % n, T, &[r as u64], (r + n - 1) % n, &mut got)?;
    /// assert_eq!(got, [((r + n - 1) % n) as u64]);
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn sendrecv<T: Element>(&self, dst: usize, tag: Tag<T>, send: &[T], src: usize, recv: &mut [T]) -> Result<()> {
        self.batch(|b| {
            b.send(dst, tag, send);
            b.recv(src, tag, recv);
        })
    }

    /// Starts sending `buf` to `dst`. `buf` stays borrowed until the returned request is
    /// waited on (or dropped, which waits), so it can't be changed while in flight.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # const T: Tag<u64> = Tag::new(1);
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let (r, n) = (world.rank(), world.size());
    /// let out = [r as u64; 3];
    /// let mut got = [0u64; 3];
    /// let send = world.isend((r + 1) % n, T, &out)?;
    /// let recv = world.irecv((r + n - 1) % n, T, &mut got)?;
    /// // … other work while the messages move …
    /// send.wait()?;
    /// recv.wait()?;
    /// assert_eq!(got, [((r + n - 1) % n) as u64; 3]);
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn isend<'a, T: Element>(&'a self, dst: usize, tag: Tag<T>, buf: &'a [T]) -> Result<Request<'a>> {
        self.check_rank("isend", "destination", dst)?;
        let site = Site::caller();
        let id = self.inner.backend.post_send(site, dst, tag.id(), T::DTYPE, bytes(buf))?;
        Ok(Request { state: ReqState::Send { inner: &self.inner, id }, site, _buf: PhantomData })
    }

    /// Starts receiving into `buf` from `src`. `buf` stays mutably borrowed until the
    /// request is waited on (or dropped, which waits).
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # const T: Tag<i32> = Tag::new(1);
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let (r, n) = (world.rank(), world.size());
    /// let mut from_left = [0i32; 2];
    /// // Post the receive first, so the message can land as soon as it is sent.
    /// let recv = world.irecv((r + n - 1) % n, T, &mut from_left)?;
    /// let out = [r as i32, -(r as i32)];
    /// let send = world.isend((r + 1) % n, T, &out)?;
    /// recv.wait()?;
    /// send.wait()?;
    /// let left = ((r + n - 1) % n) as i32;
    /// assert_eq!(from_left, [left, -left]);
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn irecv<'a, T: Element>(&'a self, src: usize, tag: Tag<T>, buf: &'a mut [T]) -> Result<Request<'a>> {
        self.check_rank("irecv", "source", src)?;
        let site = Site::caller();
        let id = self.inner.backend.post_recv(site, src, tag.id())?;
        Ok(Request {
            state: ReqState::Recv { inner: &self.inner, id, dtype: T::DTYPE, buf: bytes_mut(buf) },
            site,
            _buf: PhantomData,
        })
    }

    /// Groups point-to-point ops (torch's `batch_isend_irecv`): every op added in `f` is
    /// started, then all are completed, so their order inside the batch cannot deadlock.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// const HALO: Tag<f64> = Tag::new(7);
    /// let (r, n) = (world.rank(), world.size());
    /// let (left, right) = ([r as f64; 8], [r as f64; 8]);
    /// let (mut from_left, mut from_right) = ([0.0; 8], [0.0; 8]);
    /// world.batch(|b| {
    ///     b.send((r + n - 1) % n, HALO, &left);
    ///     b.send((r + 1) % n, HALO, &right);
    ///     b.recv((r + n - 1) % n, HALO, &mut from_left);
    ///     b.recv((r + 1) % n, HALO, &mut from_right);
    /// })?;
    /// assert_eq!(from_left, [((r + n - 1) % n) as f64; 8]);
    /// assert_eq!(from_right, [((r + 1) % n) as f64; 8]);
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn batch<'b>(&self, f: impl FnOnce(&mut Batch<'b>)) -> Result<()> {
        let site = Site::caller();
        let mut b = Batch { ops: Vec::new(), n: self.size() };
        f(&mut b);
        for op in &b.ops {
            let peer = match op {
                BatchOp::Send { dst, .. } => *dst,
                BatchOp::Recv { src, .. } => *src,
            };
            self.check_rank("batch", "peer", peer)?;
        }
        let mut sends = Vec::new();
        let mut recvs = Vec::new();
        // Post receives first (claims match posting order), then sends, then complete all.
        for op in b.ops.iter_mut() {
            if let BatchOp::Recv { src, tag, .. } = op {
                recvs.push(self.inner.backend.post_recv(site, *src, *tag)?);
            }
        }
        for op in b.ops.iter() {
            if let BatchOp::Send { dst, tag, dtype, data } = op {
                sends.push(self.inner.backend.post_send(site, *dst, *tag, *dtype, data)?);
            }
        }
        let mut first_err = None;
        let mut ri = recvs.into_iter();
        for op in b.ops.iter_mut() {
            if let BatchOp::Recv { dtype, buf, .. } = op {
                let id = ri.next().expect("one id per recv");
                if let Err(e) = self.inner.backend.wait_recv(site, id, *dtype, buf) {
                    first_err.get_or_insert(e);
                }
            }
        }
        for id in sends {
            if let Err(e) = self.inner.backend.wait_send(site, id) {
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    // ---------------------------------------------------------------- non-blocking collectives

    /// Starts an all-reduce of `buf` and returns at once; `buf` is updated when the request
    /// is waited on. Collectives started this way run in call order on a worker thread;
    /// a blocking collective on the same communicator waits for them first.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let mut x = [world.rank() as i32 + 1];
    /// let mut y = [1i32];
    /// let req = world.all_reduce_async(&mut x, ReduceOp::Max)?;
    /// // A blocking collective meanwhile runs after it, on every rank.
    /// world.all_reduce(&mut y, ReduceOp::Sum)?;
    /// req.wait()?;
    /// assert_eq!(x, [world.size() as i32]);
    /// assert_eq!(y, [world.size() as i32]);
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn all_reduce_async<'a, T: Element>(&'a self, buf: &'a mut [T], op: ReduceOp) -> Result<Request<'a>> {
        op.validate(T::DTYPE, "all_reduce_async")?;
        let fp = Op::new(OpKind::AllReduce).dtype(T::DTYPE).count(buf.len()).reduce(op);
        let cx = self.cx("all_reduce_async", fp);
        self.spawn(cx, bytes_mut(buf), move |b, cx, data| b.all_reduce(cx, data, T::DTYPE, op))
    }

    /// Starts a broadcast from `root` (see [`broadcast`](Self::broadcast)).
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let root = world.size() - 1;
    /// let mut word = [0u8; 4];
    /// if world.rank() == root {
    ///     word = *b"dist";
    /// }
    /// let req = world.broadcast_async(&mut word, root)?;
    /// // … other work while it runs …
    /// req.wait()?;
    /// assert_eq!(&word, b"dist");
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn broadcast_async<'a, T: Element>(&'a self, buf: &'a mut [T], root: usize) -> Result<Request<'a>> {
        self.check_rank("broadcast_async", "root", root)?;
        let fp = Op::new(OpKind::Broadcast).dtype(T::DTYPE).count(buf.len()).root(root);
        let cx = self.cx("broadcast_async", fp);
        self.spawn(cx, bytes_mut(buf), move |b, cx, data| b.broadcast(cx, data, root))
    }

    #[track_caller]
    fn spawn<'a>(
        &'a self,
        cx: Op,
        buf: &'a mut [u8],
        run: impl FnOnce(&dyn Backend, &Op, &mut [u8]) -> Result<()> + Send + 'static,
    ) -> Result<Request<'a>> {
        let site = Site::caller();
        let (tx, rx) = mpsc::channel();
        let mut data = buf.to_vec();
        let backend = self.inner.backend.clone();
        let inflight = self.inner.inflight.clone();
        self.inner.enqueue(Box::new(move || {
            let r = run(&*backend, &cx, &mut data).map(|_| data);
            let _ = tx.send(r);
            let (m, cv) = &*inflight;
            *m.lock().unwrap_or_else(|p| p.into_inner()) -= 1;
            cv.notify_all();
        }))?;
        Ok(Request { state: ReqState::Coll { rx, out: buf }, site, _buf: PhantomData })
    }

    // ---------------------------------------------------------------- groups

    /// Creates a communicator of the ranks `ranks` (this communicator's numbering; the
    /// child's rank i is `ranks[i]`), as torch's `new_group`. Collective: every rank
    /// calls it with the same list; members get `Some`, the others `None`.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # dist_runtime::group!(Pair);
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// if world.size() >= 2 {
    ///     // World ranks 1 and 0 become ranks 0 and 1 of `pair`.
    ///     let pair = world.subgroup::<Pair>(&[1, 0])?;
    ///     match world.rank() {
    ///         0 | 1 => {
    ///             let pair = pair.unwrap();
    ///             assert_eq!((pair.rank(), pair.size()), (1 - world.rank(), 2));
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
        if ranks.is_empty() {
            return Err(Error::invalid("subgroup", "the rank list is empty"));
        }
        let mut seen = HashSet::new();
        for &r in ranks {
            self.check_rank("subgroup", "rank", r)?;
            if !seen.insert(r) {
                return Err(Error::invalid("subgroup", format!("rank {r} appears twice in {ranks:?}")));
            }
        }
        let k = self.inner.children.fetch_add(1, Ordering::Relaxed);
        let fp = Op::new(OpKind::CommCreate).count(ranks.len()).extra(hash_usizes(ranks));
        let child = self.inner.backend.create_child(&self.cx("subgroup", fp), &format!("{}#{k}", H::NAME), ranks)?;
        #[cfg(feature = "nccl")]
        let dev = {
            // Members split with color 0, ordered by their place in `ranks`.
            let pos = ranks.iter().position(|&r| r == self.rank());
            self.split_nccl(pos.map(|_| 0), pos.unwrap_or(0))?
        };
        let c = child.map(|b| self.child::<H>(b, H::NAME, ranks));
        #[cfg(feature = "nccl")]
        let c = c.map(|c| c.with_nccl(dev));
        Ok(c)
    }

    /// Attaches an NCCL communicator (world creation, and children split from a parent's).
    #[cfg(feature = "nccl")]
    pub(crate) fn with_nccl(mut self, nccl: Option<crate::nccl::NcclComm>) -> Self {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.nccl = nccl.map(Arc::new);
        }
        self
    }

    /// The NCCL side of a child: `ncclCommSplit` of ours (collective over this
    /// communicator; `color` None for ranks that are not in the child).
    #[cfg(feature = "nccl")]
    fn split_nccl(&self, color: Option<u32>, key: usize) -> Result<Option<crate::nccl::NcclComm>> {
        match &self.inner.nccl {
            Some(n) => n.split(color, key),
            None => Ok(None),
        }
    }

    fn child<H: Group>(&self, b: Box<dyn Backend>, name: &str, ranks: &[usize]) -> Comm<H> {
        let members: Vec<usize> = ranks.iter().map(|&r| self.inner.members[r]).collect();
        let name = format!("{name}{{{}}}", members.iter().map(|m| m.to_string()).collect::<Vec<_>>().join(","));
        Comm::from_backend(Arc::from(b), name, members, None)
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
        let child =
            self.inner.backend.create_child(&self.cx("split", fp), &format!("{}#{k}c{color}", H::NAME), &members)?;
        let c = self.child::<H>(child.expect("every rank is in its own color"), H::NAME, &members);
        #[cfg(feature = "nccl")]
        let c = {
            let key = members.iter().position(|&r| r == self.rank()).expect("a member of its own color");
            c.with_nccl(self.split_nccl(Some(color), key)?)
        };
        Ok(c)
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
        let ca = self.inner.backend.create_child(&self.cx("mesh2", fp), &format!("{}#{k}c{j}", A::NAME), &col)?;
        let cb = self.inner.backend.create_child(&self.cx("mesh2", fp), &format!("{}#{k}r{i}", B::NAME), &row)?;
        let (a_comm, b_comm) =
            (self.child::<A>(ca.expect("member"), A::NAME, &col), self.child::<B>(cb.expect("member"), B::NAME, &row));
        #[cfg(feature = "nccl")]
        let (a_comm, b_comm) = {
            let col_dev = self.split_nccl(Some(j as u32), i)?;
            let row_dev = self.split_nccl(Some(i as u32), j)?;
            (a_comm.with_nccl(col_dev), b_comm.with_nccl(row_dev))
        };
        Ok((a_comm, b_comm))
    }
}

fn encode<V: serde::Serialize>(op: &'static str, v: &V) -> Result<Vec<u8>> {
    bincode::serialize(v).map_err(|e| Error::Serde { op, msg: e.to_string() })
}

fn decode<V: serde::de::DeserializeOwned>(op: &'static str, b: &[u8]) -> Result<V> {
    bincode::deserialize(b).map_err(|e| Error::Serde { op, msg: e.to_string() })
}

fn split_decode<V: serde::de::DeserializeOwned>(op: &'static str, all: &[u8], counts: &[usize]) -> Result<Vec<V>> {
    let mut out = Vec::with_capacity(counts.len());
    let mut at = 0;
    for &c in counts {
        out.push(decode(op, &all[at..at + c])?);
        at += c;
    }
    Ok(out)
}

// ---------------------------------------------------------------- batch

/// The point-to-point ops of one [`Comm::batch`] call.
pub struct Batch<'b> {
    ops: Vec<BatchOp<'b>>,
    n: usize,
}

enum BatchOp<'b> {
    Send { dst: usize, tag: u32, dtype: DType, data: &'b [u8] },
    Recv { src: usize, tag: u32, dtype: DType, buf: &'b mut [u8] },
}

impl<'b> Batch<'b> {
    /// Adds a send of `buf` to `dst`.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # const T: Tag<u32> = Tag::new(1);
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let r = world.rank();
    /// let partner = r ^ 1; // 0 ↔ 1, 2 ↔ 3, …
    /// if partner < world.size() {
    ///     let mine = [r as u32; 4];
    ///     let mut theirs = [0u32; 4];
    ///     world.batch(|b| {
    ///         b.send(partner, T, &mine);
    ///         b.recv(partner, T, &mut theirs);
    ///     })?;
    ///     assert_eq!(theirs, [partner as u32; 4]);
    /// }
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(4, demo).unwrap(); }
    /// ```
    pub fn send<T: Element>(&mut self, dst: usize, tag: Tag<T>, buf: &'b [T]) {
        self.ops.push(BatchOp::Send { dst, tag: tag.id(), dtype: T::DTYPE, data: bytes(buf) });
    }
    /// Adds a receive into `buf` from `src`.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # const FWD: Tag<u32> = Tag::new(1);
    /// # const BWD: Tag<u32> = Tag::new(2);
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let (r, n) = (world.rank(), world.size());
    /// let (prev, next) = ((r + n - 1) % n, (r + 1) % n);
    /// let mine = [r as u32];
    /// // Receive from both neighbours into the two halves of one buffer.
    /// let mut got = [0u32; 2];
    /// let (from_prev, from_next) = got.split_at_mut(1);
    /// world.batch(|b| {
    ///     b.send(next, FWD, &mine);
    ///     b.send(prev, BWD, &mine);
    ///     b.recv(prev, FWD, from_prev);
    ///     b.recv(next, BWD, from_next);
    /// })?;
    /// assert_eq!(got, [prev as u32, next as u32]);
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    pub fn recv<T: Element>(&mut self, src: usize, tag: Tag<T>, buf: &'b mut [T]) {
        self.ops.push(BatchOp::Recv { src, tag: tag.id(), dtype: T::DTYPE, buf: bytes_mut(buf) });
    }
    /// Number of ranks of the communicator (for computing peers inside the closure).
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # const T: Tag<u64> = Tag::new(1);
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let r = world.rank();
    /// let mine = [r as u64];
    /// let mut got = [0u64];
    /// world.batch(|b| {
    ///     let n = b.size(); // world.size()
    ///     b.send((r + 1) % n, T, &mine);
    ///     b.recv((r + n - 1) % n, T, &mut got);
    /// })?;
    /// let n = world.size();
    /// assert_eq!(got, [((r + n - 1) % n) as u64]);
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    pub fn size(&self) -> usize {
        self.n
    }
}

// ---------------------------------------------------------------- requests

/// A non-blocking op in flight. It borrows the op's buffer until [`wait`](Self::wait);
/// dropping it waits too (and drops any error), so a buffer is never touched after the
/// borrow ends.
#[must_use = "a request must be waited on; dropping it blocks until the op completes"]
pub struct Request<'a> {
    state: ReqState<'a>,
    site: Site,
    _buf: PhantomData<&'a mut [u8]>,
}

enum ReqState<'a> {
    Send { inner: &'a Inner, id: ReqId },
    Recv { inner: &'a Inner, id: ReqId, dtype: DType, buf: &'a mut [u8] },
    Coll { rx: mpsc::Receiver<Result<Vec<u8>>>, out: &'a mut [u8] },
    Done,
}

impl Request<'_> {
    /// Blocks until the op completes.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # const T: Tag<f32> = Tag::new(1);
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let (r, n) = (world.rank(), world.size());
    /// let mine = [r as f32; 4];
    /// let mut got = [0.0f32; 4];
    /// let recv = world.irecv((r + n - 1) % n, T, &mut got)?;
    /// let send = world.isend((r + 1) % n, T, &mine)?;
    /// send.wait()?; // `mine` may change from here
    /// recv.wait()?; // `got` holds the message from here
    /// assert_eq!(got, [((r + n - 1) % n) as f32; 4]);
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    pub fn wait(mut self) -> Result<()> {
        self.complete()
    }

    fn complete(&mut self) -> Result<()> {
        match std::mem::replace(&mut self.state, ReqState::Done) {
            ReqState::Send { inner, id } => inner.backend.wait_send(self.site, id),
            ReqState::Recv { inner, id, dtype, buf } => inner.backend.wait_recv(self.site, id, dtype, buf),
            ReqState::Coll { rx, out } => {
                let data = rx.recv().map_err(|_| Error::backend("comm", "the async worker stopped"))??;
                out.copy_from_slice(&data);
                Ok(())
            }
            ReqState::Done => Ok(()),
        }
    }
}

impl Drop for Request<'_> {
    fn drop(&mut self) {
        let _ = self.complete();
    }
}

/// Wait for all requests, returning the first error.
///
/// ```
/// # use dist_runtime::prelude::*;
/// # const FWD: Tag<u32> = Tag::new(1);
/// # const BWD: Tag<u32> = Tag::new(2);
/// # #[spmd]
/// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
/// let (r, n) = (world.rank(), world.size());
/// let (prev, next) = ((r + n - 1) % n, (r + 1) % n);
/// let mine = [r as u32];
/// let (mut a, mut b) = ([0u32], [0u32]);
/// let reqs = vec![
///     world.irecv(prev, FWD, &mut a)?,
///     world.irecv(next, BWD, &mut b)?,
///     world.isend(next, FWD, &mine)?,
///     world.isend(prev, BWD, &mine)?,
/// ];
/// dist_runtime::wait_all(reqs)?;
/// assert_eq!((a, b), ([prev as u32], [next as u32]));
/// # Ok(()) }
/// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
/// ```
pub fn wait_all<'a>(reqs: impl IntoIterator<Item = Request<'a>>) -> Result<()> {
    let mut first = None;
    for r in reqs {
        if let Err(e) = r.wait() {
            first.get_or_insert(e);
        }
    }
    first.map_or(Ok(()), Err)
}
