//! `Device` for `NcclComm`: each op's shape as NCCL calls on the communicator's stream,
//! and the completion as a CUDA event recorded after it. Arguments arrive checked by the
//! typed layer (`comm/device.rs`), which also compares the `Op` across ranks first.

use super::types::{nccl_size, nccl_type};
use super::{fail, ok, NcclComm};
use crate::backend::shape::DevP2p;
use crate::backend::{Completion, DevBufs, DevPtr, Device};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::op::{Op, OpKind};
use crate::reduce_op::ReduceOp;
use cudarc::driver::{CudaEvent, CudaStream, DevicePtr, DevicePtrMut, DeviceSlice, SyncOnDrop};
use cudarc::nccl::{result, sys};
use std::ffi::c_void;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

/// A device buffer an op reads: its address on `stream`, and cudarc's record that makes
/// the buffer's next user wait for this op (keep it until the op is enqueued).
pub(crate) trait CudaRead {
    fn read_ptr<'x>(&'x self, stream: &'x CudaStream) -> (u64, SyncOnDrop<'x>);
    /// The GPU the buffer was allocated on.
    fn ordinal(&self) -> usize;
    /// An error unless the buffer is on the GPU of `stream`.
    fn check_device(&self, stream: &CudaStream, op: &'static str) -> Result<()> {
        let (mine, theirs) = (self.ordinal(), stream.context().ordinal());
        if mine != theirs {
            return Err(Error::invalid(
                op,
                format!("the buffer is on GPU {mine}, but this communicator's NCCL side runs on GPU {theirs}"),
            ));
        }
        Ok(())
    }
}

/// A device buffer an op writes (see [`CudaRead`]).
pub(crate) trait CudaWrite: CudaRead {
    fn write_ptr<'x>(&'x mut self, stream: &'x CudaStream) -> (u64, SyncOnDrop<'x>);
}

macro_rules! cuda_read {
    ($(impl[$($g:tt)*] $t:ty;)*) => {$(
        impl<$($g)*> CudaRead for $t {
            fn read_ptr<'x>(&'x self, stream: &'x CudaStream) -> (u64, SyncOnDrop<'x>) {
                DevicePtr::<T>::device_ptr(self, stream)
            }
            fn ordinal(&self) -> usize {
                DeviceSlice::<T>::stream(self).context().ordinal()
            }
        }
    )*};
}
cuda_read! {
    impl[T] cudarc::driver::CudaSlice<T>;
    impl['a, T] cudarc::driver::CudaView<'a, T>;
    impl['a, T] cudarc::driver::CudaViewMut<'a, T>;
}

impl<T> CudaWrite for cudarc::driver::CudaSlice<T> {
    fn write_ptr<'x>(&'x mut self, stream: &'x CudaStream) -> (u64, SyncOnDrop<'x>) {
        DevicePtrMut::<T>::device_ptr_mut(self, stream)
    }
}
impl<T> CudaWrite for cudarc::driver::CudaViewMut<'_, T> {
    fn write_ptr<'x>(&'x mut self, stream: &'x CudaStream) -> (u64, SyncOnDrop<'x>) {
        DevicePtrMut::<T>::device_ptr_mut(self, stream)
    }
}

/// The completion of an NCCL op: the event recorded after it on the stream.
struct Event(CudaEvent);

// SAFETY: a CUDA event handle may be queried from any thread (cudarc's `CudaEvent` is
// `Send`; `Sync` is sound because every method used takes `&self` and calls the
// thread-safe driver API).
unsafe impl Sync for Event {}

impl Completion for Event {
    fn done(&self) -> Result<bool> {
        self.0.try_is_complete().map_err(|e| fail("cuEventQuery", e))
    }
    fn event(&self) -> Option<&CudaEvent> {
        Some(&self.0)
    }
}

fn red_op(op: ReduceOp) -> Option<sys::ncclRedOp_t> {
    Some(match op {
        ReduceOp::Sum => sys::ncclRedOp_t::ncclSum,
        ReduceOp::Prod => sys::ncclRedOp_t::ncclProd,
        ReduceOp::Max => sys::ncclRedOp_t::ncclMax,
        ReduceOp::Min => sys::ncclRedOp_t::ncclMin,
        ReduceOp::Avg => sys::ncclRedOp_t::ncclAvg,
        ReduceOp::PreMulSum(_) | ReduceOp::BAnd | ReduceOp::BOr | ReduceOp::BXor | ReduceOp::User(_) => return None,
    })
}

/// How NCCL carries a gather, scatter or all-to-all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    /// NCCL's own call (`ncclGather`, `ncclScatter`, `ncclAlltoAll`: NCCL 2.28+), of
    /// this many bytes per rank.
    Native(usize),
    /// One group of sends and receives, one per peer's block.
    Grouped,
}

/// The route of `op` on a communicator whose ranks all have NCCL's own calls (`native`).
/// NCCL's calls move one block size, so a `_v` form takes them only when its counts are
/// one size; the choice rests on what every rank holds alike (the even forms' shape; a
/// gather_v's or scatter_v's counts, the same on every rank and compared by the
/// agreement check), never on one rank's own counts: an all_to_all_v, whose counts
/// differ by rank, is always grouped, or one rank's NCCL call would meet another's sends.
fn route(native: bool, op: &Op, bufs: &DevBufs) -> Route {
    let one = |c: &[usize]| c.first().copied().filter(|&b| c.iter().all(|&x| x == b));
    let bytes = match bufs {
        _ if !native => None,
        DevBufs::Gather { counts, .. } if op.kind == OpKind::Gather => one(counts),
        DevBufs::Scatter { counts, .. } if op.kind == OpKind::Scatter => one(counts),
        DevBufs::AllToAll { send_counts, recv_counts, .. } if op.kind == OpKind::AllToAll && !op.varying => {
            one(send_counts).filter(|&b| one(recv_counts) == Some(b))
        }
        _ => None,
    };
    bytes.map_or(Route::Grouped, Route::Native)
}

impl NcclComm {
    /// Waits, until `until` at most, for NCCL to have carried out what was just called on
    /// this non-blocking communicator (see `comm.rs`). Past the deadline, or on NCCL's
    /// error, the communicator is aborted at once (so NCCL enqueues nothing after the
    /// caller has released the op's buffers) and refuses every later op; a timeout is
    /// `Error::Timeout` naming `cx` (its communicator is filled in by the typed layer).
    pub(crate) fn settle(&self, cx: &Op, until: Instant) -> Result<()> {
        match super::comm::ready(self.comm, until, cx.name) {
            Ok(true) => Ok(()),
            Err(e) => {
                self.abort_now();
                Err(e)
            }
            Ok(false) => {
                self.abort_now();
                Err(Error::Timeout {
                    op: cx.name,
                    comm: String::new(),
                    waiting_for: format!(
                        "NCCL to connect {} to its peers (NCCL connects two ranks at the first send or receive \
                         between them, and waits for the peer to make its matching call: one that never does \
                         hangs it); the communicator's device side is aborted",
                        cx.name
                    ),
                    secs: self.timeout.as_secs_f64(),
                    site: cx.site,
                })
            }
        }
    }

    /// Runs `f` with `op` as NCCL's reduction (creating a PreMulSum op for the call, and
    /// destroying it once NCCL has taken the call: `settle`d by `until`).
    fn with_op(
        &self,
        cx: &Op,
        until: Instant,
        dt: DType,
        op: ReduceOp,
        f: impl FnOnce(sys::ncclRedOp_t) -> Result<()>,
    ) -> Result<()> {
        // bool as bytes 0/1: a logical or is their max, a logical and their min (as torch
        // maps them for NCCL).
        let op = match (dt, op.on_bool()) {
            (DType::Bool, ReduceOp::BOr) => ReduceOp::Max,
            (DType::Bool, ReduceOp::BAnd) => ReduceOp::Min,
            _ => op,
        };
        if let Some(o) = red_op(op) {
            return f(o);
        }
        if let ReduceOp::User(u) = op {
            return Err(Error::backend(
                "nccl",
                format!(
                    "the user reduction {:?} runs on the host: NCCL reduces device buffers with its own ops only; \
                     reduce a host copy (shm, MPI) or use Sum/Prod/Max/Min/Avg",
                    u.name()
                ),
            ));
        }
        let ReduceOp::PreMulSum(s) = op else {
            return Err(Error::backend(
                "nccl",
                format!(
                    "NCCL has no bitwise reduction (ReduceOp::{op:?}); reduce these values on host buffers (shm, MPI) \
                     or express them as Max/Min on 0/1 values"
                ),
            ));
        };
        // The scalar in the element type, passed by host pointer (ncclScalarHostImmediate);
        // `validate` has refused non-float types.
        let mut bytes = [0u8; 8];
        match dt {
            DType::F32 => bytes[..4].copy_from_slice(&(s as f32).to_ne_bytes()),
            DType::F64 => bytes.copy_from_slice(&s.to_ne_bytes()),
            DType::F16 => bytes[..2].copy_from_slice(&half::f16::from_f64(s).to_ne_bytes()),
            _ => bytes[..2].copy_from_slice(&half::bf16::from_f64(s).to_ne_bytes()),
        }
        let mut o = std::mem::MaybeUninit::uninit();
        // SAFETY: valid comm, scalar pointer valid for the call (host-immediate).
        let o = unsafe {
            result::reduce_op_create_pre_mul_sum(
                o.as_mut_ptr(),
                bytes.as_mut_ptr() as *mut c_void,
                nccl_type(dt),
                sys::ncclScalarResidence_t::ncclScalarHostImmediate,
                self.comm,
            )
            .map_err(|e| fail("ncclRedOpCreatePreMulSum", e))?;
            o.assume_init()
        };
        let r = f(o).and_then(|()| self.settle(cx, until));
        // An aborted communicator is not called again (its op goes with it).
        if !self.aborted.load(Ordering::SeqCst) {
            // SAFETY: the op was created on this comm, and the call using it has been
            // taken (or failed without leaving the communicator in progress).
            unsafe {
                let _ = result::reduce_op_destroy(o, self.comm);
            }
        }
        r
    }

    /// Posts `p2p` as one NCCL group.
    fn grouped(&self, p2p: &[DevP2p]) -> Result<()> {
        NcclComm::group(|| {
            for q in p2p {
                let n = q.buf.bytes / nccl_size(q.dtype);
                // SAFETY: the typed layer resolved `buf` on this comm's device with its length.
                unsafe {
                    if q.send {
                        self.post_send(q.buf.addr, n, q.dtype, q.peer)?
                    } else {
                        self.post_recv(q.buf.addr, n, q.dtype, q.peer)?
                    }
                }
            }
            Ok(())
        })
    }

    /// Block `j` of `counts` (bytes) starting at `base`: the grouped send or receive of
    /// one peer in gather, scatter and all-to-all where NCCL's own calls do not serve
    /// ([`route`]).
    fn blocks(send: bool, dtype: DType, base: DevPtr, counts: &[usize]) -> impl Iterator<Item = DevP2p> + '_ {
        counts.iter().enumerate().scan(0usize, move |off, (peer, &c)| {
            let buf = DevPtr { addr: base.addr + *off as u64, bytes: c };
            *off += c;
            Some(DevP2p { send, peer, dtype, buf })
        })
    }

    /// Enqueues `op` on the communicator's stream. (Long as one `match` over the op's
    /// kind and buffer shape, one NCCL call per arm, after the refusals NCCL needs.)
    fn launch(&self, op: &Op, dt: DType, bufs: DevBufs, until: Instant) -> Result<()> {
        let (t, es) = (nccl_type(dt), nccl_size(dt));
        let (comm, cu) = (self.comm, self.cu());
        let root = op.root as i32;
        let reduce = op.reduce_op().unwrap_or(ReduceOp::Sum);
        refuse_unsupported(op, dt, reduce)?;
        if let Route::Native(block) = route(self.native, op, &bufs) {
            // (Nothing to move: NCCL would drop it too, after checking pointers a
            // zero-length view need not make valid. Every rank has the same counts.)
            if block == 0 {
                return Ok(());
            }
            return self.native_call(op, t, &bufs, block / es);
        }
        match (op.kind, bufs) {
            (OpKind::AllReduce, DevBufs::InPlace(b)) => self.with_op(op, until, dt, reduce, |o| {
                // SAFETY: `b` is a device buffer of `b.bytes` bytes on this comm's device.
                ok(
                    unsafe {
                        result::all_reduce(b.addr as *const c_void, b.addr as *mut c_void, b.bytes / es, t, o, comm, cu)
                    },
                    "ncclAllReduce",
                )
            }),
            (OpKind::Reduce, DevBufs::InPlace(b)) => self.with_op(op, until, dt, reduce, |o| {
                // SAFETY: as above; NCCL writes only on the root.
                ok(
                    unsafe {
                        result::reduce(
                            b.addr as *const c_void,
                            b.addr as *mut c_void,
                            b.bytes / es,
                            t,
                            o,
                            root,
                            comm,
                            cu,
                        )
                    },
                    "ncclReduce",
                )
            }),
            (OpKind::Broadcast, DevBufs::InPlace(b)) => ok(
                // SAFETY: as above.
                unsafe {
                    result::broadcast(b.addr as *const c_void, b.addr as *mut c_void, b.bytes / es, t, root, comm, cu)
                },
                "ncclBroadcast",
            ),
            (OpKind::AllGather, DevBufs::Gather { send, recv: Some(recv), counts })
                if counts.iter().all(|&c| c == send.bytes) =>
            {
                ok(
                    // SAFETY: the typed layer checked recv holds size × send bytes.
                    unsafe {
                        result::all_gather(
                            send.addr as *const c_void,
                            recv.addr as *mut c_void,
                            send.bytes / es,
                            t,
                            comm,
                            cu,
                        )
                    },
                    "ncclAllGather",
                )
            }
            (OpKind::AllGather, DevBufs::Gather { send, recv: Some(recv), counts }) => {
                // Uneven counts: every rank sends its block to all, receives each block.
                let mut p2p: Vec<DevP2p> =
                    (0..self.size).map(|peer| DevP2p { send: true, peer, dtype: dt, buf: send }).collect();
                p2p.extend(Self::blocks(false, dt, recv, &counts));
                self.grouped(&p2p)
            }
            (OpKind::Gather, DevBufs::Gather { send, recv, counts }) => {
                let mut p2p = vec![DevP2p { send: true, peer: root as usize, dtype: dt, buf: send }];
                if let Some(r) = recv {
                    p2p.extend(Self::blocks(false, dt, r, &counts));
                }
                self.grouped(&p2p)
            }
            (OpKind::Scatter, DevBufs::Scatter { send, recv, counts }) => {
                let mut p2p = vec![DevP2p { send: false, peer: root as usize, dtype: dt, buf: recv }];
                if let Some(s) = send {
                    p2p.extend(Self::blocks(true, dt, s, &counts));
                }
                self.grouped(&p2p)
            }
            (OpKind::ReduceScatter, DevBufs::ReduceScatter { send, recv, counts })
                if counts.iter().any(|&c| c != recv.bytes) =>
            {
                // Uneven blocks: one ncclReduce per block to its owner, in one group.
                self.with_op(op, until, dt, reduce, |o| {
                    NcclComm::group(|| {
                        let mut off = 0u64;
                        for (j, &c) in counts.iter().enumerate() {
                            let src = send.addr + off;
                            let dst = if j == self.rank { recv.addr } else { src };
                            off += c as u64;
                            ok(
                                // SAFETY: block j lies inside `send`; `recv` holds counts[rank]
                                // bytes.
                                unsafe {
                                    result::reduce(
                                        src as *const c_void,
                                        dst as *mut c_void,
                                        c / es,
                                        t,
                                        o,
                                        j as i32,
                                        comm,
                                        cu,
                                    )
                                },
                                "ncclReduce",
                            )?;
                        }
                        Ok(())
                    })
                })
            }
            (OpKind::ReduceScatter, DevBufs::ReduceScatter { send, recv, .. }) => {
                self.with_op(op, until, dt, reduce, |o| {
                    ok(
                        // SAFETY: the typed layer checked send holds size × recv bytes.
                        unsafe {
                            result::reduce_scatter(
                                send.addr as *const c_void,
                                recv.addr as *mut c_void,
                                recv.bytes / es,
                                t,
                                o,
                                comm,
                                cu,
                            )
                        },
                        "ncclReduceScatter",
                    )
                })
            }
            (OpKind::AllToAll, DevBufs::AllToAll { send, send_counts, recv, recv_counts }) => {
                let mut p2p: Vec<DevP2p> = Self::blocks(true, dt, send, &send_counts).collect();
                p2p.extend(Self::blocks(false, dt, recv, &recv_counts));
                self.grouped(&p2p)
            }
            (_, DevBufs::Group(p2p)) => self.grouped(&p2p),
            _ => Err(crate::backend::wrong_shape("nccl", op)),
        }
    }
}

impl NcclComm {
    /// `ncclGather`, `ncclScatter` or `ncclAlltoAll` of `count` elements per rank (see
    /// [`route`]). A buffer NCCL does not use on this rank (a non-root's receive buffer of
    /// a gather, send buffer of a scatter) is given as the rank's other buffer, a valid
    /// device pointer, as NCCL's argument checks (`NCCL_CHECK_MODE`) want one.
    fn native_call(&self, op: &Op, t: sys::ncclDataType_t, bufs: &DevBufs, count: usize) -> Result<()> {
        let (comm, cu, root) = (self.comm, self.cu(), op.root as i32);
        // Gather and scatter: one rooted call of the same signature.
        type Rooted = unsafe fn(
            *const c_void,
            *mut c_void,
            usize,
            sys::ncclDataType_t,
            i32,
            sys::ncclComm_t,
            sys::cudaStream_t,
        ) -> sys::ncclResult_t;
        let (call, name, send, recv): (Rooted, _, _, _) = match *bufs {
            DevBufs::Gather { send, recv, .. } => (sys::ncclGather, "ncclGather", send, recv.unwrap_or(send)),
            DevBufs::Scatter { send, recv, .. } => (sys::ncclScatter, "ncclScatter", send.unwrap_or(recv), recv),
            DevBufs::AllToAll { send, recv, .. } => {
                return ok(
                    // SAFETY: the typed layer resolved both on this comm's device and
                    // checked each holds `count` elements per rank.
                    unsafe {
                        sys::ncclAlltoAll(send.addr as *const c_void, recv.addr as *mut c_void, count, t, comm, cu)
                            .result()
                    },
                    "ncclAlltoAll",
                );
            }
            _ => return Err(crate::backend::wrong_shape("nccl", op)),
        };
        ok(
            // SAFETY: the typed layer resolved both buffers on this comm's device and
            // checked the rank's own block holds `count` elements and the root's whole
            // buffer size × as many; NCCL touches the whole buffer on the root only (a
            // non-root's stand-in for it, its other buffer, is neither read nor written).
            unsafe { call(send.addr as *const c_void, recv.addr as *mut c_void, count, t, root, comm, cu).result() },
            name,
        )
    }
}

impl Device for NcclComm {
    fn kind(&self) -> &'static str {
        "nccl"
    }

    fn enqueue(&self, op: &Op, dtype: DType, bufs: DevBufs) -> Result<Box<dyn Completion>> {
        // NCCL requires one caller at a time per communicator.
        let _g = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        self.stream.context().bind_to_thread().map_err(|e| fail("binding the CUDA context", e))?;
        let until = Instant::now() + self.timeout;
        if let Err(e) = self.launch(op, dtype, bufs, until) {
            // What NCCL took before the failure (a group closed after a refused call)
            // still goes on: wait for it, or abort.
            let _ = self.settle(op, until);
            return Err(e);
        }
        self.settle(op, until)?;
        let event =
            self.stream.record_event(None).map_err(|e| fail(&format!("recording an event after {}", op.name), e))?;
        Ok(Box::new(Event(event)))
    }

    fn abort(&self) {
        self.broken.store(true, Ordering::SeqCst);
    }

    fn broken(&self) -> bool {
        self.broken.load(Ordering::SeqCst)
    }

    fn split(&self, color: Option<u32>, key: usize) -> Result<Option<Box<dyn Device>>> {
        Ok(NcclComm::split(self, color, key)?.map(|c| Box::new(c) as Box<dyn Device>))
    }

    fn cuda_stream(&self, _op: &'static str) -> Result<&Arc<CudaStream>> {
        Ok(&self.stream)
    }
}

/// The reductions NCCL has no kernel for, refused before anything is enqueued: a
/// product of complex numbers (NCCL reduces them as pairs of floats), and any reduction
/// of 16-bit integers (NCCL has no such type; it moves them as bytes).
fn refuse_unsupported(op: &Op, dt: DType, reduce: ReduceOp) -> Result<()> {
    let reduces = matches!(op.kind, OpKind::AllReduce | OpKind::Reduce | OpKind::ReduceScatter);
    if dt.is_complex() && reduces && reduce == ReduceOp::Prod {
        return Err(Error::backend(
            "nccl",
            format!(
                "{} of {dt} at {}: NCCL sums complex numbers as pairs of floats but has no complex product; \
                 multiply on host buffers (shm, MPI)",
                op.name, op.site
            ),
        ));
    }
    if matches!(dt, DType::I16 | DType::U16) && reduces {
        return Err(Error::backend(
            "nccl",
            format!(
                "{} of {dt} at {}: NCCL has no 16-bit integer type, so it moves {dt} but cannot reduce it; \
                 widen to i32 on the device, or reduce on host buffers",
                op.name, op.site
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(addr: u64, bytes: usize) -> DevPtr {
        DevPtr { addr, bytes }
    }

    #[test]
    fn one_block_size_takes_nccls_own_call_and_every_rank_routes_alike() {
        let gather = Op::new(OpKind::Gather).dtype(DType::F32).root(1);
        let g = |counts: Vec<usize>, recv| DevBufs::Gather { send: at(0x1000, 8), recv, counts };
        // The root and the other ranks decide alike (from the counts, not the buffers).
        assert_eq!(route(true, &gather, &g(vec![8; 3], Some(at(0x2000, 24)))), Route::Native(8));
        assert_eq!(route(true, &gather, &g(vec![8; 3], None)), Route::Native(8));
        assert_eq!(route(false, &gather, &g(vec![8; 3], None)), Route::Grouped);
        // gather_v: one block size takes NCCL's call, several stay grouped.
        assert_eq!(route(true, &gather.varying(), &g(vec![8, 8, 8], None)), Route::Native(8));
        assert_eq!(route(true, &gather.varying(), &g(vec![8, 16, 8], None)), Route::Grouped);
        assert_eq!(route(true, &gather, &g(vec![0; 4], None)), Route::Native(0));

        let scatter = Op::new(OpKind::Scatter).dtype(DType::F64).root(0);
        let s = |send, counts: Vec<usize>| DevBufs::Scatter { send, recv: at(0x1000, 16), counts };
        assert_eq!(route(true, &scatter, &s(Some(at(0x3000, 32)), vec![16, 16])), Route::Native(16));
        assert_eq!(route(true, &scatter, &s(None, vec![16, 16])), Route::Native(16));
        assert_eq!(route(true, &scatter.varying(), &s(None, vec![16, 8])), Route::Grouped);

        // all_to_all: the even form only; an all_to_all_v's counts differ by rank, so even
        // one whose counts happen to be one size here stays grouped (another rank's may not).
        let a2a = Op::new(OpKind::AllToAll).dtype(DType::I32).count(8);
        let a = |sc: Vec<usize>, rc: Vec<usize>| DevBufs::AllToAll {
            send: at(0x1000, sc.iter().sum()),
            send_counts: sc,
            recv: at(0x2000, rc.iter().sum()),
            recv_counts: rc,
        };
        assert_eq!(route(true, &a2a, &a(vec![4; 2], vec![4; 2])), Route::Native(4));
        assert_eq!(route(false, &a2a, &a(vec![4; 2], vec![4; 2])), Route::Grouped);
        assert_eq!(route(true, &a2a.varying(), &a(vec![4; 2], vec![4; 2])), Route::Grouped);

        // Ops NCCL has in every version are not routed here.
        let ag = Op::new(OpKind::AllGather).dtype(DType::F32);
        assert_eq!(route(true, &ag, &g(vec![8; 3], Some(at(0x2000, 24)))), Route::Grouped);
        let bc = Op::new(OpKind::Broadcast).dtype(DType::F32);
        assert_eq!(route(true, &bc, &DevBufs::InPlace(at(0x1000, 8))), Route::Grouped);
    }
}
