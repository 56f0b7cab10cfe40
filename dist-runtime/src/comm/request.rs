//! Non-blocking collectives, the `Request` every non-blocking op returns, and `wait_all`.

use crate::backend::{Bufs, ReqId};
use crate::buffer::{Buf, BufMut, ViewMut};
use crate::comm::device::DeviceWork;
use crate::comm::{Comm, Inner};
use crate::dtype::{DType, Element};
use crate::error::{Error, Result, Site};
use crate::group::Group;
use crate::op::{Op, OpKind};
use crate::reduce_op::ReduceOp;
use std::marker::PhantomData;
use std::panic::Location;
use std::sync::mpsc;

impl<G: Group> Comm<G> {
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
    pub fn all_reduce_async<'a, T: Element, B: BufMut<T> + ?Sized>(
        &'a self,
        buf: &'a mut B,
        op: ReduceOp,
    ) -> Result<Request<'a>> {
        op.validate(T::DTYPE, "all_reduce_async")?;
        op.check_items("all_reduce_async", "buf", buf.elems())?;
        let fp = Op::new(OpKind::AllReduce).dtype(T::DTYPE).count(buf.elems()).reduce(op);
        self.in_place_async(self.cx("all_reduce_async", fp), buf.view_mut())
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
    pub fn broadcast_async<'a, T: Element, B: BufMut<T> + ?Sized>(
        &'a self,
        buf: &'a mut B,
        root: usize,
    ) -> Result<Request<'a>> {
        self.check_rank("broadcast_async", "root", root)?;
        let fp = Op::new(OpKind::Broadcast).dtype(T::DTYPE).count(buf.elems()).root(root);
        self.in_place_async(self.cx("broadcast_async", fp), buf.view_mut())
    }

    /// Starts an all-gather (see [`all_gather`](Self::all_gather)) and returns at once:
    /// `recv` holds every rank's `send` once the request is waited on (FSDP's parameter
    /// prefetch overlaps it with compute). Runs in call order with the other
    /// non-blocking collectives of this communicator.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let shard = [world.rank() as f32; 2];
    /// let mut full = vec![0.0f32; 2 * world.size()];
    /// let req = world.all_gather_async(&shard, &mut full)?;
    /// // … compute with the previous layer meanwhile …
    /// req.wait()?;
    /// assert_eq!(full[2 * (world.size() - 1)], (world.size() - 1) as f32);
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn all_gather_async<'a, T: Element, S: Buf<T> + ?Sized, R: BufMut<T> + ?Sized>(
        &'a self,
        send: &'a S,
        recv: &'a mut R,
    ) -> Result<Request<'a>> {
        let k = send.elems();
        self.check_len("all_gather_async", "recv", recv.elems(), k * self.size(), "size() × send.len()")?;
        let counts = vec![k * T::DTYPE.size(); self.size()];
        let cx = self.cx("all_gather_async", Op::new(OpKind::AllGather).dtype(T::DTYPE).count(k));
        self.gather_on(&cx, send.view(), Some(recv.view_mut()), counts, true)
    }

    /// Starts a reduce-scatter (see [`reduce_scatter`](Self::reduce_scatter)) and
    /// returns at once: `recv` holds this rank's reduced block once the request is waited
    /// on (bucketed gradient reduction overlapping the backward pass, as ZeRO does).
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let grads = vec![1.0f32; 4 * world.size()];
    /// let mut mine = [0.0f32; 4];
    /// let req = world.reduce_scatter_async(&grads, &mut mine, ReduceOp::Sum)?;
    /// // … compute the next bucket's gradients meanwhile …
    /// req.wait()?;
    /// assert_eq!(mine, [world.size() as f32; 4]);
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn reduce_scatter_async<'a, T: Element, S: Buf<T> + ?Sized, R: BufMut<T> + ?Sized>(
        &'a self,
        send: &'a S,
        recv: &'a mut R,
        op: ReduceOp,
    ) -> Result<Request<'a>> {
        self.reduce_scatter_on("reduce_scatter_async", send, recv, None, op, true)
    }

    /// Starts a barrier and returns at once: the request completes once every rank has
    /// called `barrier_async` (or `barrier`) here (torch's `barrier(async_op=True)`, MPI's
    /// `MPI_Ibarrier`).
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let req = world.barrier_async()?;
    /// // … work that need not wait for the others …
    /// req.wait()?; // every rank has reached the barrier
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn barrier_async(&self) -> Result<Request<'_>> {
        let cx = self.cx("barrier_async", Op::new(OpKind::Barrier));
        self.host(&cx, true, None, None, Shape::None)
    }

    /// Starts a reduce to `root` (see [`reduce`](Self::reduce)); `buf` of the root
    /// holds the result once the request is waited on.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let mut x = [world.rank() as u64 + 1];
    /// let req = world.reduce_async(&mut x, ReduceOp::Sum, 0)?;
    /// req.wait()?;
    /// let n = world.size() as u64;
    /// if world.rank() == 0 {
    ///     assert_eq!(x, [n * (n + 1) / 2]);
    /// }
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn reduce_async<'a, T: Element, B: BufMut<T> + ?Sized>(
        &'a self,
        buf: &'a mut B,
        op: ReduceOp,
        root: usize,
    ) -> Result<Request<'a>> {
        self.check_rank("reduce_async", "root", root)?;
        op.validate(T::DTYPE, "reduce_async")?;
        op.check_items("reduce_async", "buf", buf.elems())?;
        let fp = Op::new(OpKind::Reduce).dtype(T::DTYPE).count(buf.elems()).root(root).reduce(op);
        self.in_place_on(&self.cx("reduce_async", fp), buf.view_mut(), true)
    }

    /// Starts an all-gather with per-rank counts (see
    /// [`all_gather_v`](Self::all_gather_v)).
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let counts: Vec<usize> = (0..world.size()).map(|j| j % 2).collect();
    /// let mine = vec![world.rank() as i32; world.rank() % 2];
    /// let mut all = vec![0i32; counts.iter().sum()];
    /// let req = world.all_gather_v_async(&mine, &mut all, &counts)?;
    /// req.wait()?;
    /// assert!(all.iter().all(|x| x % 2 == 1)); // only the odd ranks gave anything
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(4, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn all_gather_v_async<'a, T: Element, S: Buf<T> + ?Sized, R: BufMut<T> + ?Sized>(
        &'a self,
        send: &'a S,
        recv: &'a mut R,
        counts: &[usize],
    ) -> Result<Request<'a>> {
        self.all_gather_v_on("all_gather_v_async", send, recv, counts, true)
    }

    /// Starts a gather to `root` (see [`gather`](Self::gather)).
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let mine = [world.rank() as u32];
    /// let mut all = vec![0u32; world.size()];
    /// let recv = if world.rank() == 0 { Some(&mut all[..]) } else { None };
    /// world.gather_async(&mine, recv, 0)?.wait()?;
    /// if world.rank() == 0 {
    ///     assert_eq!(all, (0..world.size() as u32).collect::<Vec<_>>());
    /// }
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn gather_async<'a, T: Element, S: Buf<T> + ?Sized>(
        &'a self,
        send: &'a S,
        recv: Option<&'a mut S::Like>,
        root: usize,
    ) -> Result<Request<'a>> {
        let counts = vec![send.elems(); self.size()];
        self.gather_impl("gather_async", send, recv, &counts, root, false, true)
    }

    /// Starts a gather with per-rank counts (see [`gather_v`](Self::gather_v)).
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let counts: Vec<usize> = (1..=world.size()).collect();
    /// let mine = vec![world.rank() as u8; world.rank() + 1];
    /// let mut all = vec![0u8; counts.iter().sum()];
    /// let recv = if world.rank() == 0 { Some(&mut all[..]) } else { None };
    /// world.gather_v_async(&mine, recv, &counts, 0)?.wait()?;
    /// if world.rank() == 0 {
    ///     assert_eq!(all, [0, 1, 1, 2, 2, 2]);
    /// }
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn gather_v_async<'a, T: Element, S: Buf<T> + ?Sized>(
        &'a self,
        send: &'a S,
        recv: Option<&'a mut S::Like>,
        counts: &[usize],
        root: usize,
    ) -> Result<Request<'a>> {
        self.check_counts("gather_v_async", counts)?;
        self.gather_impl("gather_v_async", send, recv, counts, root, true, true)
    }

    /// Starts a scatter from `root` (see [`scatter`](Self::scatter)).
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let data: Vec<u32> = (0..world.size() as u32).collect();
    /// let send = if world.rank() == 0 { Some(&data[..]) } else { None };
    /// let mut mine = [0u32];
    /// world.scatter_async(send, &mut mine, 0)?.wait()?;
    /// assert_eq!(mine, [world.rank() as u32]);
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn scatter_async<'a, T: Element, R: BufMut<T> + ?Sized>(
        &'a self,
        send: Option<&'a R::Like>,
        recv: &'a mut R,
        root: usize,
    ) -> Result<Request<'a>> {
        self.scatter_on("scatter_async", send, recv, None, root, true)
    }

    /// Starts a scatter with per-rank counts (see [`scatter_v`](Self::scatter_v)).
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let counts: Vec<usize> = (0..world.size()).map(|j| j % 2).collect();
    /// let odd: Vec<u64> = (0..world.size() as u64).filter(|j| j % 2 == 1).collect();
    /// let send = if world.rank() == 0 { Some(&odd[..]) } else { None };
    /// let mut mine = vec![0u64; world.rank() % 2];
    /// world.scatter_v_async(send, &mut mine, &counts, 0)?.wait()?;
    /// assert!(mine.iter().all(|&x| x == world.rank() as u64));
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(4, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn scatter_v_async<'a, T: Element, R: BufMut<T> + ?Sized>(
        &'a self,
        send: Option<&'a R::Like>,
        recv: &'a mut R,
        counts: &[usize],
        root: usize,
    ) -> Result<Request<'a>> {
        self.scatter_on("scatter_v_async", send, recv, Some(counts), root, true)
    }

    /// Starts a reduce-scatter with per-rank counts (see
    /// [`reduce_scatter_v`](Self::reduce_scatter_v)).
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let counts: Vec<usize> = (0..world.size()).map(|j| j + 1).collect();
    /// let ones = vec![1i32; counts.iter().sum()];
    /// let mut mine = vec![0i32; world.rank() + 1];
    /// world.reduce_scatter_v_async(&ones, &mut mine, &counts, ReduceOp::Sum)?.wait()?;
    /// assert!(mine.iter().all(|&x| x == world.size() as i32));
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn reduce_scatter_v_async<'a, T: Element, S: Buf<T> + ?Sized, R: BufMut<T> + ?Sized>(
        &'a self,
        send: &'a S,
        recv: &'a mut R,
        counts: &[usize],
        op: ReduceOp,
    ) -> Result<Request<'a>> {
        self.reduce_scatter_on("reduce_scatter_v_async", send, recv, Some(counts), op, true)
    }

    /// Starts an all-to-all (see [`all_to_all`](Self::all_to_all)): the expert-parallel
    /// token exchange overlapped with compute.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let (r, n) = (world.rank() as u32, world.size() as u32);
    /// let send: Vec<u32> = (0..n).map(|j| 10 * r + j).collect();
    /// let mut recv = vec![0u32; n as usize];
    /// world.all_to_all_async(&send, &mut recv)?.wait()?;
    /// assert_eq!(recv, (0..n).map(|i| 10 * i + r).collect::<Vec<_>>());
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn all_to_all_async<'a, T: Element, S: Buf<T> + ?Sized, R: BufMut<T> + ?Sized>(
        &'a self,
        send: &'a S,
        recv: &'a mut R,
    ) -> Result<Request<'a>> {
        self.all_to_all_eq("all_to_all_async", send, recv, true)
    }

    /// Starts an all-to-all with per-pair counts (see
    /// [`all_to_all_v`](Self::all_to_all_v)).
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let (r, n) = (world.rank(), world.size());
    /// let send_counts: Vec<usize> = (0..n).map(|j| r + j).collect();
    /// let recv_counts: Vec<usize> = (0..n).map(|i| i + r).collect();
    /// let send: Vec<u32> = (0..n).flat_map(|j| vec![(100 * r + j) as u32; r + j]).collect();
    /// let mut recv = vec![0u32; recv_counts.iter().sum()];
    /// world.all_to_all_v_async(&send, &send_counts, &mut recv, &recv_counts)?.wait()?;
    /// let want: Vec<u32> = (0..n).flat_map(|i| vec![(100 * i + r) as u32; i + r]).collect();
    /// assert_eq!(recv, want);
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn all_to_all_v_async<'a, T: Element, S: Buf<T> + ?Sized, R: BufMut<T> + ?Sized>(
        &'a self,
        send: &'a S,
        send_counts: &[usize],
        recv: &'a mut R,
        recv_counts: &[usize],
    ) -> Result<Request<'a>> {
        self.all_to_all_v_on("all_to_all_v_async", send, send_counts, recv, recv_counts, true)
    }

    /// A non-blocking in-place collective: on the worker thread for host buffers, on the
    /// device's stream for device buffers.
    #[track_caller]
    fn in_place_async<'a, T: Element>(&'a self, cx: Op, buf: ViewMut<'a, T>) -> Result<Request<'a>> {
        self.in_place_on(&cx, buf, true)
    }

    /// Runs the collective `cx` of `shape` on the worker thread, on 16-byte aligned
    /// copies of `send` and `recv` (the reduction kernels view them as elements); the
    /// result lands in `recv` at `wait`. Both stay borrowed by the request, as a device
    /// op's must. A panic in the op is caught and returned by `wait`, so the worker and
    /// the op order survive it.
    #[track_caller]
    pub(crate) fn spawn_shaped<'a>(
        &self,
        cx: Op,
        send: Option<&[u8]>,
        recv: Option<&'a mut [u8]>,
        shape: Shape,
    ) -> Result<Request<'a>> {
        let site = Site::caller();
        let aligned = |b: &[u8]| {
            let mut w = vec![0u128; b.len().div_ceil(16)];
            bytemuck::cast_slice_mut::<u128, u8>(&mut w)[..b.len()].copy_from_slice(b);
            (w, b.len())
        };
        let sw = send.map(aligned);
        // In place: the worker's copy starts as the buffer; otherwise it only receives.
        let mut rw = match (&recv, &shape) {
            (Some(r), Shape::InPlace) => Some(aligned(r)),
            (Some(r), _) => Some((vec![0u128; r.len().div_ceil(16)], r.len())),
            (None, _) => None,
        };
        let rx = self.on_worker(cx, move |run| {
            let s = sw.as_ref().map(|(w, l)| &bytemuck::cast_slice::<u128, u8>(w)[..*l]);
            let r = rw.as_mut().map(|(w, l)| &mut bytemuck::cast_slice_mut::<u128, u8>(w)[..*l]);
            run(shape.bufs(s, r))?;
            Ok(rw.map(|(w, _)| w).unwrap_or_default())
        })?;
        let timeout = self.timeout();
        // The user's thread records the post (the worker records the run in its own ring).
        let slot = crate::verify::recorder::start(self.inner.rec, true, cx.name, site.0);
        crate::verify::recorder::done(slot);
        Ok(Request {
            state: ReqState::Coll { rx, out: recv.unwrap_or_default(), timeout },
            site,
            _buf: PhantomData,
            rec: Some((self.inner.rec, wait_label(cx.name))),
        })
    }

    /// Queues `job` on the worker: it gets a `run` that agrees on `cx` across ranks and runs
    /// it on the given buffers, and returns the words the request copies out at `wait`. A
    /// panic in it is caught and returned by `wait`, so the worker and the op order
    /// survive it.
    fn on_worker(
        &self,
        cx: Op,
        job: impl FnOnce(&mut dyn FnMut(Bufs<'_>) -> Result<()>) -> Result<Vec<u128>> + Send + 'static,
    ) -> Result<mpsc::Receiver<Result<Vec<u128>>>> {
        let (tx, rx) = mpsc::channel();
        let (backend, check, name) = (self.inner.backend.clone(), self.inner.check, self.inner.name.clone());
        let inflight = self.inner.inflight.clone();
        self.inner.enqueue(Box::new(move || {
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                job(&mut |bufs| crate::backend::agree::run_on(&*backend, check, &name, &cx, bufs))
            }));
            let r = outcome.unwrap_or_else(|_| {
                Err(Error::backend(
                    "comm",
                    format!(
                        "{} at {} panicked on the async worker: {}",
                        cx.name,
                        cx.site,
                        crate::verify::failure::last_panic()
                    ),
                ))
            });
            let _ = tx.send(r);
            let (m, cv) = &*inflight;
            *m.lock().unwrap_or_else(|p| p.into_inner()) -= 1;
            cv.notify_all();
        }))?;
        Ok(rx)
    }
}

/// The buffers of a host collective by shape, owning what [`Bufs`] borrows (the counts),
/// so it can travel to the worker thread.
pub(crate) enum Shape {
    None,
    InPlace,
    /// Byte counts per rank; `recv` on the root only for a gather.
    Gather(Vec<usize>),
    /// Byte counts per rank; `send` on the root only.
    Scatter(Vec<usize>),
    /// Byte counts per rank.
    ReduceScatter(Vec<usize>),
    /// Byte counts sent to and received from each rank.
    AllToAll(Vec<usize>, Vec<usize>),
}

impl Shape {
    /// The backend's view of the buffers. The typed layer passes what the shape takes.
    pub(crate) fn bufs<'b>(&'b self, send: Option<&'b [u8]>, recv: Option<&'b mut [u8]>) -> Bufs<'b> {
        let none: &'b [u8] = &[];
        match self {
            Shape::None => Bufs::None,
            Shape::InPlace => Bufs::InPlace(recv.unwrap_or_default()),
            Shape::Gather(counts) => Bufs::Gather { send: send.unwrap_or(none), recv, counts },
            Shape::Scatter(counts) => Bufs::Scatter { send, recv: recv.unwrap_or_default(), counts },
            Shape::ReduceScatter(counts) => {
                Bufs::ReduceScatter { send: send.unwrap_or(none), recv: recv.unwrap_or_default(), counts }
            }
            Shape::AllToAll(sc, rc) => Bufs::AllToAll {
                send: send.unwrap_or(none),
                send_counts: sc,
                recv: recv.unwrap_or_default(),
                recv_counts: rc,
            },
        }
    }
}

// ---------------------------------------------------------------- requests

/// A non-blocking op in flight. It borrows the op's buffer until [`wait`](Self::wait);
/// dropping it waits too, so a buffer is never touched after the borrow ends. An error
/// the dropped op ends with is dropped too, except one after which the job cannot go on
/// (a deadlock, a deadline, a peer's failure: [`Error::is_fatal`]) when no op of this
/// thread has returned a fatal error before: the drop panics with it, naming the
/// request's line, rather than let the rank carry on past it.
#[must_use = "a request must be waited on; dropping it blocks until the op completes"]
pub struct Request<'a> {
    pub(crate) state: ReqState<'a>,
    pub(crate) site: Site,
    pub(crate) _buf: PhantomData<&'a mut [u8]>,
    /// The flight recorder's id of the communicator and the name its wait is recorded
    /// under ("isend.wait"); `None` for requests that need no wait of their own.
    pub(crate) rec: Option<(u32, &'static str)>,
}

/// The flight recorder's name for the wait of a non-blocking op (a static string, as the
/// recorder keeps them).
pub(crate) fn wait_label(op: &str) -> &'static str {
    match op {
        "isend" => "isend.wait",
        "irecv" => "irecv.wait",
        "irecv_any" => "irecv_any.wait",
        "batch_async" => "batch_async.wait",
        "all_reduce_async" => "all_reduce_async.wait",
        "broadcast_async" => "broadcast_async.wait",
        "reduce_async" => "reduce_async.wait",
        "all_gather_async" => "all_gather_async.wait",
        "reduce_scatter_async" => "reduce_scatter_async.wait",
        "all_to_all_async" => "all_to_all_async.wait",
        "all_to_all_v_async" => "all_to_all_v_async.wait",
        "barrier_async" => "barrier_async.wait",
        _ => "wait",
    }
}

pub(crate) enum ReqState<'a> {
    Send {
        inner: &'a Inner,
        id: ReqId,
    },
    Recv {
        inner: &'a Inner,
        id: ReqId,
        dtype: DType,
        buf: &'a mut [u8],
    },
    /// A non-blocking collective: the worker sends back its aligned copy of the buffer.
    Coll {
        rx: mpsc::Receiver<Result<Vec<u128>>>,
        out: &'a mut [u8],
        /// The communicator's deadline (for waits on a set of requests).
        timeout: std::time::Duration,
    },
    /// An op on device buffers: completes on the device (a CUDA event with NCCL).
    Device(DeviceWork),
    /// Several ops completing together (`batch_async`).
    Group(Vec<Request<'a>>),
    /// Ended with this error when tested; `wait` returns it.
    Failed(Error),
    Done,
}

impl Request<'_> {
    /// A request for an op that already completed (a blocking op run through the same
    /// path as its non-blocking form).
    pub(crate) fn done(site: Site) -> Self {
        Request { state: ReqState::Done, site, _buf: PhantomData, rec: None }
    }

    /// A request for an op on the device's stream.
    pub(crate) fn device(w: DeviceWork, site: Site) -> Self {
        Request { state: ReqState::Device(w), site, _buf: PhantomData, rec: None }
    }

    /// This request, its wait recorded in the flight recorder of communicator `rec` as
    /// the wait of `op`.
    pub(crate) fn recorded(mut self, rec: u32, op: &'static str) -> Self {
        self.rec = Some((rec, wait_label(op)));
        self
    }

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
    #[track_caller]
    pub fn wait(mut self) -> Result<()> {
        let at = Location::caller();
        let slot = self.rec.map(|(rec, name)| crate::verify::recorder::start(rec, false, name, at));
        let r = self.complete();
        if let (Ok(()), Some(slot)) = (&r, slot) {
            crate::verify::recorder::done(slot);
        }
        r.map_err(Error::with_callers)
    }

    /// Whether the op has completed, without blocking (torch's `Work.is_completed()`,
    /// MPI's `MPI_Test`). Once it says `true` the op is over — a receive's buffer holds
    /// the message — and [`wait`](Self::wait) returns at once. An error (a peer that
    /// failed, a message that does not fit) is returned here, and by `wait` again.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # const T: Tag<u32> = Tag::new(1);
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let (r, n) = (world.rank(), world.size());
    /// let mut got = [0u32];
    /// let mut recv = world.irecv((r + n - 1) % n, T, &mut got)?;
    /// world.send((r + 1) % n, T, &[r as u32])?;
    /// let mut polls = 0;
    /// while !recv.test()? {
    ///     polls += 1; // … other work while the message comes …
    ///     std::thread::yield_now();
    /// }
    /// recv.wait()?;
    /// assert_eq!(got, [((r + n - 1) % n) as u32]);
    /// # let _ = polls;
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    pub fn test(&mut self) -> Result<bool> {
        let r = match &mut self.state {
            ReqState::Send { inner, id } => inner.backend.test_send(self.site, *id),
            ReqState::Recv { inner, id, dtype, buf } => inner.backend.test_recv(self.site, *id, *dtype, buf),
            ReqState::Coll { rx, out, .. } => match rx.try_recv() {
                Ok(Ok(data)) => {
                    let n = out.len();
                    out.copy_from_slice(&bytemuck::cast_slice::<u128, u8>(&data)[..n]);
                    Ok(true)
                }
                Ok(Err(e)) => Err(e),
                Err(mpsc::TryRecvError::Empty) => Ok(false),
                Err(mpsc::TryRecvError::Disconnected) => Err(Error::backend("comm", "the async worker stopped")),
            },
            ReqState::Device(w) => w.test(),
            ReqState::Group(reqs) => {
                let mut all = true;
                for r in reqs.iter_mut() {
                    all &= r.test()?;
                }
                Ok(all)
            }
            ReqState::Failed(e) => return Err(clone_err(e)),
            ReqState::Done => return Ok(true),
        };
        match r {
            Ok(true) => {
                self.state = ReqState::Done;
                Ok(true)
            }
            Ok(false) => Ok(false),
            Err(e) => {
                self.state = ReqState::Failed(clone_err(&e));
                Err(e)
            }
        }
    }

    /// Waits at most `timeout` for the op: `Ok(true)` once it has completed (as
    /// [`wait`](Self::wait), and the request is spent), `Ok(false)` if it is still
    /// running then (the request stays valid: wait again, or drop it, which waits).
    /// torch's `work.wait(timeout)`, without aborting the op.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # const T: Tag<u8> = Tag::new(1);
    /// # #[spmd(ranks = 2)]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// use std::time::Duration;
    /// let mut got = [0u8];
    /// if world.rank() == 0 {
    ///     let mut req = world.irecv(1, T, &mut got)?;
    ///     while !req.wait_timeout(Duration::from_millis(5))? {
    ///         // … report progress, then keep waiting …
    ///     }
    ///     req.wait()?;
    ///     assert_eq!(got, [7]);
    /// } else {
    ///     std::thread::sleep(Duration::from_millis(20));
    ///     world.send(0, T, &[7])?;
    /// }
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(2, demo).unwrap(); }
    /// ```
    pub fn wait_timeout(&mut self, timeout: std::time::Duration) -> Result<bool> {
        let until = std::time::Instant::now() + timeout;
        let mut pause = Pause::default();
        loop {
            if self.test()? {
                return Ok(true);
            }
            if std::time::Instant::now() >= until {
                return Ok(false);
            }
            pause.next(until);
        }
    }

    /// Whether a request is still to be reported by [`wait_any`]/[`wait_some`].
    fn active(&self) -> bool {
        !matches!(self.state, ReqState::Done)
    }

    /// How long the op may take: its communicator's deadline.
    fn limit(&self) -> std::time::Duration {
        match &self.state {
            ReqState::Send { inner, .. } | ReqState::Recv { inner, .. } => inner.backend.timeout(),
            ReqState::Coll { timeout, .. } => *timeout,
            ReqState::Device(w) => w.timeout(),
            ReqState::Group(reqs) => reqs.iter().map(Request::limit).max().unwrap_or_default(),
            ReqState::Failed(_) | ReqState::Done => std::time::Duration::ZERO,
        }
    }

    /// [`test`](Self::test) as a yes or no: true once the op is over, successfully or
    /// not (`wait` then returns its result at once).
    pub fn is_completed(&mut self) -> bool {
        self.test().unwrap_or(true)
    }

    pub(crate) fn complete(&mut self) -> Result<()> {
        match std::mem::replace(&mut self.state, ReqState::Done) {
            ReqState::Failed(e) => Err(e),
            ReqState::Send { inner, id } => inner.backend.wait_send(self.site, id),
            ReqState::Recv { inner, id, dtype, buf } => inner.backend.wait_recv(self.site, id, dtype, buf),
            ReqState::Coll { rx, out, .. } => {
                let data = rx.recv().map_err(|_| Error::backend("comm", "the async worker stopped"))??;
                let n = out.len();
                out.copy_from_slice(&bytemuck::cast_slice::<u128, u8>(&data)[..n]);
                Ok(())
            }
            ReqState::Device(w) => w.wait(),
            ReqState::Group(reqs) => wait_all(reqs),
            ReqState::Done => Ok(()),
        }
    }

    /// Makes `stream` wait (on the GPU) for a device op, without blocking the host (the
    /// compute/communication overlap of torch's `work.wait()` on CUDA tensors). A host
    /// op is waited for here instead. The device op's deadline is not watched once its
    /// completion is handed to the GPU this way.
    #[cfg(feature = "nccl")]
    pub fn stream_wait(mut self, stream: &cudarc::driver::CudaStream) -> Result<()> {
        match std::mem::replace(&mut self.state, ReqState::Done) {
            ReqState::Device(w) => w.stream_wait(stream),
            other => {
                self.state = other;
                self.complete()
            }
        }
    }
}

impl Drop for Request<'_> {
    fn drop(&mut self) {
        // A rank already failing (marked failed: a deadlock verdict, a peer's failure; or
        // unwinding a panic) lets its pending sends go instead of waiting for each: hundreds of them
        // would each wait for the deadlock detector or the deadline, and the launcher would
        // take the culprit, still dropping them, for a victim of the peers it left waiting.
        // (A send's bytes are the backend's copy by now; receives are still completed,
        // their buffers go with this frame.)
        if matches!(self.state, ReqState::Send { .. }) && (std::thread::panicking() || crate::verify::failure::failed())
        {
            self.state = ReqState::Done;
            return;
        }
        // An error already handed out (by `test`, `wait_timeout`) is not raised again, nor
        // one after another op's fatal error (a request dropped as that error leaves the
        // caller's function: the rank is failing already, and its first error says why).
        let seen = matches!(self.state, ReqState::Failed(_));
        if let Err(e) = self.complete() {
            if !seen && e.is_fatal() && !std::thread::panicking() && !crate::error::fatal_handed_out() {
                panic!(
                    "the request posted at {} was dropped without a wait, and its op failed: {e} (wait on it to \
                     handle the error)",
                    self.site
                );
            }
        }
    }
}

/// A copy of an error for a request that keeps it for `wait` (the source chain of a
/// backend error is kept as text).
fn clone_err(e: &Error) -> Error {
    match e {
        Error::InvalidArgument { op, msg, site } => Error::InvalidArgument { op, msg: msg.clone(), site: *site },
        Error::Mismatch { comm, msg } => Error::Mismatch { comm: comm.clone(), msg: msg.clone() },
        Error::Timeout { op, comm, waiting_for, secs, site } => {
            Error::Timeout { op, comm: comm.clone(), waiting_for: waiting_for.clone(), secs: *secs, site: *site }
        }
        Error::PeerFailed { rank, comm, reason } => {
            Error::PeerFailed { rank: *rank, comm: comm.clone(), reason: reason.clone() }
        }
        Error::Deadlock { op, comm, site, story, culprit, victim } => Error::Deadlock {
            op,
            comm: comm.clone(),
            site: *site,
            story: story.clone(),
            culprit: *culprit,
            victim: *victim,
        },
        other => Error::backend("comm", other.to_string()),
    }
}

/// A poll loop's pause: spin, then yield, then short sleeps (never past `until`).
#[derive(Default)]
pub(crate) struct Pause(u32);

impl Pause {
    pub(crate) fn next(&mut self, until: std::time::Instant) {
        self.0 = self.0.saturating_add(1);
        match self.0 {
            0..=64 => std::hint::spin_loop(),
            65..=512 => std::thread::yield_now(),
            _ => {
                let left = until.saturating_duration_since(std::time::Instant::now());
                std::thread::sleep(left.min(std::time::Duration::from_micros(200)));
            }
        }
    }
}

/// Polls the active requests of `reqs` until at least one completes; returns the
/// indices of those that did (at least one), each then spent as after `wait`. Errors
/// after the longest deadline of the requests' communicators.
#[track_caller]
fn wait_until_some(reqs: &mut [Request<'_>], op: &'static str, all: bool) -> Result<Vec<usize>> {
    let site = Site::caller();
    let limit = reqs.iter().filter(|r| r.active()).map(Request::limit).max().unwrap_or_default();
    let until = std::time::Instant::now() + limit;
    let mut pause = Pause::default();
    loop {
        let mut done = Vec::new();
        for (i, r) in reqs.iter_mut().enumerate().filter(|(_, r)| r.active()) {
            match r.test() {
                Ok(true) => {
                    done.push(i);
                    if !all {
                        return Ok(done);
                    }
                }
                Ok(false) => {}
                Err(e) => {
                    r.state = ReqState::Done; // reported: inactive from now on
                    return Err(e);
                }
            }
        }
        if !done.is_empty() {
            return Ok(done);
        }
        if std::time::Instant::now() >= until {
            let pending: Vec<String> = reqs.iter().filter(|r| r.active()).map(|r| r.site.to_string()).collect();
            return Err(Error::Timeout {
                op,
                comm: "their communicators".into(),
                waiting_for: format!("any of the requests started at {}", pending.join(", ")),
                secs: limit.as_secs_f64(),
                site,
            });
        }
        pause.next(until);
    }
}

/// Waits until one of the active requests in `reqs` completes and returns its index
/// (MPI's `Waitany`); that request is spent (a later `wait` returns at once) and later
/// calls skip it. `Ok(None)` when no request is active. An op's error is returned, and
/// its request is spent too. Past the longest deadline of the requests'
/// communicators, `Error::Timeout` naming where the pending ones were started.
///
/// ```
/// # use dist_runtime::prelude::*;
/// # const T: Tag<u32> = Tag::new(1);
/// # #[spmd]
/// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
/// let (r, n) = (world.rank(), world.size());
/// if r == 0 {
///     // Take the workers' results in whatever order they come.
///     let mut got = vec![[0u32]; n];
///     let (_, others) = got.split_at_mut(1);
///     let mut reqs: Vec<_> =
///         others.iter_mut().enumerate().map(|(i, g)| world.irecv(i + 1, T, g)).collect::<Result<_, _>>()?;
///     let mut seen = 0;
///     while let Some(i) = dist_runtime::wait_any(&mut reqs)? {
///         seen += 1; // request i (from rank i + 1) has its result here
///         let _ = i;
///     }
///     assert_eq!(seen, n - 1);
///     drop(reqs);
///     assert!(got[1..].iter().enumerate().all(|(i, g)| g[0] == 10 * (i as u32 + 1)));
/// } else {
///     world.send(0, T, &[10 * r as u32])?;
/// }
/// # Ok(()) }
/// # fn main() { dist_runtime::launch(4, demo).unwrap(); }
/// ```
#[track_caller]
pub fn wait_any(reqs: &mut [Request<'_>]) -> Result<Option<usize>> {
    if !reqs.iter().any(Request::active) {
        return Ok(None);
    }
    Ok(wait_until_some(reqs, "wait_any", false)?.first().copied())
}

/// Waits until at least one of the active requests in `reqs` completes and returns the
/// indices of all that have (MPI's `Waitsome`), each then spent; an empty list when no
/// request is active. Errors as [`wait_any`].
///
/// ```
/// # use dist_runtime::prelude::*;
/// # #[spmd]
/// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
/// let (mut a, mut b) = ([1u64], [2u64]);
/// let mut reqs = vec![
///     world.all_reduce_async(&mut a, ReduceOp::Sum)?,
///     world.all_reduce_async(&mut b, ReduceOp::Sum)?,
/// ];
/// let mut finished = 0;
/// while finished < 2 {
///     finished += dist_runtime::wait_some(&mut reqs)?.len();
/// }
/// drop(reqs);
/// assert_eq!((a[0], b[0]), (world.size() as u64, 2 * world.size() as u64));
/// # Ok(()) }
/// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
/// ```
#[track_caller]
pub fn wait_some(reqs: &mut [Request<'_>]) -> Result<Vec<usize>> {
    if !reqs.iter().any(Request::active) {
        return Ok(Vec::new());
    }
    wait_until_some(reqs, "wait_some", true)
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
#[track_caller]
pub fn wait_all<'a>(reqs: impl IntoIterator<Item = Request<'a>>) -> Result<()> {
    let mut first = None;
    for r in reqs {
        if let Err(e) = r.wait() {
            first.get_or_insert(e);
        }
    }
    first.map_or(Ok(()), Err)
}
