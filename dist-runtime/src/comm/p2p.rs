//! Point-to-point: send, recv, sendrecv, isend, irecv, `recv_any`/`irecv_any` (from any
//! source), and `batch` (batch_isend_irecv), on host or device buffers. On device buffers (NCCL) tags are not matched: messages
//! between two ranks match in posting order, as in NCCL; the typed tag still ties the
//! element type.

use crate::buffer::{mixed, Buf, BufMut, DevRef, View, ViewMut};
use crate::comm::request::{ReqState, Request};
use crate::comm::{bytes, bytes_mut, Comm};
use crate::dtype::{DType, Element};
use crate::error::{Error, Result, Site};
use crate::group::Group;
use crate::tag::Tag;
use std::marker::PhantomData;

impl<G: Group> Comm<G> {
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
    pub fn send<T: Element, B: Buf<T> + ?Sized>(&self, dst: usize, tag: Tag<T>, buf: &B) -> Result<()> {
        self.check_rank("send", "destination", dst)?;
        match buf.view() {
            View::Host(b) => {
                let site = Site::caller();
                self.recorded("send", site, || self.inner.backend.send(site, dst, tag.id(), T::DTYPE, bytes(b)))
            }
            View::Device(d) => self.p2p_device("send", vec![(true, dst, T::DTYPE, d)])?.wait(),
            View::Strided(s) => Err(s.error("send")),
        }
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
    pub fn recv<T: Element, B: BufMut<T> + ?Sized>(&self, src: usize, tag: Tag<T>, buf: &mut B) -> Result<()> {
        self.check_rank("recv", "source", src)?;
        match buf.view_mut() {
            ViewMut::Host(b) => {
                let site = Site::caller();
                self.recorded("recv", site, || self.inner.backend.recv(site, src, tag.id(), T::DTYPE, bytes_mut(b)))
            }
            ViewMut::Device(d) => self.p2p_device("recv", vec![(false, src, T::DTYPE, d)])?.wait(),
            ViewMut::Strided(s) => Err(s.error("recv")),
        }
    }

    /// Receives the first message with `tag` from any rank (torch's `recv(src=None)`,
    /// MPI's `MPI_ANY_SOURCE`): up to `buf.len()` elements land at the front of `buf`;
    /// the [`Status`] says which rank sent it and how many elements it held.
    ///
    /// Matching: a `recv`/`irecv` naming a source claims that source's next message with
    /// its tag when it is posted; `recv_any` takes the earliest-arriving message with
    /// `tag` that no such receive claims, whichever rank sent it. Messages from one rank
    /// are taken in the order it sent them; several pending `irecv_any` on one tag are
    /// served in posting order. Which of two racing senders comes first depends on
    /// timing, so the compile-time check reports such a race instead of guessing. A
    /// message of another element type, or longer than `buf`, is an error naming both
    /// call sites. Host buffers only (NCCL has no receive from any source).
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// const WORK: Tag<u32> = Tag::new(3);
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let (r, n) = (world.rank(), world.size());
    /// if r == 0 {
    ///     // A manager takes results in whatever order the workers finish.
    ///     let mut seen = vec![false; n];
    ///     for _ in 1..n {
    ///         // (Room for the longest message: worker n - 1 sends n - 1 values.)
    ///         let mut buf = vec![0u32; n];
    ///         let st = world.recv_any(WORK, &mut buf)?;
    ///         assert_eq!(st.count, st.source); // worker k sends k values
    ///         assert!(buf[..st.count].iter().all(|&x| x == 10 * st.source as u32));
    ///         seen[st.source] = true;
    ///     }
    ///     assert!(seen[1..].iter().all(|&s| s));
    /// } else {
    ///     world.send(0, WORK, &vec![10 * r as u32; r])?;
    /// }
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(4, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn recv_any<T: Element, B: BufMut<T> + ?Sized>(&self, tag: Tag<T>, buf: &mut B) -> Result<Status> {
        self.irecv_any(tag, buf)?.wait()
    }

    /// Starts a receive from any source (see [`recv_any`](Self::recv_any)); `buf` is
    /// borrowed until the returned [`RecvAny`] is waited on, which gives the [`Status`].
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// const PING: Tag<u8> = Tag::new(9);
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let (r, n) = (world.rank(), world.size());
    /// let mut got = [0u8; 1];
    /// let mut req = world.irecv_any(PING, &mut got)?;
    /// world.send((r + 1) % n, PING, &[r as u8])?;
    /// let st = loop {
    ///     if let Some(st) = req.test()? {
    ///         break st;
    ///     }
    /// };
    /// assert_eq!((st.source, st.count), ((r + n - 1) % n, 1));
    /// drop(req);
    /// assert_eq!(got, [((r + n - 1) % n) as u8]);
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn irecv_any<'a, T: Element, B: BufMut<T> + ?Sized>(
        &'a self,
        tag: Tag<T>,
        buf: &'a mut B,
    ) -> Result<RecvAny<'a>> {
        let site = Site::caller();
        let buf = match buf.view_mut() {
            ViewMut::Host(b) => bytes_mut(b),
            ViewMut::Strided(s) => return Err(s.error("recv_any")),
            ViewMut::Device(_) => {
                return Err(Error::invalid(
                    "recv_any",
                    "a receive from any source takes host buffers: NCCL matches device messages by source only; \
                     receive from each possible source, or receive into a host buffer",
                ))
            }
        };
        let id = self.inner.backend.post_recv_any(site, tag.id())?;
        Ok(RecvAny { inner: &self.inner, id: Some(id), dtype: T::DTYPE, buf, site })
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
    pub fn sendrecv<T: Element, S: Buf<T> + ?Sized, R: BufMut<T> + ?Sized>(
        &self,
        dst: usize,
        tag: Tag<T>,
        send: &S,
        src: usize,
        recv: &mut R,
    ) -> Result<()> {
        // (Errors and wait records name the `sendrecv`, not the batch or the receive
        // inside it.)
        let _named = crate::error::AsUserOp::new("sendrecv");
        self.batch_as("sendrecv", |b| {
            b.send(dst, tag, send);
            b.recv(src, tag, recv);
        })
    }

    /// Sends `buf` to `dst` and receives into the same buffer from `src`, as MPI's
    /// `MPI_Sendrecv_replace`: a ring shift in place. What is sent is `buf` as it was
    /// at the call (a copy taken first), so the message received may be as long only;
    /// the receive must fit `buf` exactly, as for [`sendrecv`](Self::sendrecv). Host
    /// buffers only: a device buffer is refused (use `sendrecv` with a second buffer).
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # const T: Tag<u64> = Tag::new(1);
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// let (r, n) = (world.rank(), world.size());
    /// // Shift around the ring in place: send right, take the left neighbour's block.
    /// let mut block = [r as u64; 4];
    /// world.sendrecv_replace((r + 1) % n, T, &mut block, (r + n - 1) % n)?;
    /// assert_eq!(block, [((r + n - 1) % n) as u64; 4]);
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn sendrecv_replace<T: Element, B: BufMut<T> + ?Sized>(
        &self,
        dst: usize,
        tag: Tag<T>,
        buf: &mut B,
        src: usize,
    ) -> Result<()> {
        let _named = crate::error::AsUserOp::new("sendrecv_replace");
        let out: Vec<T> = match buf.view() {
            View::Host(b) => b.to_vec(),
            View::Strided(s) => return Err(s.error("sendrecv_replace")),
            View::Device(_) => {
                return Err(Error::invalid(
                    "sendrecv_replace",
                    "a device buffer cannot be sent and received in place: use `sendrecv` with a second buffer",
                ))
            }
        };
        self.batch_as("sendrecv_replace", |b| {
            b.send(dst, tag, &out[..]);
            b.recv(src, tag, buf);
        })
    }

    /// Starts sending `buf` to `dst`. `buf` stays borrowed until the returned request is
    /// waited on (or dropped, which waits), so it can't be changed while in flight.
    ///
    /// When the wait returns: on the shared-memory backend once the data is copied out,
    /// whether or not the receive is posted (eager; a blocking [`Comm::send`] with checks
    /// on waits for its receive, as NCCL's does). Over MPI and NCCL a send request may
    /// complete only when the receiver takes the message, as `MPI_Isend`'s and NCCL's
    /// do: a program portable across backends posts the receive it needs before waiting
    /// on its sends (or uses [`Comm::sendrecv`] or [`Comm::batch`]).
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
    pub fn isend<'a, T: Element, B: Buf<T> + ?Sized>(
        &'a self,
        dst: usize,
        tag: Tag<T>,
        buf: &'a B,
    ) -> Result<Request<'a>> {
        self.check_rank("isend", "destination", dst)?;
        let site = Site::caller();
        let view = buf.view();
        if let View::Strided(s) = &view {
            return Err(s.error("isend"));
        }
        let state = self.recorded("isend", site, || {
            Ok(match view {
                View::Host(b) => ReqState::Send {
                    inner: &self.inner,
                    id: self.inner.backend.post_send(site, dst, tag.id(), T::DTYPE, bytes(b))?,
                },
                View::Device(d) => ReqState::Device(self.p2p_device("isend", vec![(true, dst, T::DTYPE, d)])?),
                View::Strided(_) => unreachable!("refused above"),
            })
        })?;
        Ok(Request { state, site, _buf: PhantomData, rec: None, errs: crate::error::errors_handed_out() }
            .recorded(self.inner.rec, "isend"))
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
    pub fn irecv<'a, T: Element, B: BufMut<T> + ?Sized>(
        &'a self,
        src: usize,
        tag: Tag<T>,
        buf: &'a mut B,
    ) -> Result<Request<'a>> {
        self.check_rank("irecv", "source", src)?;
        let site = Site::caller();
        let view = buf.view_mut();
        if let ViewMut::Strided(s) = &view {
            return Err(s.error("irecv"));
        }
        let state = self.recorded("irecv", site, || {
            Ok(match view {
                ViewMut::Host(b) => ReqState::Recv {
                    inner: &self.inner,
                    id: self.inner.backend.post_recv(site, src, tag.id())?,
                    dtype: T::DTYPE,
                    buf: bytes_mut(b),
                },
                ViewMut::Device(d) => ReqState::Device(self.p2p_device("irecv", vec![(false, src, T::DTYPE, d)])?),
                ViewMut::Strided(_) => unreachable!("refused above"),
            })
        })?;
        Ok(Request { state, site, _buf: PhantomData, rec: None, errs: crate::error::errors_handed_out() }
            .recorded(self.inner.rec, "irecv"))
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
        self.batch_as("batch", f)
    }

    /// [`batch`](Self::batch), named `name` in errors and the flight recorder.
    #[track_caller]
    fn batch_as<'b>(&self, name: &'static str, f: impl FnOnce(&mut Batch<'b>)) -> Result<()> {
        let site = Site::caller();
        let b = self.collect_batch(name, f)?;
        if !b.dev.is_empty() {
            return self.p2p_device(name, b.dev)?.wait();
        }
        self.recorded(name, site, || self.host_batch(site, b))
    }

    /// The ops `f` adds, with their peers checked and host and device buffers unmixed.
    #[track_caller]
    fn collect_batch<'b>(&self, name: &'static str, f: impl FnOnce(&mut Batch<'b>)) -> Result<Batch<'b>> {
        let mut b = Batch { ops: Vec::new(), dev: Vec::new(), n: self.size(), err: None };
        f(&mut b);
        if let Some(s) = b.err.take() {
            return Err(s.error(name));
        }
        for &peer in b.ops.iter().map(BatchOp::peer).chain(b.dev.iter().map(|d| &d.1)) {
            self.check_rank(name, "peer", peer)?;
        }
        if !b.dev.is_empty() && !b.ops.is_empty() {
            return Err(mixed(name));
        }
        Ok(b)
    }

    /// Starts the sends and receives `f` adds, as [`batch`](Self::batch) does, and
    /// returns at once with one request for all of them (torch's `batch_isend_irecv`,
    /// whose works complete together): the buffers stay borrowed until it is waited on.
    ///
    /// ```
    /// # use dist_runtime::prelude::*;
    /// # #[spmd]
    /// # fn demo(world: Comm<World>) -> dist_runtime::Result<()> {
    /// const HALO: Tag<i32> = Tag::new(7);
    /// let (r, n) = (world.rank(), world.size());
    /// let edge = [r as i32; 4];
    /// let (mut from_left, mut from_right) = ([0; 4], [0; 4]);
    /// let req = world.batch_async(|b| {
    ///     b.send((r + 1) % n, HALO, &edge);
    ///     b.send((r + n - 1) % n, HALO, &edge);
    ///     b.recv((r + n - 1) % n, HALO, &mut from_left);
    ///     b.recv((r + 1) % n, HALO, &mut from_right);
    /// })?;
    /// // … update the interior meanwhile …
    /// req.wait()?;
    /// assert_eq!((from_left[0], from_right[0]), (((r + n - 1) % n) as i32, ((r + 1) % n) as i32));
    /// # Ok(()) }
    /// # fn main() { dist_runtime::launch(3, demo).unwrap(); }
    /// ```
    #[track_caller]
    pub fn batch_async<'a>(&'a self, f: impl FnOnce(&mut Batch<'a>)) -> Result<Request<'a>> {
        let site = Site::caller();
        let b = self.collect_batch("batch_async", f)?;
        if !b.dev.is_empty() {
            return Ok(Request::device(self.p2p_device("batch_async", b.dev)?, site));
        }
        let inner = &*self.inner;
        let mut reqs = Vec::with_capacity(b.ops.len());
        // Receives first (claims match posting order), then sends, as `batch`.
        let mut sends = Vec::new();
        for op in b.ops {
            match op {
                BatchOp::Recv { src, tag, dtype, buf } => {
                    let id = inner.backend.post_recv(site, src, tag)?;
                    reqs.push(Request {
                        state: ReqState::Recv { inner, id, dtype, buf },
                        site,
                        _buf: PhantomData,
                        rec: None,
                        errs: crate::error::errors_handed_out(),
                    });
                }
                send => sends.push(send),
            }
        }
        for op in sends {
            if let BatchOp::Send { dst, tag, dtype, data } = op {
                let id = inner.backend.post_send(site, dst, tag, dtype, data)?;
                reqs.push(Request {
                    state: ReqState::Send { inner, id },
                    site,
                    _buf: PhantomData,
                    rec: None,
                    errs: crate::error::errors_handed_out(),
                });
            }
        }
        Ok(Request {
            state: ReqState::Group(reqs),
            site,
            _buf: PhantomData,
            rec: None,
            errs: crate::error::errors_handed_out(),
        }
        .recorded(self.inner.rec, "batch_async"))
    }

    /// The host half of [`batch`](Self::batch).
    fn host_batch(&self, site: Site, mut b: Batch<'_>) -> Result<()> {
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
}

// ---------------------------------------------------------------- batch

/// The point-to-point ops of one [`Comm::batch`] call.
pub struct Batch<'b> {
    ops: Vec<BatchOp<'b>>,
    /// The device-buffer ops: (is_send, peer, dtype, buffer).
    dev: Vec<(bool, usize, DType, DevRef<'b>)>,
    n: usize,
    /// The first buffer it refused (an array that is not contiguous), raised when `f`
    /// returns.
    err: Option<crate::buffer::Strided>,
}

enum BatchOp<'b> {
    Send { dst: usize, tag: u32, dtype: DType, data: &'b [u8] },
    Recv { src: usize, tag: u32, dtype: DType, buf: &'b mut [u8] },
}

impl BatchOp<'_> {
    fn peer(&self) -> &usize {
        match self {
            BatchOp::Send { dst, .. } => dst,
            BatchOp::Recv { src, .. } => src,
        }
    }
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
    pub fn send<T: Element, B: Buf<T> + ?Sized>(&mut self, dst: usize, tag: Tag<T>, buf: &'b B) {
        match buf.view() {
            View::Host(b) => self.ops.push(BatchOp::Send { dst, tag: tag.id(), dtype: T::DTYPE, data: bytes(b) }),
            View::Device(d) => self.dev.push((true, dst, T::DTYPE, d)),
            View::Strided(s) => {
                self.err.get_or_insert(s);
            }
        }
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
    pub fn recv<T: Element, B: BufMut<T> + ?Sized>(&mut self, src: usize, tag: Tag<T>, buf: &'b mut B) {
        match buf.view_mut() {
            ViewMut::Host(b) => self.ops.push(BatchOp::Recv { src, tag: tag.id(), dtype: T::DTYPE, buf: bytes_mut(b) }),
            ViewMut::Device(d) => self.dev.push((false, src, T::DTYPE, d)),
            ViewMut::Strided(s) => {
                self.err.get_or_insert(s);
            }
        }
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

/// What a receive from any source got: the sender (a rank of the communicator) and how
/// many elements its message held (MPI's `MPI_Status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Status {
    /// The rank that sent the message, in the communicator's numbering.
    pub source: usize,
    /// Elements received (at most the buffer's length).
    pub count: usize,
}

/// A receive from any source in flight ([`Comm::irecv_any`]): its buffer is borrowed
/// until [`wait`](Self::wait) gives the [`Status`]. Dropping it waits (errors dropped).
#[must_use = "a receive completes when it is waited on"]
pub struct RecvAny<'a> {
    inner: &'a crate::comm::Inner,
    id: Option<crate::backend::ReqId>,
    dtype: DType,
    buf: &'a mut [u8],
    site: Site,
}

impl RecvAny<'_> {
    /// Waits for the message (bounded by the communicator's deadline).
    #[track_caller]
    pub fn wait(mut self) -> Result<Status> {
        let slot =
            crate::verify::recorder::start(self.inner.rec, false, "irecv_any.wait", std::panic::Location::caller());
        let r = self.finish();
        if r.is_ok() {
            crate::verify::recorder::done(slot);
        }
        r.map_err(Error::with_callers)
    }

    fn finish(&mut self) -> Result<Status> {
        let id = self.id.take().ok_or_else(|| Error::invalid("wait", "this receive was already waited on"))?;
        let (source, bytes) = self.inner.backend.wait_recv_any(self.site, id, self.dtype, self.buf)?;
        Ok(Status { source, count: bytes / self.dtype.size() })
    }

    /// Whether the message is here, without blocking: `Some(status)` once it is (then
    /// the receive is over; a later `test` or `wait` is an error), else `None`.
    pub fn test(&mut self) -> Result<Option<Status>> {
        let id = self.id.ok_or_else(|| Error::invalid("test", "this receive was already completed"))?;
        let got = self.inner.backend.test_recv_any(self.site, id, self.dtype, self.buf);
        if !matches!(got, Ok(None)) {
            self.id = None;
        }
        Ok(got?.map(|(source, bytes)| Status { source, count: bytes / self.dtype.size() }))
    }

    /// Waits at most `timeout`: `Some(status)` if the message came, `None` if not yet
    /// (the receive stays posted).
    pub fn wait_timeout(&mut self, timeout: std::time::Duration) -> Result<Option<Status>> {
        let until = std::time::Instant::now() + timeout;
        let mut pause = crate::comm::request::Pause::default();
        loop {
            if let Some(st) = self.test()? {
                return Ok(Some(st));
            }
            if std::time::Instant::now() >= until {
                return Ok(None);
            }
            pause.next(until);
        }
    }
}

impl Drop for RecvAny<'_> {
    fn drop(&mut self) {
        if self.id.is_some() {
            let _ = self.finish();
        }
    }
}
