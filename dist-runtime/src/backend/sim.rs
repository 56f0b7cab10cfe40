//! The simulated device (feature `sim-device`, `DIST_SIM_DEVICE=1`): a test double of a
//! GPU's communicator, so the device path of the typed layer (argument checks, the `Op`
//! compared across ranks, stream order, completions, deadlines, abort) runs and is tested
//! on machines without GPUs.
//!
//! Its "stream" is one worker thread that runs the ops in call order on a host
//! communicator of its own (a child of the host backend, as an NCCL communicator is a
//! separate communicator), over copies of the buffers taken when the op is enqueued. Its
//! "event" is the job's result; results are copied back by `finish`, on the waiting
//! thread, while the request still borrows the buffers, so an op that timed out (and was
//! abandoned) never writes memory the user has got back. Device p2p has no tags (as in
//! NCCL): messages between two ranks match in order.

use crate::backend::{Backend, Bufs, Completion, DevBufs, DevPtr, Device, Layout, Shape};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::op::{Op, OpKind};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};

type Job = Box<dyn FnOnce() + Send>;

pub(crate) struct SimDevice {
    host: Arc<dyn Backend>,
    stream: Mutex<mpsc::Sender<Job>>,
    broken: AtomicBool,
    children: AtomicU64,
}

impl SimDevice {
    /// A simulated device over `host`, a communicator of its own.
    pub(crate) fn new(host: Box<dyn Backend>) -> Result<SimDevice> {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("dist-sim-stream".into())
            .spawn(move || {
                for job in rx {
                    job();
                }
            })
            .map_err(|e| Error::Backend {
                backend: "sim",
                msg: "cannot start the simulated stream".into(),
                source: Some(Box::new(e)),
            })?;
        Ok(SimDevice {
            host: Arc::from(host),
            stream: Mutex::new(tx),
            broken: AtomicBool::new(false),
            children: AtomicU64::new(0),
        })
    }

    fn submit(&self, job: Job) -> Result<()> {
        self.stream
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .send(job)
            .map_err(|_| Error::backend("sim", "the simulated stream has stopped"))
    }
}

impl Drop for SimDevice {
    fn drop(&mut self) {
        // In stream order, after everything enqueued; nobody waits for it (a stream stuck
        // in an abandoned op must not hold the rank).
        let host = self.host.clone();
        let _ = self.submit(Box::new(move || host.finish()));
    }
}

/// A copy of one device buffer, 16-byte aligned (the reduction kernels view it as
/// elements), and where to copy it back when the op writes it.
struct Copy {
    words: Vec<u128>,
    len: usize,
    back: Option<usize>,
}

impl Copy {
    fn of(p: DevPtr, write: bool) -> Copy {
        let mut words = vec![0u128; p.bytes.div_ceil(16)];
        // SAFETY: the typed layer resolved `p` from a live buffer of `p.bytes` bytes,
        // borrowed for the whole call.
        let src = unsafe { std::slice::from_raw_parts(p.addr as *const u8, p.bytes) };
        bytemuck::cast_slice_mut::<u128, u8>(&mut words)[..p.bytes].copy_from_slice(src);
        Copy { words, len: p.bytes, back: write.then_some(p.addr as usize) }
    }
    fn bytes(&mut self) -> &mut [u8] {
        &mut bytemuck::cast_slice_mut::<u128, u8>(&mut self.words)[..self.len]
    }
}

struct State {
    done: AtomicBool,
    result: Mutex<Option<Result<Vec<Copy>>>>,
}

struct SimCompletion(Arc<State>);

impl Completion for SimCompletion {
    fn done(&self) -> Result<bool> {
        if !self.0.done.load(Ordering::Acquire) {
            return Ok(false);
        }
        // The op's own error (a timeout or a failed peer, as the host backend reports it).
        let mut r = self.0.result.lock().unwrap_or_else(|p| p.into_inner());
        match r.take() {
            Some(Err(e)) => Err(e),
            other => {
                *r = other;
                Ok(true)
            }
        }
    }
    fn finish(&mut self) -> Result<()> {
        let r = self.0.result.lock().unwrap_or_else(|p| p.into_inner()).take();
        for mut c in r.unwrap_or_else(|| Ok(Vec::new()))? {
            if let Some(addr) = c.back {
                let len = c.len;
                // SAFETY: `finish` runs while the op's request (or blocking call) still
                // borrows the buffer this address was resolved from.
                unsafe { std::slice::from_raw_parts_mut(addr as *mut u8, len) }.copy_from_slice(c.bytes());
            }
        }
        Ok(())
    }
}

/// Runs one op on the host communicator over the copies (a collective's: the one it
/// reads, then the one it writes, where its layout takes them).
fn run(host: &dyn Backend, op: &Op, layout: &Layout, c: &mut [Copy]) -> Result<()> {
    match layout {
        Shape::Group(ops) => {
            let site = op.site;
            let mut posted = Vec::new();
            for (i, &(send, peer, _)) in ops.iter().enumerate() {
                if !send {
                    posted.push((i, host.post_recv(site, peer, 0)?));
                }
            }
            let mut sends = Vec::new();
            for (i, &(send, peer, dt)) in ops.iter().enumerate() {
                if send {
                    sends.push(host.post_send(site, peer, 0, dt, c[i].bytes())?);
                }
            }
            for (i, id) in posted {
                host.wait_recv(site, id, ops[i].2, c[i].bytes())?;
            }
            sends.into_iter().try_for_each(|id| host.wait_send(site, id))
        }
        _ => {
            let (reads, writes) = c.split_at_mut(usize::from(layout.reads()));
            let send = reads.first_mut().map(|s| &*s.bytes());
            host.run(op, layout.host(send, writes.first_mut().map(|r| r.bytes()))?)
        }
    }
}

/// The layout of a device op and copies of its buffers, in [`run`]'s order.
fn copies(bufs: DevBufs) -> (Layout, Vec<Copy>) {
    let (layout, send, recv, group) = bufs.into_parts();
    let mut c: Vec<Copy> = send.map(|s| Copy::of(s, false)).into_iter().collect();
    c.extend(recv.map(|r| Copy::of(r, true)));
    if let Shape::Group(ops) = &layout {
        c.extend(ops.iter().zip(group).map(|(&(send, _, _), b)| Copy::of(b, !send)));
    }
    (layout, c)
}

impl Device for SimDevice {
    fn kind(&self) -> &'static str {
        "sim"
    }

    fn enqueue(&self, op: &Op, _dtype: DType, bufs: DevBufs) -> Result<Box<dyn Completion>> {
        let (layout, mut c) = copies(bufs);
        let state = Arc::new(State { done: AtomicBool::new(false), result: Mutex::new(None) });
        let (host, op, st) = (self.host.clone(), *op, state.clone());
        self.submit(Box::new(move || {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&*host, &op, &layout, &mut c)))
                .unwrap_or_else(|_| {
                    Err(Error::backend("sim", format!("{} panicked on the simulated stream", op.name)))
                });
            *st.result.lock().unwrap_or_else(|p| p.into_inner()) = Some(r.map(|()| c));
            st.done.store(true, Ordering::Release);
        }))?;
        Ok(Box::new(SimCompletion(state)))
    }

    fn abort(&self) {
        self.broken.store(true, Ordering::SeqCst);
    }

    fn broken(&self) -> bool {
        self.broken.load(Ordering::SeqCst)
    }

    fn split(&self, color: Option<u32>, key: usize) -> Result<Option<Box<dyn Device>>> {
        // In stream order, as ncclCommSplit is ordered with the communicator's ops.
        let (host, n) = (self.host.clone(), self.host.size());
        let nth = self.children.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = mpsc::channel();
        self.submit(Box::new(move || {
            let r = (|| {
                let mine = [color.map_or(u64::MAX, u64::from), key as u64];
                let mut all = vec![0u64; 2 * n];
                let op = Op::new(OpKind::AllGather).dtype(DType::U64).count(2);
                host.run(
                    &op,
                    Bufs::Gather {
                        send: bytemuck::cast_slice(&mine),
                        recv: Some(bytemuck::cast_slice_mut(&mut all)),
                        counts: &vec![16; n],
                    },
                )?;
                // One child per color, built by every rank of the parent in the same
                // order (creation is collective over the parent); ranks keep their own.
                let mut colors: Vec<u64> = (0..n).map(|r| all[2 * r]).filter(|&c| c != u64::MAX).collect();
                colors.sort_unstable();
                colors.dedup();
                let mut out = None;
                for c in colors {
                    let mut m: Vec<usize> = (0..n).filter(|&r| all[2 * r] == c).collect();
                    m.sort_by_key(|&r| (all[2 * r + 1], r));
                    let cx = Op::new(OpKind::CommCreate).extra(crate::op::hash_usizes(&m));
                    let child = host.create_child(&cx, &format!("sim#{nth}-{c}"), &format!("sim-device#{nth}"), &m)?;
                    if c == mine[0] {
                        out = child;
                    }
                }
                out.map(|b| SimDevice::new(b).map(|d| Box::new(d) as Box<dyn Device>)).transpose()
            })();
            let _ = tx.send(r);
        }))?;
        rx.recv().map_err(|_| Error::backend("sim", "the simulated stream has stopped"))?
    }

    #[cfg(feature = "nccl")]
    fn cuda_stream(&self, op: &'static str) -> Result<&Arc<cudarc::driver::CudaStream>> {
        Err(Error::invalid(op, "a CUDA buffer on a communicator whose device side is the simulated device"))
    }
}
