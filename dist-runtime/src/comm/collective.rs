//! The collectives: barrier, broadcast, reduce, all_reduce, the gathers, scatter,
//! reduce_scatter and the all-to-alls, on host or device buffers ([`Buf`]/[`BufMut`]):
//! one argument check and one `Op` per call, then the host backend or the device side.

use crate::backend::{Bufs, Layout, Shape};
use crate::buffer::DevRef;
use crate::buffer::{mixed, Buf, BufMut, SharedBuf, View, ViewMut};
use crate::comm::request::Request;
use crate::comm::{bytes, bytes_mut, Comm};
use crate::dtype::Element;
use crate::error::{Error, Result};
use crate::group::Group;
use crate::op::hash_usizes;
use crate::op::{Op, OpKind};
use crate::reduce_op::ReduceOp;

impl<G: Group> Comm<G> {
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
        self.run(&self.cx("barrier", Op::new(OpKind::Barrier)), Bufs::None)
    }

    /// Allocates `len` zeroed elements of `T` in memory every rank of this communicator
    /// reads in place (MPI's `MPI_Win_allocate_shared`, torch's symmetric memory).
    /// Collective: every rank calls it, in the same order, with the same `T` and `len`.
    ///
    /// A [`SharedBuf`] is a slice like any other; what changes is the collectives on this
    /// communicator when every rank passes (a part of) a buffer from the same `alloc`:
    /// on the shared-memory backend they read peers' buffers directly instead of copying
    /// through the staging slots — all_reduce reduces each rank's share straight from the
    /// peers' buffers into its own, broadcast, the gathers and all_to_all read the peers'
    /// blocks in place, reduce_scatter folds them into `recv`. Which buffer must come
    /// from `alloc`: the one peers read (all_reduce's and broadcast's `buf`, the `send`
    /// of the gathers, reduce_scatter and all_to_all). When some ranks pass other
    /// memory, the op takes the usual path on every rank (correct, not zero-copy). Ops
    /// on other communicators, the `_v` all-to-all, `reduce`, scans and `_async` forms
    /// treat it as any host buffer; so do other backends, where it is heap memory
    /// ([`SharedBuf::zero_copy`] says which).
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let mut grad = world.alloc::<f32>(1 << 16)?;
    /// grad.fill(world.rank() as f32);
    /// world.all_reduce(&mut grad, ReduceOp::Sum)?; // read in place on every rank
    /// let n = world.size() as f32;
    /// assert!(grad.iter().all(|&g| g == n * (n - 1.0) / 2.0));
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn alloc<T: Element>(&self, len: usize) -> Result<SharedBuf<T>> {
        let bytes =
            len.checked_mul(std::mem::size_of::<T>()).filter(|&b| b <= isize::MAX as usize).ok_or_else(|| {
                Error::invalid("alloc", format!("{len} elements of {} are more bytes than memory can hold", T::DTYPE))
            })?;
        let cx = self.cx("alloc", Op::new(OpKind::Alloc).dtype(T::DTYPE).count(len));
        self.inner.drain();
        let mem = self.recorded_as(true, cx.name, cx.site, || {
            crate::comm::agree(&self.inner, &cx)?;
            self.inner.backend.alloc(&cx, bytes)
        })?;
        Ok(SharedBuf::new(mem, len))
    }

    /// A barrier with its own deadline (torch's `monitored_barrier`): past `timeout` it is
    /// `Error::Timeout`, naming the ranks that did not arrive ("rank 0 waits in
    /// monitored_barrier for rank(s) 1, 3 to reach the same call": on shm from the
    /// segment, on MPI from the wait records the ranks blocked in the call exchange). It
    /// agrees with a plain `barrier` on the other ranks. A rank blocked elsewhere instead
    /// is named sooner, by the deadlock detector.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// world.monitored_barrier(std::time::Duration::from_secs(30))?;
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn monitored_barrier(&self, timeout: std::time::Duration) -> Result<()> {
        let cx = self.cx("monitored_barrier", Op::new(OpKind::Barrier));
        // The non-blocking collectives queued before it keep the communicator's deadline.
        self.inner.drain();
        let before = self.timeout();
        self.set_timeout(timeout)?;
        let r = self.run(&cx, Bufs::None);
        self.inner.backend.set_timeout(before);
        r
    }

    /// How long one wait on this communicator may last (`DIST_TIMEOUT` unless
    /// [`set_timeout`](Self::set_timeout) changed it).
    pub fn timeout(&self) -> std::time::Duration {
        self.inner.backend.timeout()
    }

    /// Sets how long one wait on this communicator may last before it is
    /// `Error::Timeout` (torch's `timeout=` of `new_group`), for every handle of it on
    /// this rank; `DIST_TIMEOUT` stays the default of the others. Device ops keep
    /// `DIST_TIMEOUT`.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// world.set_timeout(std::time::Duration::from_secs(600))?; // a long checkpoint ahead
    /// assert_eq!(world.timeout().as_secs(), 600);
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(2, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn set_timeout(&self, timeout: std::time::Duration) -> Result<()> {
        if timeout.is_zero() || timeout.as_secs_f64() > crate::env::MAX_TIMEOUT_SECS {
            return Err(Error::invalid(
                "set_timeout",
                format!(
                    "{timeout:?} is not a deadline: give more than zero and at most {:.0} s",
                    crate::env::MAX_TIMEOUT_SECS
                ),
            ));
        }
        self.inner.backend.set_timeout(timeout);
        Ok(())
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
    pub fn broadcast<T: Element, B: BufMut<T> + ?Sized>(&self, buf: &mut B, root: usize) -> Result<()> {
        self.check_rank("broadcast", "root", root)?;
        let fp = self.cx("broadcast", Op::new(OpKind::Broadcast).dtype(T::DTYPE).count(buf.elems()).root(root));
        self.in_place(&fp, buf.view_mut())
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
    pub fn reduce<T: Element, B: BufMut<T> + ?Sized>(&self, buf: &mut B, op: ReduceOp, root: usize) -> Result<()> {
        self.check_rank("reduce", "root", root)?;
        op.validate(T::DTYPE, "reduce")?;
        op.check_items("reduce", "buf", buf.elems())?;
        let fp = Op::new(OpKind::Reduce).dtype(T::DTYPE).count(buf.elems()).root(root).reduce(op);
        self.in_place(&self.cx("reduce", fp), buf.view_mut())
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
    pub fn all_reduce<T: Element, B: BufMut<T> + ?Sized>(&self, buf: &mut B, op: ReduceOp) -> Result<()> {
        op.validate(T::DTYPE, "all_reduce")?;
        op.check_items("all_reduce", "buf", buf.elems())?;
        let fp = Op::new(OpKind::AllReduce).dtype(T::DTYPE).count(buf.elems()).reduce(op);
        self.in_place(&self.cx("all_reduce", fp), buf.view_mut())
    }

    /// Inclusive prefix reduction (MPI's `Scan`): rank r's `buf` becomes the reduction
    /// of every rank 0..=r's `buf`, combined in rank order (`Avg` divides by r + 1).
    /// Every rank passes a buffer of the same length. Host buffers only (NCCL has no
    /// scan).
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// // Each rank holds 2 items per rank number; where do its items end?
    /// let r = world.rank() as u64;
    /// let mut end = [2 * r];
    /// world.scan(&mut end, ReduceOp::Sum)?;
    /// assert_eq!(end, [r * (r + 1)]); // 2·(0 + 1 + … + r)
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(4, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn scan<T: Element, B: BufMut<T> + ?Sized>(&self, buf: &mut B, op: ReduceOp) -> Result<()> {
        self.scan_impl("scan", OpKind::Scan, buf, op)
    }

    /// Exclusive prefix reduction (MPI's `Exscan`): rank r's `buf` becomes the
    /// reduction of ranks 0..r's `buf`, in rank order; rank 0 gets the identity of `op`
    /// (0 for sums, 1 for products, the lowest value for Max, the highest for Min, all
    /// ones for BAnd), where MPI leaves it undefined. `Avg` divides by r. Host buffers
    /// only.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// // Each rank writes r + 1 records to a shared file: where does it start?
    /// let r = world.rank() as u64;
    /// let mut offset = [r + 1];
    /// world.exscan(&mut offset, ReduceOp::Sum)?;
    /// assert_eq!(offset, [r * (r + 1) / 2]); // 1 + 2 + … + r, and 0 on rank 0
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(4, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn exscan<T: Element, B: BufMut<T> + ?Sized>(&self, buf: &mut B, op: ReduceOp) -> Result<()> {
        self.scan_impl("exscan", OpKind::Exscan, buf, op)
    }

    #[track_caller]
    fn scan_impl<T: Element, B: BufMut<T> + ?Sized>(
        &self,
        name: &'static str,
        kind: OpKind,
        buf: &mut B,
        op: ReduceOp,
    ) -> Result<()> {
        op.validate(T::DTYPE, name)?;
        op.check_items(name, "buf", buf.elems())?;
        let fp = self.cx(name, Op::new(kind).dtype(T::DTYPE).count(buf.elems()).reduce(op));
        match buf.view_mut() {
            ViewMut::Host(b) => self.run_host(&fp, Bufs::InPlace(bytes_mut(b))),
            ViewMut::Strided(s) => Err(s.error_at(name, fp.site)),
            ViewMut::Device(_) => Err(Error::invalid(
                name,
                "NCCL has no prefix reduction: scan a host copy of the buffer (or all_gather and reduce on the device)",
            )),
        }
    }

    /// An in-place collective (`op` says which) on `buf`, wherever it lives.
    fn in_place<T: Element>(&self, op: &Op, buf: ViewMut<'_, T>) -> Result<()> {
        self.in_place_on(op, buf, false)?.wait()
    }

    /// An in-place collective on `buf`, run now or (`later`) on the worker thread for
    /// host buffers; on the device's stream for device buffers.
    #[track_caller]
    pub(crate) fn in_place_on<'v, T: Element>(&self, op: &Op, buf: ViewMut<'v, T>, later: bool) -> Result<Request<'v>> {
        self.shaped(op, None, Some(buf), Shape::InPlace(()), later)
    }

    /// Runs collective `op` of `layout` over `send` and `recv` (each given where the
    /// layout takes one), wherever they live: host buffers now or (`later`) on the worker
    /// thread, device buffers on the device's stream. A new collective of an existing
    /// shape needs only its [`Layout`].
    #[track_caller]
    pub(crate) fn shaped<'v, T: Element>(
        &self,
        op: &Op,
        send: Option<View<'v, T>>,
        recv: Option<ViewMut<'v, T>>,
        layout: Layout,
        later: bool,
    ) -> Result<Request<'v>> {
        let send = send
            .map(|v| match v {
                View::Host(s) => Ok(At::Host(bytes(s))),
                View::Device(d) => Ok(At::Device(d)),
                View::Strided(s) => Err(s.error_at(op.name, op.site)),
            })
            .transpose()?;
        let recv = recv
            .map(|v| match v {
                ViewMut::Host(r) => Ok(At::Host(bytes_mut(r))),
                ViewMut::Device(d) => Ok(At::Device(d)),
                ViewMut::Strided(s) => Err(s.error_at(op.name, op.site)),
            })
            .transpose()?;
        match (send, recv) {
            (s @ (None | Some(At::Host(_))), r @ (None | Some(At::Host(_)))) => {
                self.host(op, later, s.and_then(At::host), r.and_then(At::host), layout)
            }
            (s @ (None | Some(At::Device(_))), r @ (None | Some(At::Device(_)))) => Ok(Request::device(
                self.device_call(op, T::DTYPE, vec![s.and_then(At::device), r.and_then(At::device)], layout, true)?,
                op.site,
            )),
            _ => Err(mixed(op.name)),
        }
    }

    /// Runs a host collective of `shape` now, or (`later`) queues it on the worker with
    /// copies of its buffers (the result lands in `recv` at `wait`).
    #[track_caller]
    pub(crate) fn host<'v>(
        &self,
        op: &Op,
        later: bool,
        send: Option<&[u8]>,
        recv: Option<&'v mut [u8]>,
        layout: Layout,
    ) -> Result<Request<'v>> {
        if later {
            return self.spawn_shaped(*op, send, recv, layout);
        }
        self.run_host(op, layout.host(send, recv)?)?;
        Ok(Request::done(op.site))
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
    pub fn all_gather<T: Element, S: Buf<T> + ?Sized, R: BufMut<T> + ?Sized>(
        &self,
        send: &S,
        recv: &mut R,
    ) -> Result<()> {
        let k = send.elems();
        self.check_len("all_gather", "recv", recv.elems(), k * self.size(), "size() × send.len()")?;
        let counts = vec![k * T::DTYPE.size(); self.size()];
        let fp = self.cx("all_gather", Op::new(OpKind::AllGather).dtype(T::DTYPE).count(k));
        self.gather_on(&fp, send.view(), Some(recv.view_mut()), counts, false)?.wait()
    }

    /// A gather or all-gather of `counts` bytes per rank, wherever the buffers live.
    #[track_caller]
    pub(crate) fn gather_on<'v, T: Element>(
        &self,
        op: &Op,
        send: View<'v, T>,
        recv: Option<ViewMut<'v, T>>,
        counts: Vec<usize>,
        later: bool,
    ) -> Result<Request<'v>> {
        let layout = Shape::Gather { send: (), recv: recv.is_some().then_some(()), counts };
        self.shaped(op, Some(send), recv, layout, later)
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
    pub fn all_gather_v<T: Element, S: Buf<T> + ?Sized, R: BufMut<T> + ?Sized>(
        &self,
        send: &S,
        recv: &mut R,
        counts: &[usize],
    ) -> Result<()> {
        self.all_gather_v_on("all_gather_v", send, recv, counts, false)?.wait()
    }

    #[track_caller]
    pub(crate) fn all_gather_v_on<'v, T: Element, S: Buf<T> + ?Sized, R: BufMut<T> + ?Sized>(
        &self,
        name: &'static str,
        send: &'v S,
        recv: &'v mut R,
        counts: &[usize],
        later: bool,
    ) -> Result<Request<'v>> {
        self.check_counts(name, counts)?;
        self.check_len(name, "send", send.elems(), counts[self.rank()], "counts[rank]")?;
        self.check_len(name, "recv", recv.elems(), counts.iter().sum(), "the sum of counts")?;
        let bc: Vec<usize> = counts.iter().map(|c| c * T::DTYPE.size()).collect();
        let fp =
            Op::new(OpKind::AllGather).dtype(T::DTYPE).count(counts.iter().sum()).extra(hash_usizes(counts)).varying();
        self.gather_on(&self.cx(name, fp), send.view(), Some(recv.view_mut()), bc, later)
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
    pub fn gather<T: Element, S: Buf<T> + ?Sized>(
        &self,
        send: &S,
        recv: Option<&mut S::Like>,
        root: usize,
    ) -> Result<()> {
        let counts = vec![send.elems(); self.size()];
        self.gather_impl("gather", send, recv, &counts, root, false, false)?.wait()
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
    pub fn gather_v<T: Element, S: Buf<T> + ?Sized>(
        &self,
        send: &S,
        recv: Option<&mut S::Like>,
        counts: &[usize],
        root: usize,
    ) -> Result<()> {
        self.check_counts("gather_v", counts)?;
        self.gather_impl("gather_v", send, recv, counts, root, true, false)?.wait()
    }

    #[allow(clippy::too_many_arguments)]
    #[track_caller]
    pub(crate) fn gather_impl<'v, T: Element, S: Buf<T> + ?Sized>(
        &self,
        op: &'static str,
        send: &'v S,
        recv: Option<&'v mut S::Like>,
        counts: &[usize],
        root: usize,
        v: bool,
        later: bool,
    ) -> Result<Request<'v>> {
        self.check_rank(op, "root", root)?;
        self.check_len(
            op,
            "send",
            send.elems(),
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
                r.elems(),
                counts.iter().sum(),
                if v { "the sum of counts" } else { "size() × send.len()" },
            )?,
            (None, false) => {}
        }
        let bc: Vec<usize> = counts.iter().map(|c| c * T::DTYPE.size()).collect();
        let mut fp = Op::new(OpKind::Gather).dtype(T::DTYPE).root(root);
        fp =
            if v { fp.count(counts.iter().sum()).extra(hash_usizes(counts)).varying() } else { fp.count(send.elems()) };
        self.gather_on(&self.cx(op, fp), send.view(), recv.map(|r| r.view_mut()), bc, later)
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
    pub fn scatter<T: Element, R: BufMut<T> + ?Sized>(
        &self,
        send: Option<&R::Like>,
        recv: &mut R,
        root: usize,
    ) -> Result<()> {
        self.scatter_on("scatter", send, recv, None, root, false)?.wait()
    }

    /// As [`scatter`](Self::scatter) with per-rank counts: block j of the root's `send`
    /// has `counts[j]` elements (after those of ranks `0..j`) and goes to rank j, whose
    /// `recv` holds `counts[j]` elements. Every rank passes the same `counts` (MPI's
    /// `Scatterv`; torch's `scatter` with uneven tensors).
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// // Rank j gets j + 1 rows of the root's table.
    /// let counts: Vec<usize> = (1..=world.size()).collect();
    /// let table: Vec<u32> = (0..counts.iter().sum::<usize>() as u32).collect();
    /// let send = if world.rank() == 0 { Some(&table[..]) } else { None };
    /// let mut mine = vec![0u32; world.rank() + 1];
    /// world.scatter_v(send, &mut mine, &counts, 0)?;
    /// let first = (world.rank() * (world.rank() + 1) / 2) as u32; // 1 + 2 + … + rank
    /// assert_eq!(mine, (first..first + world.rank() as u32 + 1).collect::<Vec<_>>());
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn scatter_v<T: Element, R: BufMut<T> + ?Sized>(
        &self,
        send: Option<&R::Like>,
        recv: &mut R,
        counts: &[usize],
        root: usize,
    ) -> Result<()> {
        self.scatter_on("scatter_v", send, recv, Some(counts), root, false)?.wait()
    }

    /// Scatter (`counts` None: equal blocks of `recv.len()`) or scatter_v.
    #[track_caller]
    pub(crate) fn scatter_on<'v, T: Element, R: BufMut<T> + ?Sized>(
        &self,
        name: &'static str,
        send: Option<&'v R::Like>,
        recv: &'v mut R,
        counts: Option<&[usize]>,
        root: usize,
        later: bool,
    ) -> Result<Request<'v>> {
        let k = recv.elems();
        self.check_rank(name, "root", root)?;
        // Byte counts per rank (one allocation, which the Scatter shape keeps).
        let es = T::DTYPE.size();
        let (bc, total, fp, even) = match counts {
            None => {
                let fp = Op::new(OpKind::Scatter).dtype(T::DTYPE).count(k).root(root);
                (vec![k * es; self.size()], k * self.size(), fp, true)
            }
            Some(c) => {
                self.check_counts(name, c)?;
                self.check_len(name, "recv", k, c[self.rank()], "counts[rank]")?;
                let total = c.iter().sum();
                let fp =
                    Op::new(OpKind::Scatter).dtype(T::DTYPE).count(total).root(root).extra(hash_usizes(c)).varying();
                (c.iter().map(|x| x * es).collect(), total, fp, false)
            }
        };
        match (&send, self.rank() == root) {
            (None, true) => {
                return Err(Error::invalid(name, format!("root {root} must pass Some(send) with {total} elements")))
            }
            (Some(_), false) => {
                return Err(Error::invalid(
                    name,
                    format!("rank {} is not the root ({root}) and must pass None for send", self.rank()),
                ))
            }
            (Some(s), true) => self.check_len(
                name,
                "send",
                s.elems(),
                total,
                if even { "size() × recv.len()" } else { "the sum of counts" },
            )?,
            (None, false) => {}
        }
        let fp = self.cx(name, fp);
        let layout = Shape::Scatter { send: send.is_some().then_some(()), recv: (), counts: bc };
        self.shaped(&fp, send.map(|s| s.view()), Some(recv.view_mut()), layout, later)
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
    pub fn reduce_scatter<T: Element, S: Buf<T> + ?Sized, R: BufMut<T> + ?Sized>(
        &self,
        send: &S,
        recv: &mut R,
        op: ReduceOp,
    ) -> Result<()> {
        self.reduce_scatter_on("reduce_scatter", send, recv, None, op, false)?.wait()
    }

    /// As [`reduce_scatter`](Self::reduce_scatter) with per-rank counts: `send` holds
    /// `size()` blocks, block j of `counts[j]` elements (after those of ranks `0..j`),
    /// and rank j gets the reduction of block j in its `recv` of `counts[j]` elements.
    /// Every rank passes the same `counts` (MPI's `Reduce_scatter`; FSDP's uneven
    /// shards).
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let n = world.size();
    /// // 10 gradients sharded unevenly: rank j owns counts[j] of them.
    /// let counts: Vec<usize> = (0..n).map(|j| 10 * (j + 1) / n - 10 * j / n).collect();
    /// let grads: Vec<f64> = (0..10).map(|i| i as f64).collect(); // the same on every rank
    /// let mut mine = vec![0.0; counts[world.rank()]];
    /// world.reduce_scatter_v(&grads, &mut mine, &counts, ReduceOp::Sum)?;
    /// let first: usize = counts[..world.rank()].iter().sum();
    /// let want: Vec<f64> = (first..first + mine.len()).map(|i| (i * n) as f64).collect();
    /// assert_eq!(mine, want);
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn reduce_scatter_v<T: Element, S: Buf<T> + ?Sized, R: BufMut<T> + ?Sized>(
        &self,
        send: &S,
        recv: &mut R,
        counts: &[usize],
        op: ReduceOp,
    ) -> Result<()> {
        self.reduce_scatter_on("reduce_scatter_v", send, recv, Some(counts), op, false)?.wait()
    }

    /// Reduce-scatter (`counts` None: equal blocks of `recv.len()`) or reduce_scatter_v.
    #[track_caller]
    pub(crate) fn reduce_scatter_on<'v, T: Element, S: Buf<T> + ?Sized, R: BufMut<T> + ?Sized>(
        &self,
        name: &'static str,
        send: &'v S,
        recv: &'v mut R,
        counts: Option<&[usize]>,
        op: ReduceOp,
        later: bool,
    ) -> Result<Request<'v>> {
        op.validate(T::DTYPE, name)?;
        let k = recv.elems();
        op.check_items(name, "recv", k)?;
        if let Some(c) = counts {
            for (j, &x) in c.iter().enumerate() {
                op.check_items(name, &format!("block {j} (counts[{j}])"), x)?;
            }
        }
        let fp = Op::new(OpKind::ReduceScatter).dtype(T::DTYPE).reduce(op);
        // Byte counts per rank (one allocation, which the ReduceScatter shape keeps).
        let es = T::DTYPE.size();
        let (bc, fp) = match counts {
            None => {
                self.check_len(name, "send", send.elems(), k * self.size(), "size() × recv.len()")?;
                (vec![k * es; self.size()], fp.count(k))
            }
            Some(c) => {
                self.check_counts(name, c)?;
                self.check_len(name, "recv", k, c[self.rank()], "counts[rank]")?;
                self.check_len(name, "send", send.elems(), c.iter().sum(), "the sum of counts")?;
                (c.iter().map(|x| x * es).collect(), fp.count(c.iter().sum()).extra(hash_usizes(c)).varying())
            }
        };
        let fp = self.cx(name, fp);
        let layout = Shape::ReduceScatter { send: (), recv: (), counts: bc };
        self.shaped(&fp, Some(send.view()), Some(recv.view_mut()), layout, later)
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
    pub fn all_to_all<T: Element, S: Buf<T> + ?Sized, R: BufMut<T> + ?Sized>(
        &self,
        send: &S,
        recv: &mut R,
    ) -> Result<()> {
        self.all_to_all_eq("all_to_all", send, recv, false)?.wait()
    }

    #[track_caller]
    pub(crate) fn all_to_all_eq<'v, T: Element, S: Buf<T> + ?Sized, R: BufMut<T> + ?Sized>(
        &self,
        name: &'static str,
        send: &'v S,
        recv: &'v mut R,
        later: bool,
    ) -> Result<Request<'v>> {
        let (n, len) = (self.size(), send.elems());
        if !len.is_multiple_of(n) {
            return Err(Error::invalid(
                name,
                format!("send has {len} elements, not a multiple of the communicator size {n}"),
            ));
        }
        self.check_len(name, "recv", recv.elems(), len, "the same as send")?;
        let counts = vec![len / n * T::DTYPE.size(); n];
        let fp = self.cx(name, Op::new(OpKind::AllToAll).dtype(T::DTYPE).count(len));
        self.all_to_all_on(&fp, send.view(), recv.view_mut(), counts.clone(), counts, later)
    }

    /// An all-to-all of per-peer byte counts, wherever the buffers live.
    #[track_caller]
    pub(crate) fn all_to_all_on<'v, T: Element>(
        &self,
        op: &Op,
        send: View<'v, T>,
        recv: ViewMut<'v, T>,
        send_counts: Vec<usize>,
        recv_counts: Vec<usize>,
        later: bool,
    ) -> Result<Request<'v>> {
        let layout = Shape::AllToAll { send: (), send_counts, recv: (), recv_counts };
        self.shaped(op, Some(send), Some(recv), layout, later)
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
    pub fn all_to_all_v<T: Element, S: Buf<T> + ?Sized, R: BufMut<T> + ?Sized>(
        &self,
        send: &S,
        send_counts: &[usize],
        recv: &mut R,
        recv_counts: &[usize],
    ) -> Result<()> {
        self.all_to_all_v_on("all_to_all_v", send, send_counts, recv, recv_counts, false)?.wait()
    }

    #[track_caller]
    pub(crate) fn all_to_all_v_on<'v, T: Element, S: Buf<T> + ?Sized, R: BufMut<T> + ?Sized>(
        &self,
        name: &'static str,
        send: &'v S,
        send_counts: &[usize],
        recv: &'v mut R,
        recv_counts: &[usize],
        later: bool,
    ) -> Result<Request<'v>> {
        self.check_counts(name, send_counts)?;
        self.check_counts(name, recv_counts)?;
        self.check_len(name, "send", send.elems(), send_counts.iter().sum(), "the sum of send_counts")?;
        self.check_len(name, "recv", recv.elems(), recv_counts.iter().sum(), "the sum of recv_counts")?;
        // What a rank sends itself is what it receives from itself (the other pairs are
        // compared across ranks when the op runs).
        let me = self.rank();
        if send_counts[me] != recv_counts[me] {
            return Err(Error::invalid(
                name,
                format!(
                    "send_counts[{me}] is {} but recv_counts[{me}] is {}: what rank {me} sends itself is what it \
                     receives from itself, so the two must be equal",
                    send_counts[me], recv_counts[me]
                ),
            ));
        }
        let es = T::DTYPE.size();
        let sc: Vec<usize> = send_counts.iter().map(|c| c * es).collect();
        let rc: Vec<usize> = recv_counts.iter().map(|c| c * es).collect();
        let fp = self.cx(name, Op::new(OpKind::AllToAll).dtype(T::DTYPE).varying());
        self.all_to_all_on(&fp, send.view(), recv.view_mut(), sc, rc, later)
    }
}

/// A buffer of an op as [`Comm::shaped`] takes it: host bytes, or a device buffer.
enum At<'v, H> {
    Host(H),
    Device(DevRef<'v>),
}

impl<'v, H> At<'v, H> {
    fn host(self) -> Option<H> {
        match self {
            At::Host(h) => Some(h),
            At::Device(_) => None,
        }
    }

    fn device(self) -> Option<DevRef<'v>> {
        match self {
            At::Device(d) => Some(d),
            At::Host(_) => None,
        }
    }
}
