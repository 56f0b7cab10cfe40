//! The non-blocking collectives (`all_reduce_async` and the rest): each checks its
//! arguments and builds its `Op` as the blocking form does, then runs on the
//! communicator's worker thread over copies of its buffers (`Layout`), handing back a
//! [`Request`].

use crate::backend::{Bufs, Layout, Shape};
use crate::buffer::{Buf, BufMut, ViewMut};
use crate::comm::Comm;
use crate::dtype::Element;
use crate::error::{Error, Result, Site};
use crate::group::Group;
use crate::op::{Op, OpKind};
use crate::reduce_op::ReduceOp;
use std::marker::PhantomData;
use std::sync::mpsc;

use crate::comm::request::{wait_label, ReqState, Request};

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
        layout: Layout,
    ) -> Result<Request<'a>> {
        let site = Site::caller();
        let aligned = |b: &[u8]| {
            let mut w = vec![0u128; b.len().div_ceil(16)];
            bytemuck::cast_slice_mut::<u128, u8>(&mut w)[..b.len()].copy_from_slice(b);
            (w, b.len())
        };
        let sw = send.map(aligned);
        // In place: the worker's copy starts as the buffer; otherwise it only receives.
        let mut rw = match (&recv, &layout) {
            (Some(r), Shape::InPlace(())) => Some(aligned(r)),
            (Some(r), _) => Some((vec![0u128; r.len().div_ceil(16)], r.len())),
            (None, _) => None,
        };
        let rx = self.on_worker(cx, move |run| {
            let s = sw.as_ref().map(|(w, l)| &bytemuck::cast_slice::<u128, u8>(w)[..*l]);
            let r = rw.as_mut().map(|(w, l)| &mut bytemuck::cast_slice_mut::<u128, u8>(w)[..*l]);
            run(layout.host(s, r)?)?;
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
            errs: crate::error::errors_handed_out(),
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

// ---------------------------------------------------------------- requests
