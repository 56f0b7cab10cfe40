//! `Comm<G>`: the typed communicator. Every op checks its arguments locally before any
//! byte moves, builds its [`Op`](crate::op::Op), then hands bytes + `DType` to the backend.
//! The ops live by kind: `collective.rs`, `p2p.rs` (and `Batch`), `nonblocking.rs` (the
//! `_async` collectives and their worker), `request.rs` (`Request`, `wait_all`/`any`/
//! `some`), `object.rs` (serde values), `device.rs` (device buffers: agreement through
//! the host, enqueue, the bounded wait), `recovery.rs` (`failed_ranks`, `revoke`,
//! `agree`, `shrink`); `subgroup`/`split`/`mesh2` are in `group.rs` (this folder's).

mod collective;
pub(crate) mod device;
mod group;
mod nonblocking;
mod object;
mod p2p;
mod recovery;
mod request;

pub use group::{MeshGroups, MeshPart};
pub use p2p::{Batch, RecvAny, Status};
pub use request::{wait_all, wait_any, wait_some, Request};

use crate::backend::{Backend, Bufs};
use crate::dtype::Element;
use crate::error::{Error, Result};
use crate::group::Group;
use crate::op::Op;
use std::marker::PhantomData;
use std::sync::atomic::AtomicU64;
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};

/// State shared by a communicator and its in-flight handles.
pub(crate) struct Inner {
    pub(crate) backend: Arc<dyn Backend>,
    /// "World", "Tp{0,1}", … for messages.
    pub(crate) name: String,
    /// World rank of each member, by communicator rank.
    pub(crate) members: Vec<usize>,
    pub(crate) children: AtomicU64,
    /// Agreements and shrinks made on this communicator (`recovery.rs`): the next one's
    /// number, the same on every live rank.
    pub(crate) recoveries: AtomicU64,
    /// `DIST_DEBUG` is not `off`: every op is compared across ranks (by the backend, or
    /// here when it does not piggyback the records).
    pub(crate) check: bool,
    pub(crate) worker: Mutex<Option<Worker>>,
    pub(crate) inflight: Arc<(Mutex<usize>, Condvar)>,
    /// Keeps the store server alive when this process hosts it (world communicator only).
    _keep: Option<Box<dyn std::any::Any + Send + Sync>>,
    /// The device side for device buffers (NCCL, or the simulated device in tests).
    pub(crate) device: Option<device::DeviceSide>,
    /// This communicator's id in the flight recorder.
    pub(crate) rec: u32,
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
        if !std::thread::panicking() {
            // Messages that reached this rank on this communicator and that nothing will
            // receive now: the rank's exit reports them (a silent loss otherwise).
            crate::verify::failure::record_unreceived(self.backend.unreceived());
        }
        self.backend.finish();
    }
}

/// A background thread that runs this communicator's non-blocking collectives in order.
pub(crate) struct Worker {
    tx: mpsc::Sender<Box<dyn FnOnce() + Send>>,
}

impl Inner {
    /// Waits until every queued non-blocking collective has run, so a blocking collective
    /// keeps its place in the order every rank sees.
    pub(crate) fn drain(&self) {
        let (m, cv) = &*self.inflight;
        let g = m.lock().unwrap_or_else(|p| p.into_inner());
        if *g == 0 {
            return;
        }
        // (Parked on the worker: its waits are this rank's meanwhile.)
        crate::backend::parked(move || {
            let mut g = g;
            while *g > 0 {
                g = cv.wait(g).unwrap_or_else(|p| p.into_inner());
            }
        });
    }

    pub(crate) fn enqueue(&self, job: Box<dyn FnOnce() + Send>) -> Result<()> {
        let mut w = self.worker.lock().unwrap_or_else(|p| p.into_inner());
        if w.is_none() {
            let (tx, rx) = mpsc::channel::<Box<dyn FnOnce() + Send>>();
            std::thread::Builder::new()
                .name(format!("dist-{}-async", self.name))
                .spawn(move || {
                    crate::backend::set_background();
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
    pub(crate) _g: PhantomData<fn() -> G>,
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

pub(crate) fn bytes<T: Element>(s: &[T]) -> &[u8] {
    crate::dtype::as_bytes(s)
}
pub(crate) fn bytes_mut<T: Element>(s: &mut [T]) -> &mut [u8] {
    crate::dtype::as_bytes_mut(s)
}

/// The agreement step of `verify` for a backend that does not piggyback it
/// ([`crate::backend::agree`]), on this communicator.
pub(crate) fn agree(inner: &Inner, op: &Op) -> Result<()> {
    crate::backend::agree::agree_on(&*inner.backend, inner.check, &inner.name, op)
}

/// The record exchange, unconditionally: also how device ops (which never pass the host
/// backend's barriers) are compared across ranks under `DIST_DEBUG=check`.
pub(crate) fn exchange(inner: &Inner, op: &Op) -> Result<()> {
    crate::backend::agree::exchange_records(&*inner.backend, &inner.name, op)
}

impl<G: Group> Comm<G> {
    pub(crate) fn from_backend(
        backend: Arc<dyn Backend>,
        name: String,
        members: Vec<usize>,
        check: bool,
        keep: Option<Box<dyn std::any::Any + Send + Sync>>,
    ) -> Comm<G> {
        let rec = crate::verify::recorder::register(&name);
        Comm {
            inner: Arc::new(Inner {
                backend,
                name,
                members,
                check,
                children: AtomicU64::new(0),
                recoveries: AtomicU64::new(0),
                worker: Mutex::new(None),
                inflight: Arc::new((Mutex::new(0), Condvar::new())),
                rec,
                _keep: keep,
                device: None,
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
    ///     if let Some(pair) = world.subgroup_ordered::<Pair>(&[1, 0])? {
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

    /// The backend that moves this communicator's host buffers: "shm" (device buffers go
    /// through its device side, NCCL with the `nccl` feature: see [`device_kind`](Self::device_kind)).
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
    pub(crate) fn check_rank(&self, op: &'static str, what: &str, r: usize) -> Result<()> {
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
    pub(crate) fn check_len(&self, op: &'static str, what: &str, got: usize, want: usize, why: &str) -> Result<()> {
        if got != want {
            return Err(Error::invalid(op, format!("{what} has {got} elements but must have {want} ({why})")));
        }
        Ok(())
    }

    #[track_caller]
    pub(crate) fn check_counts(&self, op: &'static str, counts: &[usize]) -> Result<()> {
        if counts.len() != self.size() {
            return Err(Error::invalid(
                op,
                format!("counts has {} entries but the communicator has {} ranks", counts.len(), self.size()),
            ));
        }
        Ok(())
    }

    #[track_caller]
    pub(crate) fn cx(&self, name: &'static str, op: Op) -> Op {
        op.named(name)
    }

    /// Runs one collective on the backend, compared across ranks first where the
    /// backend does not do that itself.
    pub(crate) fn run(&self, op: &Op, bufs: Bufs<'_>) -> Result<()> {
        self.recorded_as(true, op.name, op.site, || {
            crate::backend::agree::run_on(&*self.inner.backend, self.inner.check, &self.inner.name, op, bufs)
        })
    }

    /// Runs `f` as point-to-point op `name` called at `site`, in the flight recorder.
    #[inline]
    pub(crate) fn recorded<R>(
        &self,
        name: &'static str,
        site: crate::error::Site,
        f: impl FnOnce() -> Result<R>,
    ) -> Result<R> {
        self.recorded_as(false, name, site, f)
    }

    /// Runs `f` as op `name` (a collective or not) called at `site`, in the flight recorder.
    #[inline]
    pub(crate) fn recorded_as<R>(
        &self,
        collective: bool,
        name: &'static str,
        site: crate::error::Site,
        f: impl FnOnce() -> Result<R>,
    ) -> Result<R> {
        if let Some(e) = crate::verify::failure::poisoned() {
            return Err(e.with_callers());
        }
        let slot = crate::verify::recorder::start(self.inner.rec, collective, name, site.0);
        match f() {
            Ok(v) => {
                crate::verify::recorder::done(slot);
                Ok(v)
            }
            // The user's frames are still on the stack: the error names their calls.
            Err(e) => Err(e.with_callers()),
        }
    }

    /// [`run`](Self::run) after the queued non-blocking collectives, so a blocking one
    /// keeps its place in the order every rank sees.
    pub(crate) fn run_host(&self, op: &Op, bufs: Bufs<'_>) -> Result<()> {
        self.inner.drain();
        self.run(op, bufs)
    }
}
