//! The device side of a communicator (feature `nccl`): the same ops on device buffers,
//! through the communicator's NCCL backend, each one built as an `Op` and compared
//! across ranks like a host op, each wait bounded by `DIST_TIMEOUT`.

use crate::backend::nccl::{fail, ok, DevPtr, NcclComm};
use crate::comm::Comm;
use crate::dtype::DType;
use crate::error::{Error, Result, Site};
use crate::group::Group;
use crate::op::{Op, OpKind};
use crate::reduce_op::ReduceOp;
use crate::tag::Tag;
use cudarc::driver::{CudaEvent, CudaStream, DevicePtr, DevicePtrMut};
use cudarc::nccl::safe::NcclType;
use cudarc::nccl::{result, sys};
use std::ffi::c_void;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A device op in flight: a CUDA event recorded on the communicator's stream after it,
/// and what to say if it never completes.
#[must_use = "a device op completes on the GPU; wait() or stream_wait() before using its buffers"]
pub struct DeviceRequest {
    event: CudaEvent,
    op: &'static str,
    site: Site,
    comm: String,
    timeout: Duration,
    broken: Arc<std::sync::atomic::AtomicBool>,
}

impl DeviceRequest {
    /// Blocks the host until the op has completed on the GPU, or fails with
    /// `Error::Timeout` naming the op, its call site and the communicator once
    /// `DIST_TIMEOUT` has passed (NCCL waits for every member to make the matching call:
    /// a rank that never does hangs the kernel, which this turns into an error).
    pub fn wait(self) -> Result<()> {
        let start = Instant::now();
        let mut nap = Duration::from_micros(1);
        loop {
            if self.event.try_is_complete().map_err(|e| fail("cuEventQuery", e))? {
                return Ok(());
            }
            if start.elapsed() >= self.timeout {
                self.broken.store(true, std::sync::atomic::Ordering::SeqCst);
                return Err(Error::Timeout {
                    op: self.op,
                    comm: self.comm.clone(),
                    waiting_for: format!(
                        "the GPU to finish {} (an NCCL collective completes only once every member of {} has made \
                         the matching call: one that never does hangs it)",
                        self.op, self.comm
                    ),
                    secs: self.timeout.as_secs_f64(),
                    site: self.site,
                });
            }
            // Spin for the first microseconds (short ops), then back off to 200 µs.
            if start.elapsed() > Duration::from_micros(50) {
                std::thread::sleep(nap);
                nap = (nap * 2).min(Duration::from_micros(200));
            } else {
                std::hint::spin_loop();
            }
        }
    }
    /// Makes `stream` wait (on the GPU) for the op, without blocking the host.
    pub fn stream_wait(&self, stream: &CudaStream) -> Result<()> {
        stream.wait(&self.event).map_err(|e| fail("cuStreamWaitEvent", e))
    }
    /// The event, for other CUDA calls.
    pub fn event(&self) -> &CudaEvent {
        &self.event
    }
}

/// dist's element type of an NCCL data type (for op records and messages).
fn dtype_of(t: sys::ncclDataType_t) -> Option<DType> {
    use sys::ncclDataType_t::*;
    Some(match t {
        ncclInt8 => DType::I8,
        ncclUint8 => DType::U8,
        ncclInt32 => DType::I32,
        ncclUint32 => DType::U32,
        ncclInt64 => DType::I64,
        ncclUint64 => DType::U64,
        ncclFloat16 => DType::F16,
        ncclBfloat16 => DType::BF16,
        ncclFloat32 => DType::F32,
        ncclFloat64 => DType::F64,
        _ => return None,
    })
}

/// The device side of a [`Comm`]: the same ops, on device buffers, through NCCL.
pub struct DeviceComm<'c, G: Group> {
    comm: &'c Comm<G>,
    nccl: &'c NcclComm,
}

impl<G: Group> Comm<G> {
    /// This communicator's NCCL side; an error unless the job runs the NCCL backend.
    pub fn device(&self) -> Result<DeviceComm<'_, G>> {
        match self.inner.nccl.as_deref() {
            Some(nccl) => Ok(DeviceComm { comm: self, nccl }),
            None => Err(Error::backend(
                "nccl",
                format!(
                    "{} has no NCCL communicator: start the job with DIST_BACKEND=nccl (or auto, on a machine \
                     with a GPU) to use device buffers",
                    self.name()
                ),
            )),
        }
    }
}

fn red_op(op: ReduceOp) -> Option<sys::ncclRedOp_t> {
    Some(match op {
        ReduceOp::Sum => sys::ncclRedOp_t::ncclSum,
        ReduceOp::Prod => sys::ncclRedOp_t::ncclProd,
        ReduceOp::Max => sys::ncclRedOp_t::ncclMax,
        ReduceOp::Min => sys::ncclRedOp_t::ncclMin,
        ReduceOp::Avg => sys::ncclRedOp_t::ncclAvg,
        ReduceOp::PreMulSum(_) => return None,
    })
}

fn is_float(t: sys::ncclDataType_t) -> bool {
    use sys::ncclDataType_t::*;
    matches!(t, ncclFloat16 | ncclFloat32 | ncclFloat64 | ncclBfloat16)
}

impl<'c, G: Group> DeviceComm<'c, G> {
    /// The stream every op of this communicator is enqueued on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.nccl.stream
    }
    /// This rank in the communicator.
    pub fn rank(&self) -> usize {
        self.nccl.rank
    }
    /// Ranks in the communicator.
    pub fn size(&self) -> usize {
        self.nccl.size
    }

    fn check_rank(&self, op: &'static str, what: &str, r: usize) -> Result<()> {
        if r >= self.size() {
            return Err(Error::invalid(
                op,
                format!("{what} {r} is out of range for {} of size {}", self.comm.name(), self.size()),
            ));
        }
        Ok(())
    }

    fn check_len(op: &'static str, what: &str, got: usize, want: usize) -> Result<()> {
        if got != want {
            return Err(Error::invalid(op, format!("{what} has {got} elements but must have {want}")));
        }
        Ok(())
    }

    /// The `Op` of a device collective, compared across ranks through the host backend
    /// under `DIST_DEBUG=check` (as every host op is) before anything is enqueued: a
    /// mismatch is `Error::Mismatch` naming both call sites, not a hung kernel.
    #[track_caller]
    fn verified<T: NcclType>(
        &self,
        kind: OpKind,
        name: &'static str,
        count: usize,
        root: Option<usize>,
        reduce: Option<ReduceOp>,
    ) -> Result<Op> {
        let mut op = Op::new(kind).named(name).count(count);
        if let Some(d) = dtype_of(T::as_nccl_type()) {
            op = op.dtype(d);
        }
        if let Some(r) = root {
            op = op.root(r);
        }
        if let Some(r) = reduce {
            op = op.reduce(r);
        }
        if self.comm.inner.check {
            crate::comm::exchange(&self.comm.inner, &op)?;
        }
        Ok(op)
    }

    /// Runs `f` under the communicator's lock, then records the completion event.
    fn enqueue(&self, op: &'static str, site: Site, f: impl FnOnce(&NcclComm) -> Result<()>) -> Result<DeviceRequest> {
        let _g = self.nccl.lock.lock().unwrap_or_else(|p| p.into_inner());
        if self.nccl.broken.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(Error::backend(
                "nccl",
                format!(
                    "{op} on {}: an earlier op of this communicator timed out, so it was aborted",
                    self.comm.name()
                ),
            ));
        }
        self.nccl.stream.context().bind_to_thread().map_err(|e| fail("binding the CUDA context", e))?;
        f(self.nccl)?;
        let event =
            self.nccl.stream.record_event(None).map_err(|e| fail(&format!("recording an event after {op}"), e))?;
        Ok(DeviceRequest {
            event,
            op,
            site,
            comm: self.comm.name().to_string(),
            timeout: self.nccl.timeout,
            broken: self.nccl.broken.clone(),
        })
    }

    /// With `op` as NCCL's reduction (creating a PreMulSum op for the call if needed).
    fn with_op<T: NcclType>(
        &self,
        name: &'static str,
        op: ReduceOp,
        f: impl FnOnce(sys::ncclRedOp_t) -> Result<()>,
    ) -> Result<()> {
        let dt = T::as_nccl_type();
        if matches!(op, ReduceOp::Avg | ReduceOp::PreMulSum(_)) && !is_float(dt) {
            return Err(Error::invalid(name, format!("{op:?} needs a floating-point element type, not {dt:?}")));
        }
        if let Some(o) = red_op(op) {
            return f(o);
        }
        let ReduceOp::PreMulSum(s) = op else { unreachable!("only PreMulSum has no direct op") };
        // The scalar in the element type, passed by host pointer (ncclScalarHostImmediate).
        let mut bytes = [0u8; 8];
        match dt {
            sys::ncclDataType_t::ncclFloat32 => bytes[..4].copy_from_slice(&(s as f32).to_ne_bytes()),
            sys::ncclDataType_t::ncclFloat64 => bytes.copy_from_slice(&s.to_ne_bytes()),
            sys::ncclDataType_t::ncclFloat16 => bytes[..2].copy_from_slice(&half::f16::from_f64(s).to_ne_bytes()),
            _ => bytes[..2].copy_from_slice(&half::bf16::from_f64(s).to_ne_bytes()),
        }
        let mut o = std::mem::MaybeUninit::uninit();
        // SAFETY: valid comm, scalar pointer valid for the call (host-immediate).
        let o = unsafe {
            result::reduce_op_create_pre_mul_sum(
                o.as_mut_ptr(),
                bytes.as_mut_ptr() as *mut c_void,
                dt,
                sys::ncclScalarResidence_t::ncclScalarHostImmediate,
                self.nccl.comm,
            )
            .map_err(|e| fail("ncclRedOpCreatePreMulSum", e))?;
            o.assume_init()
        };
        let r = f(o);
        // SAFETY: the op was created on this comm and the call using it is enqueued.
        unsafe {
            let _ = result::reduce_op_destroy(o, self.nccl.comm);
        }
        r
    }

    /// All-reduce in place.
    #[track_caller]
    pub fn all_reduce<T: NcclType, B: DevicePtrMut<T>>(&self, buf: &mut B, op: ReduceOp) -> Result<DeviceRequest> {
        let n = buf.len();
        let o = self.verified::<T>(OpKind::AllReduce, "all_reduce", n, None, Some(op))?;
        self.all_reduce_verified(buf, op, &o)
    }

    fn all_reduce_verified<T: NcclType, B: DevicePtrMut<T>>(
        &self,
        buf: &mut B,
        op: ReduceOp,
        o: &Op,
    ) -> Result<DeviceRequest> {
        let n = buf.len();
        self.enqueue(o.name, o.site, |c| {
            let (p, _sync) = buf.device_ptr_mut(&c.stream);
            self.with_op::<T>("all_reduce", op, |o| {
                // SAFETY: `p` is a device buffer of `n` elements on this comm's device.
                ok(
                    unsafe {
                        result::all_reduce(
                            p as *const c_void,
                            p as *mut c_void,
                            n,
                            T::as_nccl_type(),
                            o,
                            c.comm,
                            c.cu(),
                        )
                    },
                    "ncclAllReduce",
                )
            })
        })
    }

    /// Reduce in place to `root` (other ranks' buffers are unchanged).
    #[track_caller]
    pub fn reduce<T: NcclType, B: DevicePtrMut<T>>(
        &self,
        buf: &mut B,
        op: ReduceOp,
        root: usize,
    ) -> Result<DeviceRequest> {
        self.check_rank("reduce", "root", root)?;
        let n = buf.len();
        let o = self.verified::<T>(OpKind::Reduce, "reduce", n, Some(root), Some(op))?;
        self.enqueue(o.name, o.site, |c| {
            let (p, _sync) = buf.device_ptr_mut(&c.stream);
            self.with_op::<T>("reduce", op, |o| {
                // SAFETY: as in all_reduce; NCCL writes only on the root.
                ok(
                    unsafe {
                        result::reduce(
                            p as *const c_void,
                            p as *mut c_void,
                            n,
                            T::as_nccl_type(),
                            o,
                            root as i32,
                            c.comm,
                            c.cu(),
                        )
                    },
                    "ncclReduce",
                )
            })
        })
    }

    /// Broadcast in place from `root`.
    #[track_caller]
    pub fn broadcast<T: NcclType, B: DevicePtrMut<T>>(&self, buf: &mut B, root: usize) -> Result<DeviceRequest> {
        self.check_rank("broadcast", "root", root)?;
        let n = buf.len();
        let o = self.verified::<T>(OpKind::Broadcast, "broadcast", n, Some(root), None)?;
        self.enqueue(o.name, o.site, |c| {
            let (p, _sync) = buf.device_ptr_mut(&c.stream);
            // SAFETY: a device buffer of `n` elements.
            ok(
                unsafe {
                    result::broadcast(
                        p as *const c_void,
                        p as *mut c_void,
                        n,
                        T::as_nccl_type(),
                        root as i32,
                        c.comm,
                        c.cu(),
                    )
                },
                "ncclBroadcast",
            )
        })
    }

    /// Every rank's `send` concatenated in rank order into `recv` (`size × send.len()`).
    #[track_caller]
    pub fn all_gather<T: NcclType, S: DevicePtr<T>, R: DevicePtrMut<T>>(
        &self,
        send: &S,
        recv: &mut R,
    ) -> Result<DeviceRequest> {
        Self::check_len("all_gather", "recv", recv.len(), self.size() * send.len())?;
        let n = send.len();
        let o = self.verified::<T>(OpKind::AllGather, "all_gather", n, None, None)?;
        self.enqueue(o.name, o.site, |c| {
            let (s, _a) = send.device_ptr(&c.stream);
            let (r, _b) = recv.device_ptr_mut(&c.stream);
            // SAFETY: lengths checked above.
            ok(
                unsafe {
                    result::all_gather(s as *const c_void, r as *mut c_void, n, T::as_nccl_type(), c.comm, c.cu())
                },
                "ncclAllGather",
            )
        })
    }

    /// Block j of `send` (`size × recv.len()`) reduced over ranks lands in rank j's `recv`.
    #[track_caller]
    pub fn reduce_scatter<T: NcclType, S: DevicePtr<T>, R: DevicePtrMut<T>>(
        &self,
        send: &S,
        recv: &mut R,
        op: ReduceOp,
    ) -> Result<DeviceRequest> {
        Self::check_len("reduce_scatter", "send", send.len(), self.size() * recv.len())?;
        let n = recv.len();
        let o = self.verified::<T>(OpKind::ReduceScatter, "reduce_scatter", n, None, Some(op))?;
        self.enqueue(o.name, o.site, |c| {
            let (s, _a) = send.device_ptr(&c.stream);
            let (r, _b) = recv.device_ptr_mut(&c.stream);
            self.with_op::<T>("reduce_scatter", op, |o| {
                // SAFETY: lengths checked above.
                ok(
                    unsafe {
                        result::reduce_scatter(
                            s as *const c_void,
                            r as *mut c_void,
                            n,
                            T::as_nccl_type(),
                            o,
                            c.comm,
                            c.cu(),
                        )
                    },
                    "ncclReduceScatter",
                )
            })
        })
    }

    /// Grouped sends and receives of `count`-element blocks at element offsets.
    /// `sends`/`recvs`: (peer, offset) pairs.
    fn grouped<T: NcclType>(
        c: &NcclComm,
        send: Option<DevPtr>,
        recv: Option<DevPtr>,
        count: usize,
        sends: &[(usize, usize)],
        recvs: &[(usize, usize)],
    ) -> Result<()> {
        let es = std::mem::size_of::<T>() as u64;
        NcclComm::group(|| {
            for &(peer, off) in sends {
                let p = send.expect("sends need a send buffer") + off as u64 * es;
                // SAFETY: offsets and counts are within the checked buffer lengths.
                unsafe { c.post_send::<T>(p, count, peer)? };
            }
            for &(peer, off) in recvs {
                let p = recv.expect("recvs need a recv buffer") + off as u64 * es;
                // SAFETY: as above.
                unsafe { c.post_recv::<T>(p, count, peer)? };
            }
            Ok(())
        })
    }

    /// All-to-all: block j of `send` goes to rank j; block i of `recv` comes from rank i
    /// (grouped send/recv, as NCCL has no all-to-all of its own).
    #[track_caller]
    pub fn all_to_all<T: NcclType, S: DevicePtr<T>, R: DevicePtrMut<T>>(
        &self,
        send: &S,
        recv: &mut R,
    ) -> Result<DeviceRequest> {
        let n = self.size();
        Self::check_len("all_to_all", "recv", recv.len(), send.len())?;
        if send.len() % n != 0 {
            return Err(Error::invalid(
                "all_to_all",
                format!("send has {} elements, not a multiple of {n} ranks", send.len()),
            ));
        }
        let k = send.len() / n;
        let o = self.verified::<T>(OpKind::AllToAll, "all_to_all", send.len(), None, None)?;
        self.enqueue(o.name, o.site, |c| {
            let (s, _a) = send.device_ptr(&c.stream);
            let (r, _b) = recv.device_ptr_mut(&c.stream);
            let blocks: Vec<(usize, usize)> = (0..n).map(|j| (j, j * k)).collect();
            Self::grouped::<T>(c, Some(s), Some(r), k, &blocks, &blocks)
        })
    }

    /// Gather every rank's `send` into `recv` on `root` (`Some` exactly there).
    #[track_caller]
    pub fn gather<T: NcclType, S: DevicePtr<T>, R: DevicePtrMut<T>>(
        &self,
        send: &S,
        recv: Option<&mut R>,
        root: usize,
    ) -> Result<DeviceRequest> {
        self.check_rank("gather", "root", root)?;
        let (n, k, me) = (self.size(), send.len(), self.rank());
        match (&recv, me == root) {
            (Some(r), true) => Self::check_len("gather", "recv", r.len(), n * k)?,
            (None, true) => return Err(Error::invalid("gather", "the root must pass Some(recv)")),
            (Some(_), false) => return Err(Error::invalid("gather", "only the root passes a recv buffer")),
            (None, false) => {}
        }
        let o = self.verified::<T>(OpKind::Gather, "gather", k, Some(root), None)?;
        self.enqueue(o.name, o.site, |c| {
            let (s, _a) = send.device_ptr(&c.stream);
            match recv {
                Some(r) => {
                    let (rp, _b) = r.device_ptr_mut(&c.stream);
                    let from: Vec<(usize, usize)> = (0..n).map(|j| (j, j * k)).collect();
                    Self::grouped::<T>(c, Some(s), Some(rp), k, &[(root, 0)], &from)
                }
                None => Self::grouped::<T>(c, Some(s), None, k, &[(root, 0)], &[]),
            }
        })
    }

    /// Scatter `send` (`Some` on `root`, `size × recv.len()`) so rank j gets block j.
    #[track_caller]
    pub fn scatter<T: NcclType, S: DevicePtr<T>, R: DevicePtrMut<T>>(
        &self,
        send: Option<&S>,
        recv: &mut R,
        root: usize,
    ) -> Result<DeviceRequest> {
        self.check_rank("scatter", "root", root)?;
        let (n, k, me) = (self.size(), recv.len(), self.rank());
        match (&send, me == root) {
            (Some(s), true) => Self::check_len("scatter", "send", s.len(), n * k)?,
            (None, true) => return Err(Error::invalid("scatter", "the root must pass Some(send)")),
            (Some(_), false) => return Err(Error::invalid("scatter", "only the root passes a send buffer")),
            (None, false) => {}
        }
        let o = self.verified::<T>(OpKind::Scatter, "scatter", k, Some(root), None)?;
        self.enqueue(o.name, o.site, |c| {
            let (r, _b) = recv.device_ptr_mut(&c.stream);
            match send {
                Some(s) => {
                    let (sp, _a) = s.device_ptr(&c.stream);
                    let to: Vec<(usize, usize)> = (0..n).map(|j| (j, j * k)).collect();
                    Self::grouped::<T>(c, Some(sp), Some(r), k, &to, &[(root, 0)])
                }
                None => Self::grouped::<T>(c, None, Some(r), k, &[], &[(root, 0)]),
            }
        })
    }

    /// Sends `buf` to `dst`. NCCL has no tags: messages between two ranks match in
    /// order; the typed tag still ties the element type, as on the host.
    #[track_caller]
    pub fn send<T: NcclType, S: DevicePtr<T>>(&self, dst: usize, _tag: Tag<T>, buf: &S) -> Result<DeviceRequest> {
        self.check_rank("send", "destination", dst)?;
        self.enqueue("send", Site::caller(), |c| {
            let (p, _a) = buf.device_ptr(&c.stream);
            // SAFETY: a device buffer of `buf.len()` elements.
            unsafe { c.post_send::<T>(p, buf.len(), dst) }
        })
    }

    /// Receives into `buf` from `src`.
    #[track_caller]
    pub fn recv<T: NcclType, R: DevicePtrMut<T>>(
        &self,
        src: usize,
        _tag: Tag<T>,
        buf: &mut R,
    ) -> Result<DeviceRequest> {
        self.check_rank("recv", "source", src)?;
        let n = buf.len();
        self.enqueue("recv", Site::caller(), |c| {
            let (p, _a) = buf.device_ptr_mut(&c.stream);
            // SAFETY: a device buffer of `n` elements.
            unsafe { c.post_recv::<T>(p, n, src) }
        })
    }

    /// Posts every send and receive of `f` in one NCCL group (batch_isend_irecv).
    #[track_caller]
    pub fn batch<'b>(&self, f: impl FnOnce(&mut DeviceBatch<'b>)) -> Result<DeviceRequest> {
        let mut b = DeviceBatch { ops: Vec::new(), size: self.size(), err: None };
        f(&mut b);
        if let Some(e) = b.err {
            return Err(e);
        }
        self.enqueue("batch", Site::caller(), |c| NcclComm::group(|| b.ops.iter_mut().try_for_each(|post| post(c))))
    }

    /// Blocks until every rank has reached it (a one-element all_reduce, then a sync).
    #[track_caller]
    pub fn barrier(&self) -> Result<()> {
        let o = self.verified::<f32>(OpKind::Barrier, "barrier", 0, None, None)?;
        let mut one = self.nccl.stream.alloc_zeros::<f32>(1).map_err(|e| fail("allocating the barrier word", e))?;
        self.all_reduce_verified(&mut one, ReduceOp::Sum, &o)?.wait()
    }
}

/// Enqueues one grouped p2p op on a communicator.
type PostFn<'b> = Box<dyn FnMut(&NcclComm) -> Result<()> + 'b>;

/// The sends and receives of one [`DeviceComm::batch`].
pub struct DeviceBatch<'b> {
    ops: Vec<PostFn<'b>>,
    size: usize,
    err: Option<Error>,
}

impl<'b> DeviceBatch<'b> {
    fn peer_ok(&mut self, op: &'static str, p: usize) -> bool {
        if p >= self.size {
            self.err.get_or_insert(Error::invalid(op, format!("peer {p} is out of range for {} ranks", self.size)));
            return false;
        }
        true
    }
    /// Adds a send of `buf` to `dst`.
    pub fn send<T: NcclType, S: DevicePtr<T>>(&mut self, dst: usize, _tag: Tag<T>, buf: &'b S) {
        if self.peer_ok("batch send", dst) {
            self.ops.push(Box::new(move |c: &NcclComm| {
                let (p, _a) = buf.device_ptr(&c.stream);
                // SAFETY: a device buffer of `buf.len()` elements.
                unsafe { c.post_send::<T>(p, buf.len(), dst) }
            }));
        }
    }
    /// Adds a receive into `buf` from `src`.
    pub fn recv<T: NcclType, R: DevicePtrMut<T>>(&mut self, src: usize, _tag: Tag<T>, buf: &'b mut R) {
        if self.peer_ok("batch recv", src) {
            self.ops.push(Box::new(move |c: &NcclComm| {
                let n = buf.len();
                let (p, _a) = buf.device_ptr_mut(&c.stream);
                // SAFETY: a device buffer of `n` elements.
                unsafe { c.post_recv::<T>(p, n, src) }
            }));
        }
    }
}
